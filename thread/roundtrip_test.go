package thread_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// tripCounter is a pgx tracer that records each round trip a store makes:
// a statement on its own ("Q " and its SQL) or a batch ("B" and its
// statements).
type tripCounter struct {
	mu    sync.Mutex
	on    bool
	trips []string
}

func (c *tripCounter) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		c.trips = append(c.trips, s)
	}
}

// record clears the record and starts recording.
func (c *tripCounter) record() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.trips = true, nil
}

// stop stops recording and returns what was recorded.
func (c *tripCounter) stop() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.trips
}

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add("Q " + strings.Join(strings.Fields(d.SQL), " "))
	return ctx
}
func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var stmts []string
	for _, q := range d.Batch.QueuedQueries {
		stmts = append(stmts, strings.Join(strings.Fields(q.SQL), " "))
	}
	c.add("B " + strings.Join(stmts, "; "))
	return ctx
}
func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// maxStepReads bounds the read round trips of one thread step on
// PostgreSQL, at any depth: the ref with the head node (one statement),
// then batches: the newest chain nodes through their prev and skip
// pointers with the step cache's entries of the head and its predecessor
// (at most three batches for the 8 a step fetches), their details and
// outputs with the workflow, their raw outputs with the role schemas. A
// reading whose quota has room for more than 8 entries fetches more, a
// doubling window at a time, until the quota is full: bounded by the
// quota, not the depth. (Before: one read per node, 8-13 at depths 1-4,
// growing with the thread; then 4-12 with the ref, the head and the two
// step-cache entries read one at a time.)
const maxStepReads = 9

