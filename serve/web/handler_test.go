package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/serve/web"
	"github.com/uncaged/uwf/thread"
)

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// internalWord matches what an error page must not show: a library
// package's name as a message prefix ("cas: not found") and Go's context
// errors.
var internalWord = regexp.MustCompile(`(^|: |\(|"|>)(cas|moderator|extract|agent|registry|store|yamldoc|disk|postgres|pgx|jsonschema): |context (canceled|deadline exceeded)`)

// TestPages checks every page's status, its security headers and what it
// must show.
func TestPages(t *testing.T) {
	e := newEnv(t)
	srv := e.server("tok")
	info, err := e.eng.Show(e.ctx, e.synth)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		status int
		want   []string
	}{
		{"thread list", "/", 200, []string{e.synth, e.evil, "review-loop", `class="pill st-done"`}},
		{"thread list filtered", "/?status=done", 200, []string{e.synth}},
		{"thread list by workflow", "/?workflow=review-loop", 200, []string{e.synth}},
		{"list fragment", "/frag/threads?status=done", 200, []string{e.synth}},
		{"bad status filter", "/?status=%3Cb%3E", 400, []string{"not one of"}},
		{"bad workflow filter", "/?workflow=..%2Fx", 400, []string{"not a workflow name"}},
		{"bad page", "/?page=-1", 400, []string{"not a page number"}},
		{"thread", "/threads/" + e.synth, 200, []string{"planner", "developer", "reviewer", "Edge prompt", `class="graph"`, "done"}},
		{"thread page back", "/threads/" + e.synth + "?before=2", 200, []string{`data-depth="1"`, "Newest entries"}},
		{"thread fragment", "/frag/threads/" + e.synth + "?after=0", 200, []string{`id="frag"`, `data-depth="1"`}},
		{"thread bad id", "/threads/not-an-id", 400, []string{"not-an-id"}},
		{"thread absent", "/threads/01ARZ3NDEKTSV4RRFFQ69G5FAV", 404, []string{"thread 01ARZ3NDEKTSV4RRFFQ69G5FAV: not found"}},
		{"bad before", "/threads/" + e.synth + "?before=x", 400, []string{"not a depth"}},
		{"forks", "/threads/" + e.synth + "/forks", 200, []string{e.synth}},
		{"diff of a non-fork", "/threads/" + e.synth + "/diff", 200, []string{"not forked"}},
		{"workflows", "/workflows", 200, []string{"review-loop", "evil"}},
		{"workflow", "/workflows/review-loop", 200, []string{"$START", "$END", "planner", "Versions", "Start a thread"}},
		{"workflow for a thread", "/workflows/review-loop?thread=" + e.synth, 200, []string{"routing of thread"}},
		{"workflow bad name", "/workflows/a%20b", 400, nil},
		{"workflow absent", "/workflows/nope", 404, nil},
		{"workflow bad version", "/workflows/review-loop?version=zz", 400, []string{"not a hash"}},
		{"workflow version of another workflow", "/workflows/review-loop?version=" + e.evilWF.String(), 404, []string{"not review-loop"}},
		{"workflow version not a workflow", "/workflows/review-loop?version=" + info.Head.String(), 400, []string{"not a workflow node"}},
		{"node", "/nodes/" + info.Head.String(), 200, []string{`href="/nodes/`, "payload"}},
		{"node bad hash", "/nodes/xyz", 400, nil},
		{"node absent", "/nodes/0000000000001", 404, []string{"object 0000000000001 was not found in the store"}},
		{"static css", "/static/style.css", 200, []string{"prefers-color-scheme"}},
		{"static js", "/static/app.js", 200, []string{"textContent"}},
		{"no listing", "/static/", 404, nil},
		{"unknown", "/nope", 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := get(t, srv.URL+tc.path)
			if status != tc.status {
				t.Fatalf("GET %s: %d, want %d\n%s", tc.path, status, tc.status, body)
			}
			if status != 404 || tc.name != "unknown" {
				if got := h.Get("Content-Security-Policy"); got != web.CSP {
					t.Errorf("GET %s: CSP %q, want %q", tc.path, got, web.CSP)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: the page lacks %q", tc.path, w)
				}
			}
			if m := internalWord.FindString(body); status >= 400 && m != "" {
				t.Errorf("GET %s: the error page holds the internal words %q:\n%s", tc.path, m, body)
			}
		})
	}
}

