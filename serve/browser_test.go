package serve_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/browsertest"
	"github.com/uncaged/uwf/thread"
)

// The viewer against the real server, in a real headless Chromium (see
// internal/browsertest; package serve/web has the page-by-page tests).

func TestMain(m *testing.M) { os.Exit(browsertest.Main(m)) }

// watchableOrSkip skips a test whose store's refs cannot be watched yet:
// the viewer's live updates come from the events stream.
func (e *env) watchableOrSkip() {
	e.t.Helper()
	if _, err := e.repo.WatchHead(e.t.Context()); err != nil {
		e.t.Skipf("this backend's refs cannot be watched yet: %v", err)
	}
}

// TestBrowserStartAndStep starts a thread from the workflow page with the
// token the page took from its URL fragment, sees it run through the real
// API and events stream, then sees steps that another store handle makes
// appear without a reload.
func TestBrowserStartAndStep(t *testing.T) {
	ctx := browsertest.Tab(t)
	e := newEnv(t, "memory")
	e.watchableOrSkip()
	e.reviewLoop()
	browsertest.Do(t, ctx, "open the workflow page with the token",
		chromedp.Navigate(e.base+"/workflows/review-loop#token="+testToken),
		chromedp.WaitVisible(browsertest.CSS(`form.start textarea`)))
	if href := browsertest.Eval[string](t, ctx, `location.href`); strings.Contains(href, testToken) {
		t.Errorf("the token stays in the address bar: %s", href)
	}
	browsertest.Do(t, ctx, "start a thread from the page",
		chromedp.SendKeys(browsertest.CSS(`form.start textarea`), "Started in the browser"),
		chromedp.SendKeys(browsertest.CSS(`form.start input[name=agent]`), "synth"),
		chromedp.Click(browsertest.CSS(`form.start button`)))
	browsertest.WaitPath(t, ctx, "/threads/", 10*time.Second)
	browsertest.Do(t, ctx, "see it run to its end",
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="0"]`)),
		browsertest.WaitFor(`!!document.querySelector('#timeline li.mark-done')`, 30*time.Second))
	browsertest.Screenshot(t, ctx, "started")
	id := browsertest.Eval[string](t, ctx, `document.getElementById('thread').dataset.thread`)
	info, err := e.eng.Show(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('#timeline > li.entry').length`); n != info.Depth+1 {
		t.Errorf("the page shows %d entries of a thread of depth %d", n, info.Depth)
	}

	// Fork it at depth 1 from the page, then step the fork from another
	// handle on the store: the fork's page shows each step as it lands.
	browsertest.Do(t, ctx, "fork at depth 1",
		chromedp.Click(browsertest.CSS(`#timeline li[data-depth="1"] .fork-here`)))
	browsertest.WaitNav(t, ctx, `document.getElementById('thread') && document.getElementById('thread').dataset.thread !== '`+id+`'`, 10*time.Second)
	browsertest.Do(t, ctx, "open the fork",
		browsertest.WaitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second))
	fork := browsertest.Eval[string](t, ctx, `document.getElementById('thread').dataset.thread`)
	other := thread.New(e.repo, nil)
	for depth := 2; depth <= 3; depth++ {
		if _, err := other.Step(t.Context(), fork, &thread.RunOptions{Agent: "synth", Seed: 7}); err != nil {
			t.Fatal(err)
		}
		browsertest.Do(t, ctx, fmt.Sprintf("see step %d of the fork appear", depth),
			browsertest.WaitFor(fmt.Sprintf(`!!document.querySelector('#timeline li.new[data-depth="%d"]')`, depth), 30*time.Second))
	}
	browsertest.Screenshot(t, ctx, "fork-live")
	browsertest.Do(t, ctx, "open the diff", chromedp.Navigate(e.base+"/threads/"+fork+"/diff"), chromedp.WaitVisible(browsertest.CSS(`table.diff`)))
	if rows := browsertest.Eval[int](t, ctx, `document.querySelectorAll('table.diff tbody tr').length`); rows < 2 {
		t.Errorf("the diff of the fork against its origin shows %d rows", rows)
	}
	browsertest.Screenshot(t, ctx, "diff")
	// Step the fork from its page with the token, then kill it.
	browsertest.Do(t, ctx, "step the fork from its page",
		chromedp.Navigate(e.base+"/threads/"+fork),
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="3"]`)),
		browsertest.WaitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second),
		chromedp.SendKeys(browsertest.CSS(`form[data-api$="/step"] input[name=agent]`), "synth"),
		chromedp.Click(browsertest.CSS(`form[data-api$="/step"] button`)),
		browsertest.WaitFor(`!!document.querySelector('#timeline li.new[data-depth="4"]')`, 30*time.Second))
	// Suspend it from the page, then resume it.
	browsertest.Do(t, ctx, "suspend the fork from its page",
		chromedp.SendKeys(browsertest.CSS(`form[data-api$="/suspend"] input[name=reason]`), "a pause"),
		chromedp.Click(browsertest.CSS(`form[data-api$="/suspend"] button`)),
		browsertest.WaitFor(`!!document.querySelector('#timeline li.mark-suspended')`, 30*time.Second),
		browsertest.WaitFor(`document.querySelector('#thread-head .pill').textContent === 'suspended'`, 10*time.Second),
		browsertest.WaitFor(`document.querySelector('form[data-api$="/step"] button').disabled`, 10*time.Second),
		chromedp.Click(browsertest.CSS(`form[data-api$="/resume"] button`)),
		browsertest.WaitFor(`document.querySelector('#thread-head .pill').textContent === 'active'`, 30*time.Second))
	browsertest.Screenshot(t, ctx, "suspended-and-resumed")
	browsertest.Eval[bool](t, ctx, `(window.confirm = () => true, true)`)
	browsertest.Do(t, ctx, "kill the fork from its page",
		chromedp.SendKeys(browsertest.CSS(`form[data-api$="/kill"] input[name=reason]`), "seen enough"),
		chromedp.Click(browsertest.CSS(`form[data-api$="/kill"] button`)),
		browsertest.WaitFor(`!!document.querySelector('#timeline li.mark-killed')`, 30*time.Second),
		browsertest.WaitFor(`document.querySelector('#thread-head .pill').textContent === 'killed'`, 10*time.Second))
	browsertest.Screenshot(t, ctx, "killed")
	if info, err := e.eng.Show(t.Context(), fork); err != nil || info.Status != thread.StatusKilled {
		t.Errorf("after Kill on the page the fork is %v (%v), want killed", info, err)
	}
	browsertest.Do(t, ctx, "open the fork tree", chromedp.Navigate(e.base+"/threads/"+fork+"/forks"), chromedp.WaitVisible(browsertest.CSS(`ul.tree`)))
	if text := browsertest.Eval[string](t, ctx, `document.querySelector('ul.tree').innerText`); !strings.Contains(text, id) || !strings.Contains(text, fork) {
		t.Errorf("the fork tree lacks the origin or the fork:\n%s", text)
	}
}

// TestBrowserForkWithEdit forks a thread at its planner step with the
// output edited on the page: the fork's step at that depth holds the
// edited output, written by the edit agent.
func TestBrowserForkWithEdit(t *testing.T) {
	ctx := browsertest.Tab(t)
	e := newEnv(t, "memory")
	id := e.run(e.reviewLoop(), "to be edited", 0)
	browsertest.Do(t, ctx, "open the thread with the token",
		chromedp.Navigate(e.base+"/threads/"+id+"#token="+testToken),
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="1"]`)),
		chromedp.Click(browsertest.CSS(`#timeline li[data-depth="1"] details.edit-fork summary`)),
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="1"] form.fork-edit textarea`)),
		browsertest.WaitFor(`(document.querySelector('#timeline li[data-depth="1"] form.fork-edit textarea').value = JSON.stringify({status: "done", steps: ["an edited plan"]}), true)`, time.Second),
		chromedp.Click(browsertest.CSS(`#timeline li[data-depth="1"] form.fork-edit button`)))
	browsertest.WaitNav(t, ctx, `document.getElementById('thread') && document.getElementById('thread').dataset.thread !== '`+id+`'`, 10*time.Second)
	browsertest.Do(t, ctx, "open the fork", chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="1"]`)))
	browsertest.Screenshot(t, ctx, "edited")
	text := browsertest.Eval[string](t, ctx, `document.querySelector('#timeline li[data-depth="1"]').innerText`)
	if !strings.Contains(text, "an edited plan") || !strings.Contains(text, "edit") {
		t.Errorf("the fork's step 1 does not show the edited output by the edit agent:\n%s", text)
	}
	// An output the role's schema refuses is refused, and the page says so.
	browsertest.Do(t, ctx, "fork with an invalid output",
		chromedp.Navigate(e.base+"/threads/"+id),
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="1"]`)),
		chromedp.Click(browsertest.CSS(`#timeline li[data-depth="1"] details.edit-fork summary`)),
		browsertest.WaitFor(`(document.querySelector('#timeline li[data-depth="1"] form.fork-edit textarea').value = '{"status": "done"}', true)`, time.Second),
		chromedp.Click(browsertest.CSS(`#timeline li[data-depth="1"] form.fork-edit button`)),
		browsertest.WaitFor(`!document.getElementById('flash').hidden`, 10*time.Second))
	if msg := browsertest.Eval[string](t, ctx, `document.getElementById('flash').textContent`); !strings.Contains(msg, "400") {
		t.Errorf("an output without the schema's required field: the page says %q, want a 400", msg)
	}
}

