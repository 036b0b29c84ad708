package thread_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// countingRefs counts the ref-log entries read through Log.
type countingRefs struct {
	*cas.MemRefs
	logEntries atomic.Int64
}

func (r *countingRefs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	es, err := r.MemRefs.Log(ctx, name)
	r.logEntries.Add(int64(len(es)))
	return es, err
}

// loopWith is loopWorkflow with the step limit maxSteps.
func loopWith(maxSteps int) string {
	return "name: loop\nmaxSteps: " + strconv.Itoa(maxSteps) + loopWorkflow[len("name: loop\nmaxSteps: 20"):]
}

// deepThread builds a thread of wf, a loop workflow, with n worker steps
// (each answering "again") straight into the store, as an older build
// would have left it: no derived-cache entry. Its ref is moved once per
// step, so its log holds n+1 entries. It returns the id and the node at
// every depth.
func (te *tenv) deepThread(wf cas.Hash, n int) (string, []cas.Hash) {
	te.t.Helper()
	ctx := te.ctx
	stored, err := te.e.Registry().LoadStored(ctx, wf)
	if err != nil {
		te.t.Fatal(err)
	}
	out := te.put(stored.Schemas["worker"], map[string]any{"status": "again"})
	startHash := te.put(cas.StartSchema, (&thread.Start{Workflow: wf, Prompt: "deep", Cwd: te.t.TempDir()}).Payload())
	tid := thread.ThreadPrefix + ulid.MustNew(uint64(te.clock.Now().UnixMilli())+te.ids.Add(1), nil).String()
	if err := te.refs.CompareAndSwap(ctx, tid, 0, startHash, "start"); err != nil {
		te.t.Fatal(err)
	}
	hs := make([]cas.Hash, n+1)
	hs[0] = startHash
	for d := 1; d <= n; d++ {
		c := thread.Chain{Start: startHash, Depth: d}
		if d > 1 {
			c.Prev = hs[d-1]
		}
		for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
			c.Skip = append(c.Skip, hs[d-(1<<k)])
		}
		s := &thread.Step{Chain: c, Role: "worker", Output: out, Detail: te.det, Agent: "synth", StartedAt: int64(d), CompletedAt: int64(d) + 1}
		data, err := cas.Node{Type: cas.StepSchema, Payload: s.Payload()}.Encode()
		if err != nil {
			te.t.Fatal(err)
		}
		if hs[d], err = te.st.Put(ctx, data); err != nil {
			te.t.Fatal(err)
		}
		if err := te.refs.CompareAndSwap(ctx, tid, hs[d-1], hs[d], "step worker"); err != nil {
			te.t.Fatal(err)
		}
	}
	return tid[len(thread.ThreadPrefix):], hs
}

// bigDepth is the depth of the deep thread in TestStepCostBounded:
// 100,000, or UWF_TEST_DEPTH.
func bigDepth(t *testing.T) int {
	if s := os.Getenv("UWF_TEST_DEPTH"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 200 {
			t.Fatalf("UWF_TEST_DEPTH=%q: want a number of at least 200", s)
		}
		return n
	}
	return 100_000
}

// cost is what one operation read: nodes from the store, entries of ref
// logs.
type cost struct{ nodes, logEntries int64 }

// measure runs op on a fresh engine (cold in-process caches, as a new CLI
// process) and returns what it read.
func (te *tenv) measure(cr *countingRefs, op func(e *thread.Engine) error) cost {
	te.t.Helper()
	e := te.engine()
	n0, l0 := te.cnt.gets.Load(), cr.logEntries.Load()
	if err := op(e); err != nil {
		te.t.Fatal(err)
	}
	return cost{te.cnt.gets.Load() - n0, cr.logEntries.Load() - l0}
}

