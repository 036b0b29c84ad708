package web_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/internal/browsertest"
	"github.com/uncaged/uwf/thread"
)

// The browser tests drive a real headless Chromium (see
// internal/browsertest): they skip without one, except under CI=true.

func TestMain(m *testing.M) { os.Exit(browsertest.Main(m)) }

var (
	tab        = browsertest.Tab
	do         = browsertest.Do
	css        = browsertest.CSS
	screenshot = browsertest.Screenshot
	waitFor    = browsertest.WaitFor
	waitPath   = browsertest.WaitPath
	untouched  = browsertest.Untouched
	hostileDOM = browsertest.HostileDOM
)

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return browsertest.Eval[T](t, ctx, expr)
}

func TestBrowserThreadList(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	srv := e.server("tok")
	do(t, ctx, "open the thread list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(css(`table.threads`)))
	screenshot(t, ctx, "list")
	if rows := eval[int](t, ctx, `document.querySelectorAll('table.threads tbody tr').length`); rows != 2 {
		t.Errorf("the list shows %d threads, want 2", rows)
	}
	text := eval[string](t, ctx, `document.querySelector('table.threads').innerText`)
	for _, want := range []string{e.synth, e.evil, "review-loop", "done", "active"} {
		if !strings.Contains(text, want) {
			t.Errorf("the list lacks %q:\n%s", want, text)
		}
	}
	untouched(t, ctx, srv.URL)
	// The status filter applies as soon as it changes.
	do(t, ctx, "choose the status done", chromedp.SetValue(css(`form.filters select[name=status]`), "done"))
	// The change event submits the form: the evaluation may end in the
	// navigation it starts, which WaitNav then follows.
	_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('form.filters select[name=status]').dispatchEvent(new Event('change', {bubbles: true}))`))
	browsertest.WaitNav(t, ctx, `location.search.startsWith('?status=done')`, 10*time.Second)
	do(t, ctx, "read the filtered list", chromedp.WaitVisible(css(`table.threads`)))
	if rows := eval[int](t, ctx, `document.querySelectorAll('table.threads tbody tr').length`); rows != 1 {
		t.Errorf("the list filtered by status done shows %d threads, want 1", rows)
	}
	do(t, ctx, "back to every thread", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(css(`table.threads`)))
	do(t, ctx, "wait for the events stream", waitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second))
	// A thread started meanwhile appears without a reload.
	id, _, err := e.engine().Start(e.ctx, e.wf, "a thread started later", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "see the new thread in the list",
		waitFor(fmt.Sprintf(`!!document.querySelector('tr[data-thread="%s"]')`, id), 30*time.Second))
	screenshot(t, ctx, "list-live")
}

func TestBrowserThreadLive(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	srv := e.server("tok")
	info, err := e.eng.Show(e.ctx, e.synth)
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the synth thread", chromedp.Navigate(srv.URL+"/threads/"+e.synth), chromedp.WaitVisible(css(`#timeline`)))
	screenshot(t, ctx, "synth")
	if n := eval[int](t, ctx, `document.querySelectorAll('#timeline > li.entry').length`); n != info.Depth+1 {
		t.Errorf("the timeline shows %d entries, want %d (start + %d)", n, info.Depth+1, info.Depth)
	}
	text := eval[string](t, ctx, `document.getElementById('timeline').innerText`)
	for _, want := range []string{"planner", "developer", "reviewer", "EDGE PROMPT", "approved", "done"} {
		if !strings.Contains(text, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if roles := eval[string](t, ctx, `Array.from(document.querySelectorAll('svg.graph g.node text')).map(t => t.textContent).join(',')`); roles == "" {
		t.Error("the thread page has no routing graph")
	}

	// Another handle on the store starts and steps a thread; its page
	// shows each new step without a reload.
	other := e.engine()
	id, _, err := other.Start(e.ctx, e.wf, "live one", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the new thread",
		chromedp.Navigate(srv.URL+"/threads/"+id),
		chromedp.WaitVisible(css(`#timeline li[data-depth="0"]`)),
		waitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second))
	for depth := 1; depth <= 3; depth++ {
		if _, err := other.Step(e.ctx, id, &thread.RunOptions{Agent: "synth"}); err != nil {
			t.Fatal(err)
		}
		do(t, ctx, fmt.Sprintf("see step %d appear", depth),
			waitFor(fmt.Sprintf(`!!document.querySelector('#timeline li[data-depth="%d"]')`, depth), 30*time.Second))
	}
	if !eval[bool](t, ctx, `performance.getEntriesByType('navigation').length === 1 && document.querySelectorAll('#timeline li.new').length === 3`) {
		t.Error("the new steps did not arrive as live insertions into the open page")
	}
	screenshot(t, ctx, "live")
}

// TestBrowserDarkMode: with prefers-color-scheme dark the pages turn
// dark, the routing graph too.
func TestBrowserDarkMode(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	srv := e.server("tok")
	do(t, ctx, "open a thread in dark mode",
		browsertest.ColorScheme("dark"),
		chromedp.Navigate(srv.URL+"/threads/"+e.synth),
		chromedp.WaitVisible(css(`svg.graph`)))
	screenshot(t, ctx, "dark")
	bg := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`)
	node := eval[string](t, ctx, `getComputedStyle(document.querySelector('svg.graph g.node rect')).fill`)
	for what, c := range map[string]string{"the page": bg, "a graph node": node} {
		var r, g, b int
		if _, err := fmt.Sscanf(c, "rgb(%d, %d, %d)", &r, &g, &b); err != nil || r+g+b > 3*80 {
			t.Errorf("%s is %s in dark mode, want a dark colour", what, c)
		}
	}
	do(t, ctx, "back to light", browsertest.ColorScheme("light"))
}

func TestBrowserWorkflowGraph(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	srv := e.server("tok")
	do(t, ctx, "open the workflow page", chromedp.Navigate(srv.URL+"/workflows/review-loop"), chromedp.WaitVisible(css(`svg.graph`)))
	screenshot(t, ctx, "workflow")
	labels := eval[string](t, ctx, `Array.from(document.querySelectorAll('svg.graph g.node text')).map(t => t.textContent).sort().join(',')`)
	if want := "$END,$START,developer,planner,reviewer"; labels != want {
		t.Errorf("the SVG's nodes are %q, want %q", labels, want)
	}
	edges := eval[string](t, ctx, `Array.from(document.querySelectorAll('svg.graph g.edge text')).map(t => t.textContent).sort().join(',')`)
	if want := "approved,done,done,new,rejected"; edges != want {
		t.Errorf("the SVG's edge labels are %q, want %q", edges, want)
	}
}

func TestBrowserStartWithToken(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	srv := e.server("s3cret-token")
	// Without the token the API refuses, and the page says so.
	do(t, ctx, "start without a token",
		chromedp.Navigate(srv.URL+"/workflows/review-loop"),
		chromedp.WaitVisible(css(`form.start textarea`)),
		chromedp.SendKeys(css(`form.start textarea`), "no token"),
		chromedp.Click(css(`form.start button`)),
		waitFor(`!document.getElementById('flash').hidden`, 10*time.Second))
	if msg := eval[string](t, ctx, `document.getElementById('flash').textContent`); !strings.Contains(msg, "401") || !strings.Contains(msg, "token") {
		t.Errorf("the page says %q after a start without a token, want a 401 naming the token", msg)
	}
	do(t, ctx, "open with the token in the fragment",
		chromedp.Navigate(srv.URL+"/workflows/review-loop#token=s3cret-token"),
		chromedp.WaitVisible(css(`form.start textarea`)))
	if stored := eval[string](t, ctx, `sessionStorage.getItem('uwf-token')`); stored != "s3cret-token" {
		t.Errorf("sessionStorage holds %q, want the token", stored)
	}
	if href := eval[string](t, ctx, `location.href`); strings.Contains(href, "token") {
		t.Errorf("the token stays in the address bar: %s", href)
	}
	do(t, ctx, "start a thread",
		chromedp.SendKeys(css(`form.start textarea`), "Started from the page"),
		chromedp.Click(css(`form.start button`)))
	waitPath(t, ctx, "/threads/", 10*time.Second)
	do(t, ctx, "open the started thread", chromedp.WaitVisible(css(`#timeline li[data-depth="0"]`)))
	do(t, ctx, "see it run", waitFor(`!!document.querySelector('#timeline li[data-depth="2"]')`, 30*time.Second))
	screenshot(t, ctx, "started")
	text := eval[string](t, ctx, `document.getElementById('timeline').innerText`)
	if !strings.Contains(text, "Started from the page") || !strings.Contains(text, "planner") {
		t.Errorf("the started thread's page lacks its prompt or first role:\n%s", text)
	}
}

// TestBrowserHostile opens every page that shows hostile store text (an
// output, its body, a prompt, an edge prompt, stderr, a workflow's texts)
// and a hostile step arriving over the events stream: all of it shows as
// text, and none of it runs.
func TestBrowserHostile(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	srv := e.server("tok")
	page := srv.URL + "/threads/" + e.evil
	do(t, ctx, "open the hostile thread",
		chromedp.Navigate(page),
		chromedp.WaitVisible(css(`#timeline li[data-depth="1"]`)),
		waitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second),
		waitFor(`(document.querySelectorAll('details.lazy').forEach(d => d.open = true), true)`, time.Second),
		waitFor(`document.querySelectorAll('details.lazy .detail').length === document.querySelectorAll('details.lazy').length`, 10*time.Second))
	screenshot(t, ctx, "thread")
	untouched(t, ctx, page)
	text := eval[string](t, ctx, `document.body.innerText`)
	for _, want := range []string{"prompt: <script>window.pwned = 1</script>", "edge: <script>", "stderr: <script>", "assembled: <script>", "field: <script>", `<img src=x onerror="window.pwned=20">`} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
	if bad := eval[int](t, ctx, hostileDOM); bad != 0 {
		t.Errorf("%d hostile elements made it into the DOM", bad)
	}

	// A hostile step arrives over the events stream.
	info, err := e.eng.Show(e.ctx, e.evil)
	if err != nil {
		t.Fatal(err)
	}
	e.addHostileStep(e.evil, info.Head, "second")
	do(t, ctx, "see the hostile step arrive",
		waitFor(`!!document.querySelector('#timeline li[data-depth="2"]')`, 30*time.Second),
		waitFor(`(document.querySelectorAll('#timeline li[data-depth="2"] details.lazy').forEach(d => d.open = true), true)`, time.Second),
		waitFor(`!!document.querySelector('#timeline li[data-depth="2"] details.lazy .detail')`, 10*time.Second))
	screenshot(t, ctx, "live")
	untouched(t, ctx, page)
	if bad := eval[int](t, ctx, hostileDOM); bad != 0 {
		t.Errorf("%d hostile elements made it into the DOM after the live step", bad)
	}
	if !strings.Contains(eval[string](t, ctx, `document.querySelector('#timeline li[data-depth="2"]').innerText`), "edge: <script>") {
		t.Error("the live step does not show its edge prompt as text")
	}
	// Clicking every link the outputs rendered does nothing either: the
	// sanitiser dropped their javascript: targets.
	eval[int](t, ctx, `(() => { const as = document.querySelectorAll('.markdown a'); as.forEach(a => a.click()); return as.length; })()`)
	untouched(t, ctx, page)

	for _, p := range []string{"/", "/workflows/evil", "/workflows", "/threads/" + e.evil + "/forks"} {
		do(t, ctx, "open "+p, chromedp.Navigate(srv.URL+p), chromedp.WaitReady(css(`main`)))
		untouched(t, ctx, srv.URL+p)
		if bad := eval[int](t, ctx, hostileDOM); bad != 0 {
			t.Errorf("%s: %d hostile elements made it into the DOM", p, bad)
		}
	}
	screenshot(t, ctx, "workflow")
}

// TestBrowserBranches: a composing thread's join draws its branches side
// by side (one column each, beside one another); a branch's link opens
// its thread, whose page links back to the parent.
func TestBrowserBranches(t *testing.T) {
	ctx := tab(t)
	e := newEnv(t)
	data, err := examples.FS.ReadFile("parallel-review.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wf := e.putWorkflow("parallel-review.yaml", data)
	id, _, err := e.eng.Run(e.ctx, wf, "Add a --json flag", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	srv := e.server("tok")
	do(t, ctx, "open the composing thread",
		chromedp.Navigate(srv.URL+"/threads/"+id),
		chromedp.WaitVisible(css(`li.kind-join .branches .branch`)))
	// The columns of one join sit on one row, side by side.
	sideBySide := eval[bool](t, ctx, `(() => {
		const bs = [...document.querySelector('li.kind-join .branches').children];
		return bs.length >= 2 && bs[0].getBoundingClientRect().top === bs[1].getBoundingClientRect().top &&
			bs[0].getBoundingClientRect().right <= bs[1].getBoundingClientRect().left;
	})()`)
	if !sideBySide {
		t.Error("the join's branches are not drawn side by side")
	}
	screenshot(t, ctx, "branches")
	branch := eval[string](t, ctx, `document.querySelector('li.kind-join a.branch-link').getAttribute('href')`)
	do(t, ctx, "open a branch thread from its column",
		chromedp.Click(css(`li.kind-join a.branch-link`)))
	waitPath(t, ctx, branch, 10*time.Second)
	do(t, ctx, "see the link back to the parent", chromedp.WaitVisible(css(`a.parent-link`)))
	if href := eval[string](t, ctx, `document.querySelector('a.parent-link').getAttribute('href')`); href != "/threads/"+id {
		t.Errorf("the branch page links back to %q, want /threads/%s", href, id)
	}
	// Clicked from the page's script: a live update may have redrawn the
	// link since it was found, and a node id found before would be stale.
	eval[bool](t, ctx, `(document.querySelector('a.parent-link').click(), true)`)
	waitPath(t, ctx, "/threads/"+id, 10*time.Second)
}