// TestBrowserStepProcess steps a thread with `uwf thread step` in another
// process while its page is open: the new step appears without a reload.
func TestBrowserStepProcess(t *testing.T) {
	ctx := browsertest.Tab(t)
	e := newEnv(t, "disk")
	e.watchableOrSkip()
	wf := e.reviewLoop()
	id, _, err := e.eng.Start(t.Context(), wf, "stepped by another process", e.root)
	if err != nil {
		t.Fatal(err)
	}
	uwf := buildUWF(t)
	browsertest.Do(t, ctx, "open the thread",
		chromedp.Navigate(e.base+"/threads/"+id),
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="0"]`)),
		browsertest.WaitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second))
	cmd := exec.CommandContext(t.Context(), uwf, "thread", "step", "--agent", "synth", "--store", e.url, "--home", t.TempDir(), id)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uwf thread step: %v\n%s", err, out)
	}
	browsertest.Do(t, ctx, "see the step appear",
		browsertest.WaitFor(`!!document.querySelector('#timeline li.new[data-depth="1"]')`, 30*time.Second))
	browsertest.Screenshot(t, ctx, "stepped")
}

// buildUWF builds the uwf command into a temporary folder.
func buildUWF(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build uwf:", err)
	}
	bin := filepath.Join(t.TempDir(), "uwf")
	cmd := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, "../cmd/uwf")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build uwf: %v\n%s", err, out)
	}
	return bin
}

// TestBrowserHostileEvents: a step whose every text is hostile, arriving
// over the real events stream while the page is open, shows as text and
// runs nothing.
func TestBrowserHostileEvents(t *testing.T) {
	ctx := browsertest.Tab(t)
	e := newEnv(t, "memory")
	e.watchableOrSkip()
	wf := e.reviewLoop()
	id, head, err := e.eng.Start(t.Context(), wf, `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`, e.root)
	if err != nil {
		t.Fatal(err)
	}
	page := e.base + "/threads/" + id
	browsertest.Do(t, ctx, "open the thread",
		chromedp.Navigate(page),
		chromedp.WaitVisible(browsertest.CSS(`#timeline li[data-depth="0"]`)),
		browsertest.WaitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second))
	e.hostileStep(id, head)
	browsertest.Do(t, ctx, "see the hostile step arrive",
		browsertest.WaitFor(`!!document.querySelector('#timeline li.new[data-depth="1"]')`, 30*time.Second),
		browsertest.WaitFor(`(document.querySelectorAll('details.lazy').forEach(d => d.open = true), true)`, time.Second),
		browsertest.WaitFor(`!!document.querySelector('#timeline li[data-depth="1"] details.lazy .detail')`, 10*time.Second))
	browsertest.Eval[int](t, ctx, `(() => { const as = document.querySelectorAll('.markdown a'); as.forEach(a => a.click()); return as.length; })()`)
	browsertest.Screenshot(t, ctx, "hostile")
	browsertest.Untouched(t, ctx, page)
	text := browsertest.Eval[string](t, ctx, `document.getElementById('timeline').innerText`)
	for _, want := range []string{"edge <script>window.pwned=3</script>", "stderr <img src=x onerror=\"window.pwned=4\">", "<script>window.pwned=1</script>"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
}