// TestPostgresStepRoundTrips pins what a thread step writes on PostgreSQL:
// its nodes, its ref move and its step-cache entry (an unlogged table) in
// one round trip, one batch (one implicit transaction: one commit, one WAL
// flush) that takes the store-wide lock itself; no other statement writes,
// locks or opens a transaction. (Before: 16 write round trips and 10
// commits a step; then 3 round trips and 3 commits, 2 of them flushing
// WAL.) It also pins the step's reads at
// maxStepReads, whatever the depth: with the synth agent on review-loop
// (its statuses and counts from the step cache) and with a loop workflow
// 80 steps deep.
func TestPostgresStepRoundTrips(t *testing.T) {
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	trips := &tripCounter{}
	st, err := postgres.Open(t.Context(), url+sep+"schema="+pgtest.Schema(t, "trips"), &postgres.Options{Tracer: trips})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	review, _ := examples.FS.ReadFile("review-loop.yaml")
	for _, tc := range []struct {
		name, file, yaml string
		steps            int
		opts             *thread.RunOptions
	}{
		{"review-loop", "review-loop.yaml", string(review), 5, &thread.RunOptions{Agent: "synth"}},
		{"loop", "loop.yaml", loopWith(200), 80, &thread.RunOptions{Config: loopAgent(t), Quota: 2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf, err := registry.Parse(tc.file, []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			res, err := thread.New(repo, nil).Registry().Put(ctx, wf)
			if err != nil {
				t.Fatal(err)
			}
			id, _, err := thread.New(repo, nil).Start(ctx, res.Hash, "task", "/")
			if err != nil {
				t.Fatal(err)
			}
			reads := make([]int, tc.steps)
			for i := range tc.steps {
				reads[i] = stepTrips(t, st, trips, id, i+1, tc.opts)
			}
			// Once the reading's quota is full (the loop's 2,000 bytes hold
			// about 25 entries), a deeper step reads no more.
			if tc.steps >= 80 {
				for i := tc.steps / 2; i < tc.steps; i++ {
					if reads[i] != reads[tc.steps/2] {
						t.Errorf("step %d: %d read round trips, step %d %d: want the same once the quota is full", i+1, reads[i], tc.steps/2+1, reads[tc.steps/2])
					}
				}
			}
		})
	}
}

// stepTrips runs one step of thread id, as a fresh `uwf thread step`
// process would (a new repo and engine: nothing cached from the step
// before), and checks its round trips.
func stepTrips(t *testing.T, st *postgres.Store, trips *tripCounter, id string, depth int, opts *thread.RunOptions) (reads int) {
	t.Helper()
	ctx := t.Context()
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := thread.New(repo, nil)
	trips.record()
	r, err := e.Step(ctx, id, opts)
	got := trips.stop()
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != thread.EventStep && r.Kind != thread.EventDone {
		t.Fatalf("step %d: %s, want a step or the done mark", depth, r.Kind)
	}
	var batches, rs []string
	derived := 0
	for _, trip := range got {
		switch {
		case strings.HasPrefix(trip, "B "):
			batches = append(batches, trip)
		case strings.HasPrefix(trip, "Q INSERT INTO ") && strings.Contains(trip, ".derived (key, data)"):
			derived++
		case strings.HasPrefix(trip, "Q SELECT set_config('synchronous_commit', 'off', true), pg_notify("):
			// The watch notification a ref move sends after its commit,
			// on the store's schedule (it may land in the next step's
			// record): not a read.
		case !strings.HasPrefix(trip, "Q SELECT") || strings.Contains(trip, "advisory"):
			t.Errorf("step %d: a statement of its own writes, locks or opens a transaction: %.120s", depth, trip)
		default:
			rs = append(rs, trip)
		}
	}
	if len(batches) != 1 || !strings.HasPrefix(batches[0], "B SELECT pg_advisory_xact_lock_shared") ||
		!strings.Contains(batches[0], ".objects (hash, data, size, time)") || !strings.Contains(batches[0], ".ref_log (name, old, new") {
		t.Errorf("step %d: %d batches, want 1 (the nodes, the ref move and the entry) under the shared lock:\n%s", depth, len(batches), strings.Join(batches, "\n"))
	}
	if derived > 0 || len(batches) == 1 && !strings.Contains(batches[0], ".derived (key, data)") {
		t.Errorf("step %d: %d derived-cache writes of their own, want none: the new node's entry in the write batch", depth, derived)
	}
	if len(rs) > maxStepReads {
		t.Errorf("step %d: %d read round trips, want at most %d:\n%s", depth, len(rs), maxStepReads, strings.Join(rs, "\n"))
	}
	t.Logf("step %d: %d round trips: %d writes, %d reads", depth, len(got), len(batches), len(rs))
	return len(rs)
}

// Round trips of the rest of what a `uwf thread step` process, or a worker
// before each step, does on PostgreSQL (TestPostgresCLIStepRoundTrips).
const (
	// maxOpenTrips: opening the store (its format version) and the repo
	// (the version again, and whether the store is new).
	maxOpenTrips = 3
	// maxShowTrips: the thread's ref, its run's and its last failure's,
	// with the nodes they point at, in one statement; the start node, the
	// details, and the step cache's and origin's entries in one more; the
	// workflow in a third. (Before: 6-10, one node, entry or ref each.)
	maxShowTrips = 3
	// maxWorkerShowTrips: show in an engine that keeps the workflow
	// loaded (a worker's, after its first step): no third.
	maxWorkerShowTrips = 2
)

// withoutNotify returns trips without the watch notifications, which a
// ref move sends after its commit on the store's schedule (one may land in
// the next call's record).
func withoutNotify(trips []string) []string {
	var out []string
	for _, trip := range trips {
		if !strings.HasPrefix(trip, "Q SELECT set_config('synchronous_commit', 'off', true), pg_notify(") {
			out = append(out, trip)
		}
	}
	return out
}

// TestPostgresWorkerShowRoundTrips: a worker keeps one store and engine,
// and shows a thread before each step; once the engine holds the
// workflow, show takes at most maxWorkerShowTrips round trips (one more
// under a mark) and a step reads no more than a fresh engine's does.
func TestPostgresWorkerShowRoundTrips(t *testing.T) {
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	trips := &tripCounter{}
	ctx := t.Context()
	st, err := postgres.Open(ctx, url+sep+"schema="+pgtest.Schema(t, "workertrips"), &postgres.Options{Tracer: trips})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := thread.New(repo, nil)
	review, _ := examples.FS.ReadFile("review-loop.yaml")
	wf, err := registry.Parse("review-loop.yaml", review)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Registry().Put(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := e.Start(ctx, res.Hash, "task", "/")
	if err != nil {
		t.Fatal(err)
	}
	for depth := 1; ; depth++ {
		trips.record()
		info, err := e.Show(ctx, id)
		show := withoutNotify(trips.stop())
		if err != nil {
			t.Fatal(err)
		}
		if info.WorkflowName != "review-loop" {
			t.Errorf("step %d: show names the workflow %q, want review-loop", depth, info.WorkflowName)
		}
		// Under a mark (the done one) show reads the step before it and
		// then its details: one more.
		max := maxWorkerShowTrips
		if info.Status != thread.StatusActive {
			max = maxShowTrips
		}
		if depth > 1 && len(show) > max {
			t.Errorf("step %d: show took %d round trips, want at most %d:\n%s", depth, len(show), max, strings.Join(show, "\n"))
		}
		if info.Status != thread.StatusActive {
			return
		}
		trips.record()
		_, err = e.Step(ctx, id, &thread.RunOptions{Agent: "synth"})
		step := withoutNotify(trips.stop())
		if err != nil {
			t.Fatal(err)
		}
		if len(step) > maxStepReads+1 {
			t.Errorf("step %d: %d round trips, want at most %d reads and the write:\n%s", depth, len(step), maxStepReads, strings.Join(step, "\n"))
		}
		t.Logf("step %d: show %d, step %d round trips", depth, len(show), len(step))
	}
}

// TestPostgresCLIStepRoundTrips counts every round trip of a step as a new
// process makes it (open the store and the repo, show the thread, step
// it), phase by phase, through review-loop to its end: each phase is
// pinned, and none grows with the depth.
func TestPostgresCLIStepRoundTrips(t *testing.T) {
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "schema=" + pgtest.Schema(t, "clitrips")
	ctx := t.Context()
	st0, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st0.Close()
	repo0, err := cas.Open(ctx, st0, st0.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	review, _ := examples.FS.ReadFile("review-loop.yaml")
	wf, err := registry.Parse("review-loop.yaml", review)
	if err != nil {
		t.Fatal(err)
	}
	res, err := thread.New(repo0, nil).Registry().Put(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := thread.New(repo0, nil).Start(ctx, res.Hash, "task", "/")
	if err != nil {
		t.Fatal(err)
	}
	trips := &tripCounter{}
	for depth := 1; ; depth++ {
		trips.record()
		st, err := postgres.Open(ctx, url, &postgres.Options{Tracer: trips})
		if err != nil {
			t.Fatal(err)
		}
		repo, err := cas.Open(ctx, st, st.Refs(), nil)
		if err != nil {
			t.Fatal(err)
		}
		e := thread.New(repo, nil)
		open := trips.stop()
		trips.record()
		info, err := e.Show(ctx, id)
		show := withoutNotify(trips.stop())
		if err != nil {
			t.Fatal(err)
		}
		if len(open) > maxOpenTrips {
			t.Errorf("step %d: opening took %d round trips, want at most %d:\n%s", depth, len(open), maxOpenTrips, strings.Join(open, "\n"))
		}
		if len(show) > maxShowTrips {
			t.Errorf("step %d: show took %d round trips, want at most %d:\n%s", depth, len(show), maxShowTrips, strings.Join(show, "\n"))
		}
		if info.Status != thread.StatusActive {
			st.Close()
			if depth != 7 {
				t.Errorf("review-loop ended after %d steps and marks, want 6", depth-1)
			}
			return
		}
		reads := stepTrips(t, st, trips, id, depth, &thread.RunOptions{Agent: "synth"})
		t.Logf("step %d: open %d, show %d, step reads %d, step writes 1", depth, len(open), len(show), reads)
		st.Close()
	}
}
