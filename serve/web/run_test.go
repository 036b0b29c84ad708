package web_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/serve/web"
	"github.com/uncaged/uwf/thread"
)

// TestThreadPageRun: a queued thread shows its run on its page and in the
// list's run column, and the list filters by run state; claimed by a
// worker, the page names the worker and when its lease ends by the
// store's clock; retrying, it shows the last run error in the user's
// words, a known secret masked.
func TestThreadPageRun(t *testing.T) {
	e := newEnv(t)
	const key = "sk-uwf-run-9d8e7f"
	srv := httptest.NewServer(web.New(e.eng, &web.Options{Mask: secret.New(key)}))
	defer srv.Close()
	id, _, err := e.eng.Start(e.ctx, e.wf, "queued task", "/")
	if err != nil {
		t.Fatal(err)
	}
	page := func(path string, status int, want []string, not []string) {
		t.Helper()
		st, _, body := get(t, srv.URL+path)
		if st != status {
			t.Fatalf("GET %s: %d, want %d\n%s", path, st, status, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", path, w)
			}
		}
		for _, w := range not {
			if strings.Contains(body, w) {
				t.Errorf("GET %s holds %q", path, w)
			}
		}
	}
	page("/threads/"+id, 200, nil, []string{"<dt>Run</dt>"})
	if _, err := e.eng.Enqueue(e.ctx, id, thread.EnqueueOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	page("/threads/"+id, 200, []string{"<dt>Run</dt>", `class="pill st-queued"`, "agent synth"}, []string{"worker <span"})
	page("/", 200, []string{`<td class="run"><span class="pill st-queued">queued</span>`, `value="queued"`}, nil)
	page("/?status=queued", 200, []string{id}, []string{e.synth})
	page("/?status=running", 200, nil, []string{id})
	page("/?status=nope", 400, []string{"nor a run state"}, nil)

	lease, err := e.eng.Claim(e.ctx, id, "worker-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	page("/threads/"+id, 200, []string{`class="pill st-running"`, `worker <span class="mono">worker-a</span>`, "lease ends <span", "in ", "(store's clock)", "attempt 1"}, nil)
	page("/?status=running", 200, []string{id}, nil)

	cause := errors.New("step: agent: run failed: the agent printed " + key + ": cas: not found")
	if err := lease.Retry(e.ctx, cause, time.Minute); err != nil {
		t.Fatal(err)
	}
	page("/threads/"+id, 200, []string{`class="pill st-retrying"`, "backoff ends", "Last run error: step: the agent failed: the agent printed"},
		[]string{key, "cas: not found", "agent: run failed"})
}

// TestThreadPageSessions: each step shows its session (model, tokens,
// cost) and the thread's header its totals.
func TestThreadPageSessions(t *testing.T) {
	e := newEnv(t)
	srv := e.server("tok")
	id, head, err := e.eng.Start(e.ctx, e.wf, "task", "/")
	if err != nil {
		t.Fatal(err)
	}
	content := e.put(cas.ContentSchema, "---\nstatus: done\n---\nbody")
	start := head
	for i, s := range []*thread.Session{
		{Tool: "claude-code", ID: "s-1", Model: "model-one", InputTokens: 100, OutputTokens: 10, CacheReadTokens: 90, CostUSD: 0.1},
		{Tool: "codex", ID: "s-2", Model: "model-two", InputTokens: 50, OutputTokens: 5, CostUSD: 0.2},
	} {
		n := (&thread.Detail{Prompt: content, Raw: content, Attempts: []cas.Hash{}, Session: s}).Node()
		det := e.put(n.Type, n.Payload)
		c := thread.Chain{Start: start, Depth: i + 1}
		if i > 0 {
			c.Prev = head
		}
		head = e.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "planner", Output: content, Detail: det, Agent: "a"}).Payload())
		if err := e.eng.Commit(e.ctx, id, head, "step planner"); err != nil {
			t.Fatal(err)
		}
	}
	status, _, body := get(t, srv.URL+"/threads/"+id)
	if status != 200 {
		t.Fatalf("GET /threads/%s: %d\n%s", id, status, body)
	}
	for _, want := range []string{
		`<span class="session"><span class="mono">model-one</span> · 100 in / 10 out tokens · $0.1</span>`,
		`<span class="session"><span class="mono">model-two</span> · 50 in / 5 out tokens · $0.2</span>`,
		`<dd class="totals">2 steps · 2 sessions, 150 in (90 cached) / 15 out tokens`, "$0.3",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the thread page lacks %q", want)
		}
	}
}