// TestCSP checks the policy itself: no inline script, no eval, nothing
// from another origin.
func TestCSP(t *testing.T) {
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:", "data: 'self'; script"} {
		if strings.Contains(web.CSP, bad) {
			t.Errorf("CSP %q allows %q", web.CSP, bad)
		}
	}
	for _, need := range []string{"default-src 'none'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(web.CSP, need) {
			t.Errorf("CSP %q lacks %q", web.CSP, need)
		}
	}
}

// TestHostileEscaped checks the HTML of every page that shows the hostile
// thread: no payload arrives as markup.
func TestHostileEscaped(t *testing.T) {
	e := newEnv(t)
	srv := e.server("tok")
	info, err := e.eng.Show(e.ctx, e.evil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.eng.Node(e.ctx, info.Head)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/", "/threads/" + e.evil, "/frag/threads/" + e.evil + "?after=0", "/steps/" + n.Step.Detail.String() + "/detail",
		"/steps/" + n.Step.Detail.String() + "/detail?frag=1", "/workflows/evil", "/workflows", "/nodes/" + n.Step.Output.String(),
		"/threads/" + e.evil + "/forks",
	} {
		status, _, body := get(t, srv.URL+path)
		if status != 200 {
			t.Fatalf("GET %s: %d\n%s", path, status, body)
		}
		// Text has its "<" escaped, so every "<" left starts markup the
		// viewer wrote: none may carry a handler, a javascript: URL or an
		// element a payload would bring.
		for _, tag := range tagRE.FindAllString(strings.ToLower(body), -1) {
			if pageBadRE.MatchString(tag) && tag != `<script src="/static/app.js" defer>` && tag != "</script>" {
				t.Errorf("GET %s: markup %q got through", path, tag)
			}
		}
		if n := strings.Count(body, "<script"); n > 1 {
			t.Errorf("GET %s: %d script elements, want only the page's own", path, n)
		}
	}
}

// pageBadRE matches markup a payload would bring into a page.
var pageBadRE = regexp.MustCompile(`\son[a-z]+\s*=|javascript:|^</?(script|iframe|object|embed|img|style|base)\b|^<meta http|^<svg(?: [^x]|>|$)`)

// TestForkPages forks the synth thread at depth 2, steps the fork with
// another seed, and checks its fork tree and its diff against the origin.
func TestForkPages(t *testing.T) {
	e := newEnv(t)
	srv := e.server("tok")
	fork, _, err := e.eng.ForkAt(e.ctx, e.synth, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.StepN(e.ctx, fork, 2, &thread.RunOptions{Agent: "synth", Seed: 9}); err != nil {
		t.Fatal(err)
	}
	status, _, body := get(t, srv.URL+"/threads/"+fork+"/diff")
	if status != 200 {
		t.Fatalf("diff: %d\n%s", status, body)
	}
	for _, want := range []string{"share the chain up to depth 2", "#3", "#4", `class="differs"`, e.synth} {
		if !strings.Contains(body, want) {
			t.Errorf("the diff lacks %q", want)
		}
	}
	if strings.Contains(body, ">#2<") {
		t.Error("the diff shows depth 2, which both threads share")
	}
	status, _, body = get(t, srv.URL+"/threads/"+e.synth+"/forks")
	if status != 200 || !strings.Contains(body, fork) || !strings.Contains(body, "forked at depth 2") {
		t.Errorf("the origin's fork tree: %d, want it to list the fork at depth 2\n%s", status, body)
	}
	status, _, body = get(t, srv.URL+"/threads/"+fork)
	if status != 200 || !strings.Contains(body, "forked from") || !strings.Contains(body, "/threads/"+fork+"/diff") {
		t.Errorf("the fork's page does not say where it came from: %d", status)
	}
}

// TestErrorPageMasked: an error page says what went wrong in the user's
// words, and a known secret in it (here in the URL the message repeats)
// is masked.
func TestErrorPageMasked(t *testing.T) {
	e := newEnv(t)
	const key = "sk-uwf-test-3f9a7c21"
	srv := httptest.NewServer(web.New(e.eng, &web.Options{Mask: secret.New(key)}))
	defer srv.Close()
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/workflows/" + key, 404, "no workflow registered by that name"},
		{"/nodes/" + key, 400, "not a hash"},
	} {
		status, _, body := get(t, srv.URL+tc.path)
		if status != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, status, tc.status)
		}
		if strings.Contains(body, key) {
			t.Errorf("GET %s: the error page shows the secret:\n%s", tc.path, body)
		}
		if !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: the error page lacks %q:\n%s", tc.path, tc.want, body)
		}
	}
}