// hostileStep commits a planner step after head whose output, body, edge
// prompt, prompt and stderr are hostile.
func (e *env) hostileStep(id string, head cas.Hash) {
	e.t.Helper()
	ctx := e.t.Context()
	info, err := e.eng.Show(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := e.eng.Registry().LoadStored(ctx, info.Workflow)
	if err != nil {
		e.t.Fatal(err)
	}
	put := func(typ cas.Hash, v any) cas.Hash {
		h, err := e.repo.Put(ctx, typ, v)
		if err != nil {
			e.t.Fatal(err)
		}
		return h
	}
	c, err := e.eng.Next(ctx, head)
	if err != nil {
		e.t.Fatal(err)
	}
	bad := "<script>window.pwned=5</script> [x](javascript:window.pwned=6) <img src=x onerror=\"window.pwned=7\">"
	d := &thread.Detail{
		Prompt:     put(cas.ContentSchema, "prompt "+bad),
		Raw:        put(cas.ContentSchema, "---\nstatus: done\nsteps: ['"+strings.ReplaceAll(bad, "'", "''")+"']\n---\n"+bad),
		Stderr:     put(cas.ContentSchema, `stderr <img src=x onerror="window.pwned=4">`),
		EdgePrompt: "edge <script>window.pwned=3</script>",
		DurationMs: 10,
	}
	s := &thread.Step{Chain: c, Role: "planner", Agent: "synth",
		Output: put(st.Schemas["planner"], map[string]any{"status": "done", "steps": []any{bad}}),
		Detail: put(cas.DetailSchema, d.Payload()), StartedAt: 1, CompletedAt: 11}
	h := put(cas.StepSchema, s.Payload())
	if err := e.eng.Commit(ctx, id, h, "hostile step"); err != nil {
		e.t.Fatal(err)
	}
}

// TestBrowserQueueAndWorker starts a thread queued for workers from the
// workflow page (the "Queue for workers" box), sees its run queued on its
// page, then sees a worker's claim and its retry land without a reload
// (the runs/ ref moves on the events stream), the run error in the
// user's words.
func TestBrowserQueueAndWorker(t *testing.T) {
	ctx := browsertest.Tab(t)
	e := newEnv(t, "memory")
	e.watchableOrSkip()
	e.reviewLoop()
	browsertest.Do(t, ctx, "start a queued thread from the workflow page",
		chromedp.Navigate(e.base+"/workflows/review-loop#token="+testToken),
		chromedp.WaitVisible(browsertest.CSS(`form.start textarea`)),
		chromedp.SendKeys(browsertest.CSS(`form.start textarea`), "Queued in the browser"),
		chromedp.SendKeys(browsertest.CSS(`form.start input[name=agent]`), "synth"),
		chromedp.Click(browsertest.CSS(`form.start input[name=queue]`)),
		chromedp.Click(browsertest.CSS(`form.start button`)))
	browsertest.WaitPath(t, ctx, "/threads/", 10*time.Second)
	browsertest.Do(t, ctx, "see it queued",
		browsertest.WaitFor(`!!document.querySelector('.run-facts .pill.st-queued')`, 10*time.Second),
		browsertest.WaitFor(`document.getElementById('live').classList.contains('on')`, 10*time.Second))
	id := browsertest.Eval[string](t, ctx, `document.getElementById('thread').dataset.thread`)
	run, err := e.eng.RunOf(t.Context(), id)
	if err != nil || run == nil || run.State != thread.RunQueued || run.Agent != "synth" {
		t.Fatalf("the run of the thread started queued from the page: %+v, %v; want queued for synth", run, err)
	}
	if info, err := e.eng.Show(t.Context(), id); err != nil || info.Depth != 0 {
		t.Errorf("a queued thread was stepped by the server: %+v, %v", info, err)
	}
	worker := thread.New(e.repo, nil)
	lease, err := worker.Claim(t.Context(), id, "worker-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "see the worker's claim without a reload",
		browsertest.WaitFor(`!!document.querySelector('.run-facts .pill.st-running') && document.querySelector('.run-facts').textContent.includes('worker-b')`, 10*time.Second))
	browsertest.Screenshot(t, ctx, "run-running")
	if err := lease.Retry(t.Context(), fmt.Errorf("step: %w", cas.ErrNotFound), time.Minute); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "see the retry and its error",
		browsertest.WaitFor(`!!document.querySelector('.run-facts .pill.st-retrying')`, 10*time.Second))
	if text := browsertest.Eval[string](t, ctx, `document.querySelector('.run-error').textContent`); text != "Last run error: step: not found" {
		t.Errorf("the run error reads %q, want it in the user's words", text)
	}
	browsertest.Screenshot(t, ctx, "run-retrying")
	browsertest.Do(t, ctx, "find it in the list by its run",
		chromedp.Navigate(e.base+"/?status=retrying"),
		chromedp.WaitVisible(browsertest.CSS(`tr[data-thread="`+id+`"] td.run .pill.st-retrying`)))
}
