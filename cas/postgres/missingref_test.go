package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
)

// TestMissingRef: a ref row deleted behind uwf's back leaves a log that
// says the ref exists. fsck reports it, PruneLog keeps its log whole, GC
// keeps its nodes, and RestoreRef brings it back with its history.
func TestMissingRef(t *testing.T) {
	needPostgres(t)
	s := newStore(t)
	ctx := t.Context()
	repo, err := cas.Open(ctx, s, s.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := repo.Put(ctx, cas.ContentSchema, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := repo.Put(ctx, cas.ContentSchema, "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ old, new cas.Hash }{{0, a}, {a, b}} {
		if err := repo.Refs().CompareAndSwap(ctx, "threads/T", step.old, step.new, "step"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin(t).Exec(context.Background(), "DELETE FROM "+pgx.Identifier{s.Schema(), "refs"}.Sanitize()+" WHERE name = 'threads/T'"); err != nil {
		t.Fatal(err)
	}

	rep, err := repo.Fsck(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != cas.ProblemMissingRef || rep.Problems[0].Ref != "threads/T" || rep.Problems[0].Hash != b {
		t.Fatalf("fsck = %+v, want one missing-ref of threads/T at %s", rep.Problems, b)
	}
	// Far in the future (by the server's clock, PruneLog's cutoff): the log
	// and the nodes stay.
	if n, err := s.Refs().PruneLog(ctx, time.Now().Add(1000*time.Hour)); err != nil {
		t.Fatal(err)
	} else if log, _ := s.Refs().Log(ctx, "threads/T"); len(log) != 2 {
		t.Fatalf("PruneLog removed %d entries of a missing ref's log: %+v", n, log)
	}
	if _, err := repo.GC(ctx, &cas.GCOptions{Grace: -1, LogRetention: -1}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Has(ctx, b); !ok {
		t.Fatal("GC collected a missing ref's node")
	}

	var missing *cas.MissingRefError
	if err := repo.SetRef(ctx, "threads/T", a, false); !errors.As(err, &missing) || missing.Logged != b {
		t.Fatalf("SetRef of a missing ref = %v, want a *MissingRefError", err)
	}
	got, err := repo.RestoreRef(ctx, "threads/T", 0)
	if err != nil || got != b {
		t.Fatalf("RestoreRef = %s, %v; want %s", got, err, b)
	}
	log, err := s.Refs().Log(ctx, "threads/T")
	if err != nil || len(log) != 3 || log[2].Old != b || log[2].New != b {
		t.Fatalf("log after restore = %+v, %v", log, err)
	}
	if rep, err := repo.Fsck(ctx, nil); err != nil || !rep.OK() {
		t.Fatalf("fsck after restore: %+v, %v", rep, err)
	}
}
