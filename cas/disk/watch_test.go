package disk_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/disk"
)

// collect reads a watch until it has n events (errors are returned beside
// them), failing t after castest.WatchWakeBound.
func collect(t *testing.T, r *disk.Refs, prefix string, after cas.Cursor, n int) ([]cas.Event, []error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), castest.WatchWakeBound)
	defer cancel()
	var evs []cas.Event
	var errs []error
	for e, err := range r.Watch(ctx, prefix, after) {
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("after %d events (%v): %v", len(evs), evs, err)
			}
			errs = append(errs, err)
			continue
		}
		evs = append(evs, e)
		if len(evs) == n {
			break
		}
	}
	return evs, errs
}

func messages(evs []cas.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Message)
	}
	return out
}

// TestConformanceSmallJournal runs the refs suite with a journal segment
// per change or two, so watches cross segments everywhere.
func TestConformanceSmallJournal(t *testing.T) {
	opts := &disk.Options{Durability: disk.DurabilityNone}
	disk.SetJournalSegment(opts, 150)
	castest.RunRefs(t, func(t *testing.T) cas.Refs {
		st, err := disk.Create(t.TempDir(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return droppable{st.Refs(), st.Dir(), opts}
	})
}

// TestWatchCrashBeforeMove: a change whose journal record and log line are
// flushed but whose ref never moves (a crash between) delivers nothing,
// here and after the store is opened again; the next committed change of
// that ref is delivered once.
func TestWatchCrashBeforeMove(t *testing.T) {
	crash := errors.New("simulated crash before the ref moves")
	opts := &disk.Options{}
	crashing := true
	disk.SetMoveHook(opts, func(name string) error {
		if crashing && (name == "threads/a" || name == "threads/c") {
			return crash
		}
		return nil
	})
	s := newStore(t, opts)
	r := s.Refs()
	crashing = false
	mustCAS(t, r, "threads/c", 0, 7, "c")
	crashing = true
	mustCAS(t, r, "threads/b", 0, 1, "before")
	if err := r.CompareAndSwap(t.Context(), "threads/a", 0, 2, "lost"); !errors.Is(err, crash) {
		t.Fatalf("CompareAndSwap with the crash hook: %v", err)
	}
	if err := r.CompareAndSwap(t.Context(), "threads/c", 7, 8, "lost move"); !errors.Is(err, crash) {
		t.Fatalf("CompareAndSwap with the crash hook: %v", err)
	}
	mustCAS(t, r, "threads/b", 1, 3, "after")
	evs, errs := collect(t, r, "", "", 3)
	if got := strings.Join(messages(evs), ","); got != "c,before,after" || len(errs) > 0 {
		t.Fatalf("events %s, errors %v; want c,before,after", got, errs)
	}
	head, err := r.WatchHead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// After a restart, the intent is still in the log and the journal.
	s.Close()
	again, err := disk.Open(s.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	r2 := again.Refs()
	evs, _ = collect(t, r2, "threads/b", "", 2)
	if got := strings.Join(messages(evs), ","); got != "before,after" {
		t.Fatalf("after reopening: events %s; want before,after", got)
	}
	// The ref's next change truncates the intent and is delivered once.
	crashing = false
	mustCAS(t, r2, "threads/a", 0, 2, "lost")
	mustCAS(t, r2, "threads/a", 2, 4, "next")
	mustCAS(t, r2, "threads/c", 7, 9, "moved")
	evs, _ = collect(t, r2, "threads/a", "", 2)
	if got := strings.Join(messages(evs), ","); got != "lost,next" {
		t.Errorf("events of threads/a from the start: %s; want lost,next (the retried change once)", got)
	}
	evs, _ = collect(t, r2, "", head, 3)
	if got := strings.Join(messages(evs), ","); got != "lost,next,moved" {
		t.Errorf("events from the head before the retry: %s; want lost,next,moved", got)
	}
	if log := mustLog(t, r2, "threads/c"); len(log) != 2 || log[1].Message != "moved" {
		t.Errorf("the log of threads/c: %v; want c, moved", log)
	}
}

// TestWatchCursorGone: GC trims whole old segments; a watch from a cursor
// in a trimmed segment yields ErrCursorGone once, then every retained
// change; a watch from the zero cursor starts at the oldest retained one
// without an error.
func TestWatchCursorGone(t *testing.T) {
	clk := newClock()
	opts := &disk.Options{Now: clk.Now}
	disk.SetJournalSegment(opts, 60) // a segment per change
	s := newStore(t, opts)
	r := s.Refs()
	mustCAS(t, r, "a", 0, 1, "old 1")
	mustCAS(t, r, "a", 1, 2, "old 2")
	mustCAS(t, r, "a", 2, 3, "old 3")
	clk.Add(48 * time.Hour)
	mustCAS(t, r, "a", 3, 4, "new 4")
	mustCAS(t, r, "b", 0, 5, "new 5")
	all, _ := collect(t, r, "", "", 5)
	segs := func() int {
		names, _ := filepath.Glob(filepath.Join(s.Dir(), "journal", "0*"))
		return len(names)
	}
	before := segs()
	if _, err := r.PruneLog(t.Context(), clk.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if after := segs(); after >= before {
		t.Fatalf("the journal has %d files after the prune, %d before: nothing trimmed", after, before)
	}
	evs, errs := collect(t, r, "", all[0].Cursor, 2)
	if len(errs) != 1 || !errors.Is(errs[0], cas.ErrCursorGone) {
		t.Errorf("from a trimmed cursor: errors %v, want one wrapping ErrCursorGone", errs)
	}
	if got := strings.Join(messages(evs), ","); got != "new 4,new 5" {
		t.Errorf("from a trimmed cursor: events %s, want new 4,new 5", got)
	}
	evs, errs = collect(t, r, "", "", 2)
	if got := strings.Join(messages(evs), ","); got != "new 4,new 5" || len(errs) > 0 {
		t.Errorf("from the zero cursor: events %s, errors %v; want new 4,new 5 and none", got, errs)
	}
	// A cursor into a retained segment resumes exactly.
	evs, errs = collect(t, r, "", all[3].Cursor, 1)
	if got := strings.Join(messages(evs), ","); got != "new 5" || len(errs) > 0 {
		t.Errorf("from new 4's cursor: events %s, errors %v; want new 5", got, errs)
	}
}

// TestWatchBadCursors: cursors that are well formed but name no position
// of this journal are refused.
func TestWatchBadCursors(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	mustCAS(t, r, "a", 0, 1, "one")
	evs, _ := collect(t, r, "", "", 1)
	c := string(evs[0].Cursor) // d.1.<end>
	i := strings.LastIndexByte(c, '.')
	for _, bad := range []string{c[:i] + ".5", c[:i] + ".99999", "d.7.0", "d.0.0", "d.1.-1", "d.01.0"} {
		ctx, cancel := context.WithTimeout(t.Context(), castest.WatchWakeBound)
		n := 0
		for _, err := range r.Watch(ctx, "", cas.Cursor(bad)) {
			n++
			if !errors.Is(err, cas.ErrInvalidCursor) {
				t.Errorf("Watch(%q) yielded %v, want ErrInvalidCursor", bad, err)
			}
		}
		cancel()
		if n != 1 {
			t.Errorf("Watch(%q) yielded %d items, want one error", bad, n)
		}
	}
}

// TestWatchTornRecord: a record torn by a crash (no final newline) is
// skipped, and the records after it are read.
func TestWatchTornRecord(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	mustCAS(t, r, "a", 0, 1, "one")
	seg := filepath.Join(s.Dir(), "journal", "0000000000000001")
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n{\"old\":\"0000000000000\",\"new\":\"00"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	head, err := r.WatchHead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	mustCAS(t, r, "a", 1, 2, "two")
	evs, errs := collect(t, r, "", "", 2)
	if got := strings.Join(messages(evs), ","); got != "one,two" || len(errs) > 0 {
		t.Errorf("events %s, errors %v; want one,two", got, errs)
	}
	evs, errs = collect(t, r, "", head, 1)
	if got := strings.Join(messages(evs), ","); got != "two" || len(errs) > 0 {
		t.Errorf("from the head before the torn record: events %s, errors %v; want two", got, errs)
	}
}

// TestWatchOpenWritesNoJournal: opening a store and watching it create no
// journal; the first change does.
func TestWatchOpenWritesNoJournal(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	if c, err := r.WatchHead(t.Context()); err != nil || c != "" {
		t.Errorf("WatchHead of a new store = %q, %v; want the zero cursor", c, err)
	}
	journal := filepath.Join(s.Dir(), "journal")
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a new store has a journal: %v", err)
	}
	mustCAS(t, r, "a", 0, 1, "one")
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("no journal after the first change: %v", err)
	}
}

// TestWatchClosedStore: closing the Store ends its watches with an error
// wrapping fs.ErrClosed.
func TestWatchClosedStore(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	done := make(chan error, 1)
	go func() {
		var last error
		for _, err := range r.Watch(context.Background(), "", "") {
			last = err
		}
		done <- last
	}()
	time.Sleep(50 * time.Millisecond)
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

// TestWatchTornRecordEndsSegment: a record torn at the end of a segment
// that a later one follows is skipped, and the watch goes on to the next
// segment.
func TestWatchTornRecordEndsSegment(t *testing.T) {
	opts := &disk.Options{}
	disk.SetJournalSegment(opts, 60) // a segment per record
	s := newStore(t, opts)
	r := s.Refs()
	mustCAS(t, r, "a", 0, 1, "one")
	head, err := r.WatchHead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(s.Dir(), "journal", "0000000000000001"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n{\"old\":\"0000000000000\",\"new"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	wt := make(chan cas.Event, 10)
	ctx, cancel := context.WithTimeout(t.Context(), castest.WatchWakeBound)
	defer cancel()
	go func() {
		for e, err := range r.Watch(ctx, "", head) {
			if err == nil {
				wt <- e
			}
		}
	}()
	time.Sleep(50 * time.Millisecond) // the watch waits behind the torn record
	mustCAS(t, r, "a", 1, 2, "two")
	mustCAS(t, r, "a", 2, 3, "three")
	for _, want := range []string{"two", "three"} {
		select {
		case e := <-wt:
			if e.Message != want {
				t.Errorf("event %q, want %q", e.Message, want)
			}
		case <-ctx.Done():
			t.Fatalf("no event %q: the watch is stuck behind the torn record", want)
		}
	}
	if segs, _ := filepath.Glob(filepath.Join(s.Dir(), "journal", "0*")); len(segs) < 3 {
		t.Errorf("%d segments, want one per record", len(segs))
	}
}

// TestJournalRotationContention: with a segment per change, writers that
// keep finding the newest segment full (others fill new ones) still commit
// every change (the limit is soft), and a watch sees each once.
func TestJournalRotationContention(t *testing.T) {
	opts := &disk.Options{Durability: disk.DurabilityNone}
	disk.SetJournalSegment(opts, 1)
	s := newStore(t, opts)
	r := s.Refs()
	const writers, changes = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w/%d", w)
			var prev cas.Hash
			for i := range changes {
				next := cas.Hash(w<<16 | i + 1)
				if err := r.CompareAndSwap(t.Context(), name, prev, next, "c"); err != nil {
					t.Errorf("writer %d, change %d: %v", w, i, err)
					return
				}
				prev = next
			}
		})
	}
	wg.Wait()
	evs, errs := collect(t, r, "w/", "", writers*changes)
	if len(errs) != 0 || len(evs) != writers*changes {
		t.Fatalf("the watch saw %d events and %v, want %d and no error", len(evs), errs, writers*changes)
	}
}

// TestWatchOwnRecordsUnlocked: a watcher settles the changes of its own
// Store from what their writers told it, without taking their ref's lock
// (a writer woke it while holding that lock, so the watcher blocked on the
// writer it was woken by); another Store's changes of the same folder (as
// another process's) are still confirmed under the lock. Either way each
// change is delivered once, in order.
func TestWatchOwnRecordsUnlocked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		other      bool // the writer is a second Store of the folder
		wantLocked bool
	}{
		{"same store", false, false},
		{"another store", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, nil)
			w := s
			if tc.other {
				var err error
				if w, err = disk.Open(s.Dir(), nil); err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			head, err := s.Refs().WatchHead(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// The watch runs (it has delivered "ready") before the changes
			// counted; so a writer of its Store tells it of each.
			const n = 12
			got := make(chan []cas.Event, 1)
			ready := make(chan struct{})
			go func() {
				ctx, cancel := context.WithTimeout(t.Context(), castest.WatchWakeBound)
				defer cancel()
				var evs []cas.Event
				for e, err := range s.Refs().Watch(ctx, "", head) {
					if err != nil {
						break
					}
					if e.Ref == "ready" {
						close(ready)
						continue
					}
					evs = append(evs, e)
					if len(evs) == n {
						break
					}
				}
				got <- evs
			}()
			mustCAS(t, w.Refs(), "ready", 0, hashOf("ready"), "ready")
			select {
			case <-ready:
			case <-time.After(castest.WatchWakeBound):
				t.Fatal("the watch did not deliver the first change")
			}
			before := disk.ConfirmedUnderLock(s)
			// Two refs moved alternately, each from the value before.
			prev := map[string]cas.Hash{}
			var want []string
			for i := range n {
				name := fmt.Sprintf("r%d", i%2)
				next := hashOf(fmt.Sprint("v", i))
				mustCAS(t, w.Refs(), name, prev[name], next, fmt.Sprint("m", i))
				prev[name] = next
				want = append(want, fmt.Sprint("m", i))
			}
			evs := <-got
			if g := strings.Join(messages(evs), " "); g != strings.Join(want, " ") {
				t.Fatalf("events %q, want %q", g, strings.Join(want, " "))
			}
			locked := disk.ConfirmedUnderLock(s) - before
			if tc.wantLocked && locked == 0 {
				t.Errorf("no record of another Store confirmed under its lock")
			}
			if !tc.wantLocked && locked != 0 {
				t.Errorf("%d of the Store's own records confirmed under their lock, want 0", locked)
			}
		})
	}
}