// TestStepCostBounded: on a thread 100 and 100,000 steps deep whose ref
// log is as long, once the derived cache is filled (lazily, by the first
// show and step of a store an older build wrote), `thread show` and the
// next step (synth, under a step limit below the depth, so the limit is
// checked) read a small number of nodes, the same at any depth but for
// the new node's skip pointers (log2 of the depth, at most MaxSkip), and
// no log entry, whatever the depth (the thread so far in the prompt reads what fits the quota:
// here one entry). Two threads are measured at each depth: the deep thread
// itself, resumed (the limit counts from the resume), and a fork of it 10
// steps below its head (the limit counts from the fork point, which is
// then looked up).
func TestStepCostBounded(t *testing.T) {
	const maxReads = 40 // nodes for one show or one step, at any depth
	deep := bigDepth(t)
	var costs [2][4]cost // [depth][show, step of the thread; show, step of the fork]
	for i, depth := range []int{100, deep} {
		c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
		mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
		cr := &countingRefs{MemRefs: mem.Refs()}
		te := newTEnvOn(t, c, mem, cr)
		wf := te.putWorkflow(loopWith(50))
		built := time.Now()
		id, hs := te.deepThread(wf, depth)
		t.Logf("depth %d: built in %s", depth, time.Since(built).Round(time.Millisecond))
		// A quota of one character renders only the newest entry: what
		// the prompt's rendering reads is bounded by the quota alone.
		opts := &thread.RunOptions{Agent: "synth", Quota: 1}
		show := func(id string, wantDepth, originDepth int) func(e *thread.Engine) error {
			return func(e *thread.Engine) error {
				info, err := e.Show(te.ctx, id)
				if err == nil && (info.Depth != wantDepth || info.Origin.Node != hs[originDepth] || info.Origin.Depth != originDepth || info.Origin.Forked != (originDepth > 0)) {
					t.Errorf("depth %d: show %s = depth %d, origin %+v", depth, id, info.Depth, info.Origin)
				}
				return err
			}
		}
		step := func(id string, wantDepth int) func(e *thread.Engine) error {
			return func(e *thread.Engine) error {
				r, err := e.Step(te.ctx, id, opts)
				if err == nil && (r.Depth != wantDepth || r.Kind != thread.EventStep) {
					t.Errorf("depth %d: step of %s = %s at depth %d, want a step at %d", depth, id, r.Kind, r.Depth, wantDepth)
				}
				return err
			}
		}
		// The first show and the resume fill the cache from the log and
		// the nodes.
		first := te.measure(cr, show(id, depth, 0))
		resume := te.measure(cr, func(e *thread.Engine) error { _, err := e.Resume(te.ctx, id, "go on"); return err })
		t.Logf("depth %d: first show read %+v, the resume (filling the cache) %+v", depth, first, resume)
		te.measure(cr, step(id, depth+2))
		var fork string
		te.measure(cr, func(e *thread.Engine) (err error) { fork, _, err = e.ForkAt(te.ctx, id, depth-10); return err })
		te.measure(cr, show(fork, depth-10, depth-10))
		te.measure(cr, step(fork, depth-9))

		costs[i][0] = te.measure(cr, show(id, depth+2, 0))
		costs[i][1] = te.measure(cr, step(id, depth+3))
		costs[i][2] = te.measure(cr, show(fork, depth-9, depth-10))
		costs[i][3] = te.measure(cr, step(fork, depth-8))
		t.Logf("depth %d: thread show, step; fork show, step: %+v", depth, costs[i])
		for j, what := range []string{"show", "step", "fork show", "fork step"} {
			if c := costs[i][j]; c.nodes > maxReads || c.logEntries != 0 {
				t.Errorf("depth %d: %s read %d nodes and %d log entries, want at most %d and none", depth, what, c.nodes, c.logEntries, maxReads)
			}
		}
	}
	// The only reads that grow with depth are the new node's skip
	// pointers: log2(depth) of them, at most MaxSkip.
	for j := range costs[0] {
		if d := costs[1][j].nodes - costs[0][j].nodes; d < 0 || d > thread.MaxSkip {
			t.Errorf("operation %d read %d nodes at depth 100 and %d at depth %d: more than the skip pointers apart", j, costs[0][j].nodes, costs[1][j].nodes, deep)
		}
	}
}
