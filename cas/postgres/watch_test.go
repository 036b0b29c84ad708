package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/postgres"
)

// pgWatch is a watch running in the background: its events and errors.
type pgWatch struct {
	evs  chan cas.Event
	errs chan error
}

// watchItems runs a watch in the background until the test ends.
func watchItems(t *testing.T, r *postgres.Refs, after cas.Cursor) *pgWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan error, 100)
	evs := make(chan cas.Event, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range r.Watch(ctx, "", after) {
			if err != nil {
				out <- err
				continue
			}
			evs <- e
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &pgWatch{evs: evs, errs: out}
}

func nextEvent(t *testing.T, w *pgWatch, within time.Duration) (cas.Event, bool) {
	t.Helper()
	select {
	case e := <-w.evs:
		return e, true
	case err := <-w.errs:
		t.Fatalf("watch error: %v", err)
	case <-time.After(within):
	}
	return cas.Event{}, false
}

// inFlight begins a transaction that does what the store's statements do
// to log a change (the watch lock shared, then the insert that takes an
// id), behind the store's back, and leaves it open; it returns the id.
func inFlight(t *testing.T, s *postgres.Store, name string) (pgx.Tx, int64) {
	t.Helper()
	ctx := t.Context()
	tx, err := admin(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared($1)", postgres.WatchLockKey(s.Schema())); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRow(ctx, "INSERT INTO "+pgx.Identifier{s.Schema(), "ref_log"}.Sanitize()+
		" (name, old, new, time_ms, message) VALUES ($1, 0, 1, 1, 'by hand') RETURNING id", name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return tx, id
}

// TestWatchCommitOrder (the gap barrier): a transaction holding a lower
// log id does not hold back a later move, which commits first; the
// watcher sees the higher id with the lower one missing and waits (its
// barrier waits for the open writer) rather than passing it; once the
// first commits, both are delivered, in id order.
func TestWatchCommitOrder(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	ctx := t.Context()
	head, err := r.WatchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := watchItems(t, r, head)
	tx, first := inFlight(t, s, "rev/first")
	// The later move neither waits for the open transaction nor is
	// delivered before it.
	casDone := make(chan error, 1)
	go func() { casDone <- r.CompareAndSwap(ctx, "rev/second", 0, 2, "through the store") }()
	select {
	case err := <-casDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CompareAndSwap waited for an unrelated open transaction that holds a lower log id")
	}
	if e, ok := nextEvent(t, w, 500*time.Millisecond); ok {
		t.Fatalf("delivered %+v while a lower log id was uncommitted", e)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []cas.Event
	for len(got) < 2 {
		e, ok := nextEvent(t, w, castest.WatchWakeBound)
		if !ok {
			t.Fatalf("after both commits: %d events, want 2", len(got))
		}
		got = append(got, e)
	}
	if got[0].Ref != "rev/first" || got[1].Ref != "rev/second" || got[0].Cursor != cas.Cursor(strconv.FormatInt(first, 10)) {
		t.Errorf("events %+v; want rev/first (id %d), then rev/second", got, first)
	}
	if second, _ := strconv.ParseInt(string(got[1].Cursor), 10, 64); second <= first {
		t.Errorf("the later transaction's id %d is not above the first's %d", second, first)
	}
}

// TestWatchHeadWaitsForInFlight: WatchHead returns only once every id
// handed out before it is settled, and a change committed after it (even
// one holding a lower id than a visible row) is delivered from its cursor.
func TestWatchHeadWaitsForInFlight(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	ctx := t.Context()
	tx, first := inFlight(t, s, "late/one")
	headc := make(chan cas.Cursor, 1)
	go func() {
		h, err := r.WatchHead(ctx)
		if err != nil {
			t.Error(err)
		}
		headc <- h
	}()
	select {
	case h := <-headc:
		t.Fatalf("WatchHead = %s while id %d was in flight", h, first)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	head := <-headc
	if want := cas.Cursor(strconv.FormatInt(first, 10)); head != want {
		t.Errorf("WatchHead = %s, want %s", head, want)
	}
	w := watchItems(t, r, head)
	if err := r.CompareAndSwap(ctx, "late/two", 0, 2, "after the head"); err != nil {
		t.Fatal(err)
	}
	if e, ok := nextEvent(t, w, castest.WatchWakeBound); !ok || e.Ref != "late/two" {
		t.Fatalf("after the head: %+v, %v; want late/two", e, ok)
	}
}

// TestWatchRolledBackID: an id whose transaction rolled back leaves a gap
// for good; the barrier settles it and the watch goes on past it, at once
// (not at a poll).
func TestWatchRolledBackID(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	ctx := t.Context()
	w := watchItems(t, r, "")
	if err := r.CompareAndSwap(ctx, "rb/before", 0, 1, "before"); err != nil {
		t.Fatal(err)
	}
	if e, ok := nextEvent(t, w, castest.WatchWakeBound); !ok || e.Ref != "rb/before" {
		t.Fatalf("first event %+v, %v; want rb/before", e, ok)
	}
	tx, lost := inFlight(t, s, "rb/lost")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"rb/after1", "rb/after2"} {
		if err := r.CompareAndSwap(ctx, name, 0, 1, "after"); err != nil {
			t.Fatal(err)
		}
		// Well within a poll interval: woken, not polled.
		e, ok := nextEvent(t, w, 2*time.Second)
		if !ok || e.Ref != name {
			t.Fatalf("event %d after the rolled-back id %d: %+v, %v; want %s", i, lost, e, ok, name)
		}
		if id, _ := strconv.ParseInt(string(e.Cursor), 10, 64); id <= lost {
			t.Errorf("%s has id %d, not above the rolled-back %d", name, id, lost)
		}
	}
}

// TestWatchUnnotifiedWrite: a log row written without a notification (as
// a version-1 binary writes) is still delivered, by the poll.
func TestWatchUnnotifiedWrite(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	errs := watchItems(t, r, "")
	time.Sleep(100 * time.Millisecond)
	if _, err := admin(t).Exec(t.Context(), "INSERT INTO "+pgx.Identifier{s.Schema(), "ref_log"}.Sanitize()+
		" (name, old, new, time_ms, message) VALUES ('v1/x', 0, 1, 1, 'version 1')"); err != nil {
		t.Fatal(err)
	}
	e, ok := nextEvent(t, errs, castest.WatchWakeBound)
	if !ok || e.Ref != "v1/x" {
		t.Fatalf("the unnotified row: %+v, %v; want v1/x", e, ok)
	}
}

// TestWatchCursors: a cursor beyond every id is invalid; one behind rows
// PruneLog removed yields ErrCursorGone once, then the retained changes.
func TestWatchCursors(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	ctx := t.Context()
	for _, bad := range []cas.Cursor{"999999", "d.1.0"} {
		n := 0
		for _, err := range r.Watch(ctx, "", bad) {
			n++
			if !errors.Is(err, cas.ErrInvalidCursor) {
				t.Errorf("Watch(%q) yielded %v, want ErrInvalidCursor", bad, err)
			}
		}
		if n != 1 {
			t.Errorf("Watch(%q) yielded %d items, want one error", bad, n)
		}
	}
	mustCAS(t, r, "a", 0, 1, "1")
	mustCAS(t, r, "a", 1, 2, "2")
	mustCAS(t, r, "a", 2, 3, "3")
	mustCAS(t, r, "b", 0, 4, "4")
	wctx, cancel := context.WithTimeout(ctx, castest.WatchWakeBound)
	defer cancel()
	var all []cas.Event
	for e, err := range r.Watch(wctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if all = append(all, e); len(all) == 4 {
			break
		}
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := r.PruneLog(ctx, now.Add(time.Millisecond)); err != nil || n != 1 {
		t.Fatalf("PruneLog = %d, %v; want 1 (a's middle entry)", n, err)
	}
	var gone int
	var msgs []string
	for e, err := range r.Watch(wctx, "", all[0].Cursor) {
		if errors.Is(err, cas.ErrCursorGone) {
			gone++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if msgs = append(msgs, e.Message); len(msgs) == 2 {
			break
		}
	}
	if gone != 1 || len(msgs) != 2 || msgs[0] != "3" || msgs[1] != "4" {
		t.Errorf("from the first cursor after the prune: %d ErrCursorGone, events %v; want 1 and [3 4]", gone, msgs)
	}
}

func mustCAS(t *testing.T, r cas.Refs, name string, old, new cas.Hash, msg string) {
	t.Helper()
	if err := r.CompareAndSwap(t.Context(), name, old, new, msg); err != nil {
		t.Fatal(err)
	}
}

// TestWatchPages: watches read the log a page at a time, sharing reads:
// two watchers of different prefixes from the start each get their
// changes, in order, across pages.
func TestWatchPages(t *testing.T) {
	postgres.SetWatchPage(t, 3)
	s := newStore(t)
	r := s.Refs()
	var want []string
	for i := range 10 {
		name := []string{"x/a", "y/b"}[i%2]
		var old cas.Hash
		if i >= 2 {
			old = cas.Hash(i - 1)
		}
		mustCAS(t, r, name, old, cas.Hash(i+1), strconv.Itoa(i))
		want = append(want, name+" "+strconv.Itoa(i))
	}
	for _, prefix := range []string{"x/", "y/", ""} {
		ctx, cancel := context.WithTimeout(t.Context(), castest.WatchWakeBound)
		var got []string
		for e, err := range r.Watch(ctx, prefix, "") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Ref+" "+e.Message)
			if (prefix == "" && len(got) == 10) || (prefix != "" && len(got) == 5) {
				break
			}
		}
		cancel()
		var exp []string
		for _, w := range want {
			if len(w) >= len(prefix) && w[:len(prefix)] == prefix {
				exp = append(exp, w)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Errorf("prefix %q: %v, want %v", prefix, got, exp)
		}
	}
}

// TestWatchClosedStore: closing the Store ends its watches with an error
// wrapping fs.ErrClosed.
func TestWatchClosedStore(t *testing.T) {
	needPostgres(t)
	s, err := postgres.Open(t.Context(), testURL, &postgres.Options{Schema: freshSchema(t), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var last error
		for _, err := range s.Refs().Watch(context.Background(), "", "") {
			last = err
		}
		done <- last
	}()
	time.Sleep(100 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("the watch ended with %v, want fs.ErrClosed", err)
		}
	case <-time.After(castest.WatchWakeBound):
		t.Fatal("the watch did not end after Close")
	}
}

// TestWatchLockBeforeID: every statement that logs a change takes the
// watch lock before its row takes an id, so a barrier (the lock held
// exclusive) finds no id handed out to a writer it does not wait for:
// while the lock is held exclusive, a create, a move, a delete, a Replace
// and an ImportLog all wait, and the log's sequence does not move.
func TestWatchLockBeforeID(t *testing.T) {
	s := newStore(t)
	r := s.Refs()
	ctx := t.Context()
	for _, name := range []string{"lb/move", "lb/del"} {
		if err := r.CompareAndSwap(ctx, name, 0, 1, "create"); err != nil {
			t.Fatal(err)
		}
	}
	seq := func() int64 {
		t.Helper()
		var n int64
		if err := admin(t).QueryRow(ctx, "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, 'id')), 0)",
			s.Schema()+".ref_log").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"create", func() error { return r.CompareAndSwap(ctx, "lb/new", 0, 1, "create") }},
		{"move", func() error { return r.CompareAndSwap(ctx, "lb/move", 1, 2, "move") }},
		{"delete", func() error { return r.CompareAndSwap(ctx, "lb/del", 1, 0, "delete") }},
		{"replace", func() error { return r.Replace(ctx, "lb/replaced", 3, "replace") }},
		{"import", func() error {
			return r.ImportLog(ctx, "lb/imported", []cas.LogEntry{{Old: 0, New: 4, Time: 1, Message: "imported"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := admin(t).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", postgres.WatchLockKey(s.Schema())); err != nil {
				t.Fatal(err)
			}
			before := seq()
			done := make(chan error, 1)
			go func() { done <- tc.op() }()
			select {
			case err := <-done:
				t.Fatalf("%s returned (%v) while the watch lock was held exclusive", tc.name, err)
			case <-time.After(300 * time.Millisecond):
			}
			if after := seq(); after != before {
				t.Errorf("%s took log id %d before the watch lock (sequence was at %d)", tc.name, after, before)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWatchNotifiedAcrossStores: a change made through one Store wakes
// the watchers of another (another process) through the notification sent
// after the commit, well before their poll (every 3 s).
func TestWatchNotifiedAcrossStores(t *testing.T) {
	schema := freshSchema(t)
	a, b := openStore(t, schema), openStore(t, schema)
	ctx := t.Context()
	head, err := b.Refs().WatchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := watchItems(t, b.Refs(), head)
	time.Sleep(200 * time.Millisecond) // b's LISTEN connection is up
	for i, name := range []string{"other/one", "other/two", "other/three"} {
		if err := a.Refs().CompareAndSwap(ctx, name, 0, cas.Hash(i+1), "from a"); err != nil {
			t.Fatal(err)
		}
		e, ok := nextEvent(t, w, 2*time.Second)
		if !ok || e.Ref != name {
			t.Fatalf("change %d through another Store: %+v, %v within 2 s; want %s", i, e, ok, name)
		}
	}
}
