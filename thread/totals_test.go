package thread_test

import (
	"encoding/json"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// sessionThread builds a thread of n chain nodes straight into the store,
// as an older build would have left it (no step-cache entry): steps whose
// detail reports a session (input tokens = depth, 2 out, 1 cached, 1
// turn, $0.10), but every 7th, whose detail reports none; at depth n/2 a
// suspension whose agent run reported a session (1000 in, $0.10) and at
// n/2+1 a resume. It returns the id, the node at every depth and, per
// depth, the totals of the chain up to it.
func (te *tenv) sessionThread(n int) (string, []cas.Hash, []thread.Usage) {
	te.t.Helper()
	ctx := te.ctx
	startHash := te.put(cas.StartSchema, (&thread.Start{Workflow: te.wf, Prompt: "totals", Cwd: "/tmp"}).Payload())
	tid := thread.ThreadPrefix + ulid.MustNew(uint64(te.clock.Now().UnixMilli())+te.ids.Add(1), nil).String()
	if err := te.refs.CompareAndSwap(ctx, tid, 0, startHash, "start"); err != nil {
		te.t.Fatal(err)
	}
	hs := make([]cas.Hash, n+1)
	usage := make([]thread.Usage, n+1)
	hs[0] = startHash
	putNode := func(nd cas.Node) cas.Hash {
		got, err := te.repo.PutNodes(ctx, []cas.Node{nd})
		if err != nil {
			te.t.Fatal(err)
		}
		return got[0]
	}
	for d := 1; d <= n; d++ {
		c := thread.Chain{Start: startHash, Depth: d}
		if d > 1 {
			c.Prev = hs[d-1]
		}
		for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
			c.Skip = append(c.Skip, hs[d-(1<<k)])
		}
		u := usage[d-1]
		det := &thread.Detail{Prompt: te.out, Raw: te.out, Attempts: []cas.Hash{}, DurationMs: int64(d)}
		var nd cas.Node
		switch {
		case d == n/2:
			det.Session = &thread.Session{Tool: "codex", InputTokens: 1000, CostUSD: 0.1}
			u.Sessions++
			u.InputTokens += 1000
			u.CostNanoUSD += 100_000_000
			nd = cas.Node{Type: cas.MarkSchema, Payload: (&thread.Mark{Chain: c, Mark: thread.MarkSuspended, Reason: "ask", At: int64(d), Detail: putNode(det.Node())}).Payload()}
		case d == n/2+1:
			nd = cas.Node{Type: cas.MarkSchema, Payload: (&thread.Mark{Chain: c, Mark: thread.MarkResumed, Reason: "go on", At: int64(d)}).Payload()}
		default:
			if d%7 != 0 {
				det.Session = &thread.Session{Tool: "claude-code", ID: "s", Model: "m", InputTokens: int64(d), OutputTokens: 2,
					CacheReadTokens: 1, CostUSD: 0.1, Turns: 1}
				u.Sessions++
				u.InputTokens += int64(d)
				u.OutputTokens += 2
				u.CacheReadTokens++
				u.Turns++
				u.CostNanoUSD += 100_000_000
			}
			nd = cas.Node{Type: cas.StepSchema, Payload: (&thread.Step{Chain: c, Role: "worker", Output: te.out, Detail: putNode(det.Node()),
				Agent: "x", StartedAt: int64(d), CompletedAt: int64(d) + 1}).Payload()}
		}
		hs[d], usage[d] = putNode(nd), u
		if err := te.refs.CompareAndSwap(ctx, tid, hs[d-1], hs[d], "step"); err != nil {
			te.t.Fatal(err)
		}
	}
	return tid[len(thread.ThreadPrefix):], hs, usage
}

// TestShowTotals: thread show's totals of the sessions a thread's runs
// reported (its steps' and a suspension's, not those without one) are
// exact sums (ten $0.10 runs cost $1, not 0.9999999999999999), from the
// step cache: once it is filled, a show reads the same few nodes at depth
// 100 and 3,000; an entry whose totals were tampered with is recomputed;
// a fork's totals are those of its chain up to the fork point.
func TestShowTotals(t *testing.T) {
	const maxReads = 8 // nodes for one show, at any depth
	var reads [2]int64
	for i, depth := range []int{100, 3000} {
		te := newTEnv(t)
		id, hs, usage := te.sessionThread(depth)
		check := func(what string, info *thread.Info, wantSteps int, want thread.Usage) {
			t.Helper()
			if info.Usage != want || info.Steps != wantSteps {
				t.Errorf("depth %d: %s: totals %+v over %d steps, want %+v over %d", depth, what, info.Usage, info.Steps, want, wantSteps)
			}
			j := info.ShowJSON().Totals
			if j.CostUSD != float64(want.Sessions)/10 || j.Sessions != want.Sessions || j.InputTokens != want.InputTokens || j.Steps != wantSteps {
				t.Errorf("depth %d: %s: JSON totals %+v, want %d sessions costing $%v", depth, what, j, want.Sessions, float64(want.Sessions)/10)
			}
		}
		steps := depth - 2 // less the suspension and the resume
		show := func(id string) *thread.Info {
			t.Helper()
			info, err := te.engine().Show(te.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return info
		}
		// The first show fills the cache, walking the chain once.
		check("first show", show(id), steps, usage[depth])
		n0 := te.cnt.gets.Load()
		info := show(id)
		reads[i] = te.cnt.gets.Load() - n0
		check("show", info, steps, usage[depth])
		if reads[i] > maxReads {
			t.Errorf("depth %d: show read %d nodes, want at most %d", depth, reads[i], maxReads)
		}
		if r := info.LastRun; r == nil || r.Node != hs[depth] || r.Session.InputTokens != int64(depth) {
			t.Errorf("depth %d: last run %+v, want the head's session", depth, r)
		}
		// Tampered totals in the head's entry are not believed.
		key := "chain/" + hs[depth].String()
		data, _, err := te.repo.Derived().GetDerived(te.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("head entry %q: %v", data, err)
		}
		m["usage"].(map[string]any)["costNanoUSD"] = float64(usage[depth].CostNanoUSD - 100_000_000)
		data, _ = json.Marshal(m)
		if err := te.repo.Derived().PutDerived(te.ctx, key, data); err != nil {
			t.Fatal(err)
		}
		check("tampered entry", show(id), steps, usage[depth])
		// A fork 10 below the head counts its ancestry, then its own steps.
		fork, _, err := te.engine().ForkAt(te.ctx, id, depth-10)
		if err != nil {
			t.Fatal(err)
		}
		forkSteps := depth - 10 - 2
		check("fork", show(fork), forkSteps, usage[depth-10])
	}
	if reads[0] != reads[1] {
		t.Errorf("a show read %d nodes at depth 100 and %d at 3,000: want the same", reads[0], reads[1])
	}
}
