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

// TestPostgresStepRoundTrips pins what a thread step writes on PostgreSQL:
// its nodes in one round trip and its ref move in one more, each one
// batch (one implicit transaction: one commit, one WAL flush) that takes
// the store-wide lock itself; no other statement writes, locks or opens a
// transaction, except at most one upsert of the derived step cache (an
// unlogged table: its commit writes no WAL to flush). (Before: 16 write
// round trips and 10 commits a step.)
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
	e := thread.New(repo, nil)
	data, _ := examples.FS.ReadFile("review-loop.yaml")
	wf, err := registry.Parse("review-loop.yaml", data)
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
	for i := range 6 {
		// A fresh engine and repo each step, as each `uwf thread step`
		// process has: no node or schema cached from the step before.
		repo, err := cas.Open(ctx, st, st.Refs(), nil)
		if err != nil {
			t.Fatal(err)
		}
		e := thread.New(repo, nil)
		trips.record()
		if _, err := e.Step(ctx, id, &thread.RunOptions{Agent: "synth"}); err != nil {
			t.Fatal(err)
		}
		got := trips.stop()
		var batches, reads []string
		derived := 0
		for _, trip := range got {
			switch {
			case strings.HasPrefix(trip, "B "):
				batches = append(batches, trip)
			case strings.HasPrefix(trip, "Q INSERT INTO ") && strings.Contains(trip, ".derived (key, data)"):
				derived++
			case strings.HasPrefix(trip, "Q SELECT set_config('synchronous_commit', 'off', true), pg_notify("):
				// The watch notification the ref move sends after its
				// commit, on the store's own schedule: not the step's.
			case strings.HasPrefix(trip, "Q SELECT") && !strings.Contains(trip, "advisory"):
				reads = append(reads, trip)
			case !strings.HasPrefix(trip, "Q SELECT") || strings.Contains(trip, "advisory"):
				t.Errorf("step %d: a statement of its own writes, locks or opens a transaction: %.120s", i+1, trip)
			}
		}
		if len(batches) != 2 ||
			!strings.Contains(batches[0], "pg_advisory_xact_lock_shared") || !strings.Contains(batches[0], "INSERT INTO") ||
			!strings.Contains(batches[1], "pg_advisory_xact_lock_shared") || !strings.Contains(batches[1], "ref_log") {
			t.Errorf("step %d: %d batches, want 2 (the nodes, then the ref move), each under the shared lock:\n%s", i+1, len(batches), strings.Join(batches, "\n"))
		}
		if derived > 1 {
			t.Errorf("step %d: %d derived-cache writes, want at most 1", i+1, derived)
		}
		for _, tr := range got {
			t.Logf("  %.200s", tr)
		}
		t.Logf("step %d: %d round trips, %d of them writes, %d to the derived cache", i+1, len(got), len(batches), derived)
	}
}
