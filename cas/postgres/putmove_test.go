package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
)

// batchCounter is a pgx tracer counting batches and statements.
type batchCounter struct {
	mu             sync.Mutex
	batches, stmts []string
}

func (c *batchCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts = append(c.stmts, d.SQL)
	return ctx
}
func (c *batchCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *batchCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	var qs []string
	for _, q := range d.Batch.QueuedQueries {
		qs = append(qs, q.SQL)
	}
	c.batches = append(c.batches, strings.Join(qs, "; "))
	return ctx
}
func (c *batchCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *batchCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (c *batchCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches, c.stmts = nil, nil
}

// take returns the batches and statements since reset, but the watch's
// notification (sent after a move's commit, on the store's schedule).
func (c *batchCounter) take() (batches, stmts []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.stmts {
		if !strings.Contains(s, "pg_notify(") {
			stmts = append(stmts, s)
		}
	}
	return c.batches, stmts
}

// TestPutNodesMove: a step's nodes, its ref move and its derived-cache
// entry in one. On PostgreSQL a good one is one batch and nothing else; a
// bad entry key writes nothing; a conflict leaves the nodes
// stored and the ref where it is; a node whose hash holds corrupt bytes is
// healed before the ref moves onto it (the slow path); an absent edge
// fails naming it, moving nothing. The memory store, without the fast
// path, gives the same results.
func TestPutNodesMove(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	trace := &batchCounter{}
	pg, err := postgres.Open(ctx, testURL, &postgres.Options{Schema: freshSchema(t), Tracer: trace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	mem := cas.NewMemStore(nil)
	for _, be := range []struct {
		name    string
		st      cas.Store
		refs    cas.Refs
		corrupt func(cas.Hash, []byte) bool
	}{
		{"postgres", pg, pg.Refs(), corruptible{pg, t}.Corrupt},
		{"memory", mem, mem.Refs(), mem.Corrupt},
	} {
		t.Run(be.name, func(t *testing.T) {
			repo, err := cas.Open(ctx, be.st, be.refs, nil)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := cas.ParseJSON([]byte(`{"type":"object","properties":{"name":{"type":"string"},` +
				`"links":{"type":"array","items":{"type":"string","format":"cas_ref"}}},"required":["name"]}`))
			if err != nil {
				t.Fatal(err)
			}
			link, err := repo.PutSchema(ctx, "putmove-link", doc)
			if err != nil {
				t.Fatal(err)
			}
			node := func(name string, links ...cas.Hash) cas.Node {
				ls := []any{}
				for _, l := range links {
					ls = append(ls, l.String())
				}
				return cas.Node{Type: link, Payload: map[string]any{"name": name, "links": ls}}
			}
			root, err := repo.PutNode(ctx, node("root"))
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.Refs().CompareAndSwap(ctx, "t/a", 0, root, "create"); err != nil {
				t.Fatal(err)
			}
			ref := func() cas.Hash {
				h, err := repo.Refs().Get(ctx, "t/a")
				if err != nil {
					t.Fatal(err)
				}
				return h
			}

			// A good one: the output, then the step linking it and the root.
			out := node("out")
			outHash, _ := out.Hash()
			trace.reset()
			entry := cas.DerivedEntry{Key: "chain/step1", Data: []byte(`{"steps":1}`)}
			hs, err := repo.PutNodesMove(ctx, []cas.Node{out, node("step", outHash, root)}, "t/a", root, "step 1", entry)
			if err != nil {
				t.Fatal(err)
			}
			batches, stmts := trace.take()
			if got, ok, err := repo.Derived().GetDerived(ctx, entry.Key); err != nil || !ok || string(got) != string(entry.Data) {
				t.Errorf("the entry written with the step = %q, %v, %v; want %q", got, ok, err, entry.Data)
			}
			if len(hs) != 2 || hs[0] != outHash || ref() != hs[1] {
				t.Fatalf("PutNodesMove = %v; ref at %s; want the output and the step, the ref on the step", hs, ref())
			}
			if be.name == "postgres" && (len(batches) != 1 || len(stmts) != 0 || !strings.Contains(batches[0], "ref_log") || !strings.Contains(batches[0], ".derived")) {
				t.Errorf("a good PutNodesMove made %d batches and %d statements, want 1 batch (put, move and entry):\n%s\n%s",
					len(batches), len(stmts), strings.Join(batches, "\n"), strings.Join(stmts, "\n"))
			}
			log, err := repo.Refs().Log(ctx, "t/a")
			if err != nil || len(log) != 2 || log[1].Old != root || log[1].New != hs[1] || log[1].Message != "step 1" {
				t.Errorf("log after the move = %+v, %v; want the move from the root to the step", log, err)
			}
			step1 := hs[1]

			// A conflict: the ref is not at old. The nodes are stored.
			hs, err = repo.PutNodesMove(ctx, []cas.Node{node("late", root)}, "t/a", root, "late")
			var ce *cas.ConflictError
			if !errors.As(err, &ce) || ce.Current != step1 || len(hs) != 1 {
				t.Fatalf("PutNodesMove from a stale head = %v, %v; want a ConflictError naming %s, and the node stored", hs, err, step1)
			}
			if _, err := repo.Get(ctx, hs[0]); err != nil || ref() != step1 {
				t.Errorf("after the conflict: node %v, ref at %s; want the node stored and the ref at %s", err, ref(), step1)
			}

			// Corrupt bytes at the next step's output: healed, then moved.
			out2 := node("out2")
			out2Hash, err := repo.PutNode(ctx, out2)
			if err != nil {
				t.Fatal(err)
			}
			if !be.corrupt(out2Hash, []byte(`{"broken":true}`)) {
				t.Fatal("the output to corrupt is not there")
			}
			hs, err = repo.PutNodesMove(ctx, []cas.Node{out2, node("step 2", out2Hash, step1)}, "t/a", step1, "step 2")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Get(ctx, out2Hash); err != nil || ref() != hs[1] {
				t.Errorf("after a move over corrupt bytes: output %v, ref at %s; want the output healed and the ref at %s", err, ref(), hs[1])
			}
			step2 := hs[1]

			// A bad entry key: nothing is written.
			if hs, err := repo.PutNodesMove(ctx, []cas.Node{node("step 2b", step2)}, "t/a", step2, "bad key", cas.DerivedEntry{Key: "Bad key"}); !errors.Is(err, cas.ErrInvalid) || hs != nil || ref() != step2 {
				t.Errorf("PutNodesMove with a bad entry key = %v, %v; ref at %s; want ErrInvalid, nothing stored, the ref at %s", hs, err, ref(), step2)
			}

			// An absent edge: nothing moves; the error names it.
			absent := cas.Sum([]byte(`{"absent":true}`))
			hs, err = repo.PutNodesMove(ctx, []cas.Node{node("step 3", absent, step2)}, "t/a", step2, "step 3")
			var ee *cas.EdgeError
			if !errors.Is(err, cas.ErrNotFound) || !errors.As(err, &ee) || hs != nil || ref() != step2 {
				t.Errorf("PutNodesMove with an absent edge = %v, %v; ref at %s; want an EdgeError wrapping ErrNotFound, nothing stored, the ref at %s", hs, err, ref(), step2)
			}
		})
	}
}
