package serve_test

import (
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// TestAPISession: on every backend, a thread whose two steps' agents
// reported sessions (a detail-run node each) answers GET
// /api/v1/threads/{id} with the last run's session and the totals of both
// (exact: $0.10 + $0.20 is $0.30), and GET /api/v1/steps/{hash} with the
// step's own session.
func TestAPISession(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, backend)
			ctx := t.Context()
			id, head, err := e.eng.Start(ctx, e.reviewLoop(), "task", "/")
			if err != nil {
				t.Fatal(err)
			}
			put := func(n cas.Node) cas.Hash {
				hs, err := e.repo.PutNodes(ctx, []cas.Node{n})
				if err != nil {
					t.Fatal(err)
				}
				return hs[0]
			}
			content := put(cas.Node{Type: cas.ContentSchema, Payload: "---\nstatus: done\n---\n"})
			start := head
			sessions := []*thread.Session{
				{Tool: "claude-code", ID: "s-1", Model: "m", InputTokens: 100, OutputTokens: 10, CacheReadTokens: 90, CostUSD: 0.1, Turns: 2},
				{Tool: "codex", ID: "s-2", InputTokens: 50, OutputTokens: 5, ReasoningTokens: 3, CostUSD: 0.2},
			}
			var steps []cas.Hash
			for i, s := range sessions {
				det := put((&thread.Detail{Prompt: content, Raw: content, Attempts: []cas.Hash{}, Session: s}).Node())
				c := thread.Chain{Start: start, Depth: i + 1}
				if i > 0 {
					c.Prev = head
				}
				head = put(cas.Node{Type: cas.StepSchema, Payload: (&thread.Step{Chain: c, Role: "planner", Output: content, Detail: det, Agent: "a"}).Payload()})
				if err := e.eng.Commit(ctx, id, head, "step planner"); err != nil {
					t.Fatal(err)
				}
				steps = append(steps, head)
			}
			var show thread.ShowJSON
			e.getJSON("/api/v1/threads/"+id, &show)
			if r := show.Session; r == nil || r.Node != head || r.Depth != 2 || r.ID != "s-2" || r.Tool != "codex" || r.ReasoningTokens != 3 {
				t.Errorf("thread session = %+v, want the second step's", r)
			}
			want := thread.TotalsJSON{Steps: 2, Sessions: 2, InputTokens: 150, OutputTokens: 15, CacheReadTokens: 90,
				ReasoningTokens: 3, Turns: 2, CostUSD: 0.3}
			if show.Totals != want {
				t.Errorf("thread totals = %+v, want %+v", show.Totals, want)
			}
			for i, h := range steps {
				var st struct{ Session *thread.SessionJSON }
				e.getJSON("/api/v1/steps/"+h.String(), &st)
				if st.Session == nil || *st.Session != *sessions[i].JSON() {
					t.Errorf("step %d session = %+v, want %+v", i+1, st.Session, sessions[i].JSON())
				}
			}
		})
	}
}
