package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas/postgres"
)

// closeWithin runs s.Close and fails the test if it has not returned
// within d.
func closeWithin(t *testing.T, s *postgres.Store, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
		t.Logf("Close returned in %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(d):
		t.Fatalf("Close has not returned after %v", d)
	}
}

// TestCloseEndsAWatchInAStatement: a watch waiting on the server (its
// barrier, behind an open writer) does not hold Close: the statement is
// cancelled, the watch yields fs.ErrClosed, and Close returns at once,
// well within its bound.
func TestCloseEndsAWatchInAStatement(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	ctx := t.Context()
	head, err := r.WatchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := watchItems(t, r, head)
	tx, _ := inFlight(t, s, "rev/first")
	defer tx.Rollback(context.Background())
	if err := r.CompareAndSwap(ctx, "rev/second", 0, 2, "after a gap"); err != nil {
		t.Fatal(err)
	}
	if e, ok := nextEvent(t, w, 500*time.Millisecond); ok {
		t.Fatalf("delivered %+v past an uncommitted log id", e)
	}
	// The watch now waits in its barrier for tx.
	closeWithin(t, s, 10*time.Second)
	select {
	case err := <-w.errs:
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("the watch ended with %v, want fs.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the watch did not end after Close")
	}
}

// TestCloseBounded: a connection that never comes back (a lock never
// unlocked) holds Close only for its bound.
func TestCloseBounded(t *testing.T) {
	postgres.SetCloseWait(t, time.Second)
	s := newStore(t)
	unlock, err := s.Lock(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, s, 8*time.Second)
	unlock() // late: the connection goes, and nothing panics
}
