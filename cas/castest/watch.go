package castest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// Reopener is implemented by refs that can open the same store again, as
// another process would: Reopen returns refs sharing the store but nothing
// in memory with the receiver (for disk, another Store on the folder; for
// PostgreSQL, another pool). The watch tests use it to check that a change
// made through one wakes a watcher of the other within [WatchWakeBound];
// refs that do not implement it are checked within one instance.
type Reopener interface {
	Reopen(t *testing.T) cas.Refs
}

// WatchWakeBound is the longest a watcher may take to see a committed
// change, made by this process or another one sharing the store, in the
// conformance tests: a backend's polling fallback must wake well within
// it.
const WatchWakeBound = 10 * time.Second

// watchTests are the [cas.Watcher] conformance tests, run among the refs
// tests on refs that implement it (and skipped on refs that do not).
var watchTests = []struct {
	name string
	f    func(t *testing.T, e *refsEnv, w cas.Watcher)
}{
	{"WatchDelivers", testWatchDelivers},
	{"WatchPrefix", testWatchPrefix},
	{"WatchResume", testWatchResume},
	{"WatchHeadThenChange", testWatchHeadThenChange},
	{"WatchConcurrent", testWatchConcurrent},
	{"WatchInvalidCursor", testWatchInvalidCursor},
	{"WatchPruneImport", testWatchPruneImport},
	{"WatchPrunePrefix", testWatchPrunePrefix},
	{"WatchCancel", testWatchCancel},
	{"WatchOtherInstance", testWatchOtherInstance},
}

// watchItem is what a watch yielded.
type watchItem struct {
	ev  cas.Event
	err error
}

// watching is a watch running in its own goroutine.
type watching struct {
	ch     chan watchItem
	cancel context.CancelFunc
	done   chan struct{}
}

// startWatch runs w.Watch(prefix, after) until the test ends.
func startWatch(t *testing.T, w cas.Watcher, prefix string, after cas.Cursor) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wt := &watching{ch: make(chan watchItem, 1024), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(wt.done)
		defer close(wt.ch)
		for e, err := range w.Watch(ctx, prefix, after) {
			select {
			case wt.ch <- watchItem{e, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-wt.done
	})
	return wt
}

// next returns the next item, failing t if none comes within
// WatchWakeBound or the watch ended.
func (wt *watching) next(t *testing.T) watchItem {
	t.Helper()
	select {
	case it, ok := <-wt.ch:
		if !ok {
			t.Fatalf("the watch ended; want another event")
		}
		return it
	case <-time.After(WatchWakeBound):
		t.Fatalf("no event within %v", WatchWakeBound)
	}
	panic("unreachable")
}

// event returns the next event, failing t on an error.
func (wt *watching) event(t *testing.T) cas.Event {
	t.Helper()
	it := wt.next(t)
	if it.err != nil {
		t.Fatalf("watch yielded an error: %v", it.err)
	}
	return it.ev
}

// events returns the next n events, failing t on an error.
func (wt *watching) events(t *testing.T, n int) []cas.Event {
	t.Helper()
	out := make([]cas.Event, 0, n)
	for len(out) < n {
		out = append(out, wt.event(t))
	}
	return out
}

// sentinel moves a ref of its own under prefix and reads events until that
// change arrives, returning the events before it (other than earlier
// sentinels'): a way to see that nothing else was delivered without
// waiting for a timeout.
func (wt *watching) sentinel(t *testing.T, r cas.Refs, name string) []cas.Event {
	t.Helper()
	h, err := r.Get(t.Context(), name)
	if err != nil && !errors.Is(err, cas.ErrNotFound) {
		t.Fatal(err)
	}
	next := hv(900000 + uint64(time.Now().UnixNano()%100000))
	if next == h {
		next++
	}
	mustCAS(t, r, name, h, next, "sentinel")
	var before []cas.Event
	for {
		e := wt.event(t)
		if e.Ref == name && e.New == next && e.Message == "sentinel" {
			return before
		}
		if e.Message != "sentinel" {
			before = append(before, e)
		}
	}
}

// wantEvent compares an event with a change and checks its cursor is set.
func wantEvent(t *testing.T, i int, got cas.Event, ref string, want change) {
	t.Helper()
	if got.Ref != ref || got.Old != want.Old || got.New != want.New || got.Message != want.Message {
		t.Errorf("event %d = {%s %s->%s %q}, want {%s %s->%s %q}", i, got.Ref, got.Old, got.New, got.Message, ref, want.Old, want.New, want.Message)
	}
	if got.Cursor == "" {
		t.Errorf("event %d has no cursor", i)
	}
}

func watchHead(t *testing.T, w cas.Watcher) cas.Cursor {
	t.Helper()
	c, err := w.WatchHead(t.Context())
	if err != nil {
		t.Fatalf("WatchHead: %v", err)
	}
	return c
}

// testWatchDelivers: every committed CompareAndSwap and Replace is
// delivered once, in order, with the log's entry; a failed one (a
// conflict, a no-op) delivers nothing.
func testWatchDelivers(t *testing.T, e *refsEnv, w cas.Watcher) {
	r := e.r
	t0 := e.nowMilli(t)
	head := watchHead(t, w)
	wt := startWatch(t, w, "", head)
	mustCAS(t, r, "w/a", 0, hv(1), "create")
	mustCAS(t, r, "w/a", hv(1), hv(2), "move")
	if err := r.CompareAndSwap(t.Context(), "w/a", hv(1), hv(3), "stale"); err == nil {
		t.Fatal("a stale CompareAndSwap succeeded")
	}
	if err := r.CompareAndSwap(t.Context(), "w/a", 0, hv(3), "create again"); err == nil {
		t.Fatal("a second create succeeded")
	}
	mustCAS(t, r, "w/a", hv(2), hv(2), "no-op")
	if err := r.Replace(t.Context(), "w/a", hv(4), "replace"); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(t.Context(), "w/a", hv(4), "replace no-op"); err != nil {
		t.Fatal(err)
	}
	mustCAS(t, r, "w/b", 0, hv(5), "other")
	mustCAS(t, r, "w/a", hv(4), 0, "delete")
	want := []struct {
		ref string
		change
	}{
		{"w/a", change{0, hv(1), "create"}},
		{"w/a", change{hv(1), hv(2), "move"}},
		{"w/a", change{hv(2), hv(4), "replace"}},
		{"w/b", change{0, hv(5), "other"}},
		{"w/a", change{hv(4), 0, "delete"}},
	}
	got := wt.events(t, len(want))
	t1 := e.nowMilli(t)
	for i, w := range want {
		wantEvent(t, i, got[i], w.ref, w.change)
		if got[i].Time < t0 || got[i].Time > t1 {
			t.Errorf("event %d: Time %d outside [%d, %d]", i, got[i].Time, t0, t1)
		}
	}
	// The events carry the log's entries, times included.
	log := mustLog(t, r, "w/a")
	var fromEvents []cas.LogEntry
	for _, ev := range got {
		if ev.Ref == "w/a" {
			fromEvents = append(fromEvents, ev.Entry())
		}
	}
	if !slices.Equal(log, fromEvents) {
		t.Errorf("the events of w/a = %v, its log %v", fromEvents, log)
	}
	if extra := wt.sentinel(t, r, "w/sentinel"); len(extra) > 0 {
		t.Errorf("events after the last change: %+v", extra)
	}
}

// testWatchPrefix: only refs whose names start with the prefix, compared
// case-sensitively and as a string (not a folder).
func testWatchPrefix(t *testing.T, e *refsEnv, w cas.Watcher) {
	r := e.r
	wt := startWatch(t, w, "threads/", watchHead(t, w))
	all := startWatch(t, w, "", watchHead(t, w))
	mustCAS(t, r, "threads/x", 0, hv(1), "in")
	mustCAS(t, r, "workflows/x", 0, hv(2), "out")
	mustCAS(t, r, "threadsX", 0, hv(3), "out")
	mustCAS(t, r, "Threads/y", 0, hv(4), "out")
	mustCAS(t, r, "threads/z", 0, hv(5), "in")
	mustCAS(t, r, "threads/x", hv(1), hv(6), "in")
	got := wt.events(t, 3)
	wantEvent(t, 0, got[0], "threads/x", change{0, hv(1), "in"})
	wantEvent(t, 1, got[1], "threads/z", change{0, hv(5), "in"})
	wantEvent(t, 2, got[2], "threads/x", change{hv(1), hv(6), "in"})
	if extra := wt.sentinel(t, r, "threads/sentinel"); len(extra) > 0 {
		t.Errorf("events outside the prefix: %+v", extra)
	}
	if got := all.events(t, 7); got[6].Message != "sentinel" {
		t.Errorf("the unfiltered watch's 7th event = %+v, want the sentinel", got[6])
	}
}

// testWatchResume: a watch from any event's cursor yields exactly the
// events after it, and the zero cursor yields every change of a fresh
// store.
func testWatchResume(t *testing.T, e *refsEnv, w cas.Watcher) {
	r := e.r
	mustCAS(t, r, "r/a", 0, hv(1), "1")
	mustCAS(t, r, "r/b", 0, hv(2), "2")
	mustCAS(t, r, "r/a", hv(1), hv(3), "3")
	mustCAS(t, r, "r/b", hv(2), 0, "4")
	mustCAS(t, r, "r/c", 0, hv(5), "5")
	mustCAS(t, r, "r/a", hv(3), hv(6), "6")
	all := startWatch(t, w, "", "").events(t, 6)
	for i, ev := range all {
		if ev.Message != fmt.Sprint(i+1) {
			t.Fatalf("from the zero cursor, event %d = %+v, want message %d", i, ev, i+1)
		}
	}
	for i, ev := range all {
		wt := startWatch(t, w, "", ev.Cursor)
		got := wt.events(t, len(all)-i-1)
		for j, g := range got {
			if g.Message != all[i+1+j].Message || g.Ref != all[i+1+j].Ref || g.Cursor != all[i+1+j].Cursor {
				t.Errorf("from event %d's cursor, event %d = %+v, want %+v", i, j, g, all[i+1+j])
			}
		}
		if extra := wt.sentinel(t, r, fmt.Sprintf("r/sentinel%d", i)); len(extra) > 0 {
			t.Errorf("from event %d's cursor: events after the last change: %+v", i, extra)
		}
	}
	// A prefixed watch resumed from an event of another ref.
	wt := startWatch(t, w, "r/a", all[1].Cursor)
	for i, ev := range wt.events(t, 2) {
		if want := []string{"3", "6"}[i]; ev.Message != want {
			t.Errorf("r/a from event 1's cursor: event %d = %+v, want message %s", i, ev, want)
		}
	}
}

// testWatchHeadThenChange: a watch from WatchHead sees the change made
// after it, and nothing made before.
func testWatchHeadThenChange(t *testing.T, e *refsEnv, w cas.Watcher) {
	r := e.r
	mustCAS(t, r, "h/old", 0, hv(1), "before")
	head := watchHead(t, w)
	mustCAS(t, r, "h/new", 0, hv(2), "after")
	if again := watchHead(t, w); again == head {
		t.Errorf("WatchHead did not move after a change: %q", head)
	}
	wt := startWatch(t, w, "", head)
	wantEvent(t, 0, wt.event(t), "h/new", change{0, hv(2), "after"})
	// The head of a store with nothing new is stable.
	if a, b := watchHead(t, w), watchHead(t, w); a != b {
		t.Errorf("WatchHead with no change between: %q, then %q", a, b)
	}
}

// testWatchConcurrent: writers on many refs, from many goroutines, some
// racing on one ref: every committed change is delivered once, in its
// ref's log order, none twice.
func testWatchConcurrent(t *testing.T, e *refsEnv, w cas.Watcher) {
	const workers, per = 8, 12
	r := e.r
	ctx := t.Context()
	wt := startWatch(t, w, "c/", watchHead(t, w))
	mustCAS(t, r, "c/shared", 0, 1, "start")
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for k := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("c/own%d", k)
			var prev cas.Hash
			for i := range per {
				next := hv(uint64(k*1000 + i + 1))
				if err := r.CompareAndSwap(ctx, own, prev, next, fmt.Sprintf("%d/%d", k, i)); err != nil {
					errs[k] = err
					return
				}
				prev = next
				// One try at the shared ref: conflicts are expected and
				// must deliver nothing.
				cur, err := r.Get(ctx, "c/shared")
				if err != nil {
					errs[k] = err
					return
				}
				err = r.CompareAndSwap(ctx, "c/shared", cur, cur+1, "shared")
				var ce *cas.ConflictError
				if err != nil && !errors.As(err, &ce) {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	shared := mustLog(t, r, "c/shared")
	got := wt.events(t, workers*per+len(shared))
	byRef := map[string][]cas.LogEntry{}
	seen := map[cas.Cursor]bool{}
	for _, ev := range got {
		if seen[ev.Cursor] {
			t.Errorf("cursor %q delivered twice", ev.Cursor)
		}
		seen[ev.Cursor] = true
		byRef[ev.Ref] = append(byRef[ev.Ref], ev.Entry())
	}
	for k := range workers {
		own := fmt.Sprintf("c/own%d", k)
		if log := mustLog(t, r, own); !slices.Equal(byRef[own], log) {
			t.Errorf("events of %s = %v, want its log %v", own, byRef[own], log)
		}
	}
	if !slices.Equal(byRef["c/shared"], shared) {
		t.Errorf("events of c/shared = %v, want its log %v", byRef["c/shared"], shared)
	}
	if extra := wt.sentinel(t, r, "c/sentinel"); len(extra) > 0 {
		t.Errorf("events beyond the committed changes: %+v", extra)
	}
}

// testWatchInvalidCursor: a cursor the backend cannot read yields one error
// wrapping ErrInvalidCursor, and the watch ends.
func testWatchInvalidCursor(t *testing.T, e *refsEnv, w cas.Watcher) {
	mustCAS(t, e.r, "i/a", 0, hv(1), "create")
	for _, bad := range []cas.Cursor{"not a cursor", "%%%", "-1", "99999999999999999999999999", "0x10", " 1", "d1.zz.1"} {
		t.Run(string(bad), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), WatchWakeBound)
			defer cancel()
			n := 0
			for _, err := range w.Watch(ctx, "", bad) {
				n++
				if !errors.Is(err, cas.ErrInvalidCursor) {
					t.Errorf("Watch(%q) yielded %v, want an error wrapping ErrInvalidCursor", bad, err)
				}
			}
			if n != 1 {
				t.Errorf("Watch(%q) yielded %d items, want 1 error", bad, n)
			}
		})
	}
}

// testWatchPruneImport: PruneLog delivers nothing; ImportLog into an
// existing log delivers nothing, and ImportLog that creates a ref delivers
// one event carrying the merged log's newest entry; a watch from before
// them all delivers no change twice.
func testWatchPruneImport(t *testing.T, e *refsEnv, w cas.Watcher) {
	r := e.r
	ctx := t.Context()
	start := watchHead(t, w)
	wt := startWatch(t, w, "", start)
	mustCAS(t, r, "p/a", 0, hv(1), "create")
	mustCAS(t, r, "p/a", hv(1), hv(2), "move")
	mustCAS(t, r, "p/a", hv(2), hv(3), "move again")
	mustCAS(t, r, "p/gone", 0, hv(4), "create")
	mustCAS(t, r, "p/gone", hv(4), 0, "delete")
	wt.events(t, 5)
	tEnd := waitPastMilli(t, e.now, e.nowMilli(t))
	if n, err := r.PruneLog(ctx, tEnd); err != nil || n == 0 {
		t.Fatalf("PruneLog = %d, %v; want some entries removed", n, err)
	}
	ms := tEnd.UnixMilli()
	// Into an existing log: entries before its creation, and one of its
	// own again.
	if err := r.ImportLog(ctx, "p/a", []cas.LogEntry{
		{Old: 0, New: hv(7), Time: ms - 100000, Message: "foreign"},
		{Old: hv(7), New: 0, Time: ms - 90000, Message: "foreign delete"},
	}); err != nil {
		t.Fatal(err)
	}
	// Creating a ref: one event, the newest entry.
	imported := []cas.LogEntry{
		{Old: 0, New: hv(8), Time: ms - 50000, Message: "made elsewhere"},
		{Old: hv(8), New: hv(9), Time: ms - 40000, Message: "moved elsewhere"},
	}
	if err := r.ImportLog(ctx, "p/new", imported); err != nil {
		t.Fatal(err)
	}
	// Importing the same again changes nothing, and delivers nothing.
	if err := r.ImportLog(ctx, "p/new", imported); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PruneLog(ctx, tEnd); err != nil {
		t.Fatal(err)
	}
	after := wt.sentinel(t, r, "p/sentinel")
	if len(after) != 1 {
		t.Fatalf("after the prune and imports: events %+v, want the one creation", after)
	}
	if ev := after[0]; ev.Ref != "p/new" || ev.Entry() != imported[1] {
		t.Errorf("the creation by ImportLog: %+v, want p/new with %+v", ev, imported[1])
	}
	// A watch from the start again: each change at most once, the
	// creation and the sentinel among them. A backend may have trimmed
	// pruned changes (and says so with ErrCursorGone, once).
	again := startWatch(t, w, "", start)
	seen := map[string]int{}
	gone := 0
	for {
		it := again.next(t)
		if errors.Is(it.err, cas.ErrCursorGone) {
			gone++
			continue
		}
		if it.err != nil {
			t.Fatal(it.err)
		}
		key := fmt.Sprintf("%s %s %s %s", it.ev.Ref, it.ev.Old, it.ev.New, it.ev.Message)
		seen[key]++
		if it.ev.Message == "sentinel" {
			break
		}
	}
	if gone > 1 {
		t.Errorf("ErrCursorGone yielded %d times, want at most once", gone)
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("change %s delivered %d times", k, n)
		}
	}
	if seen[fmt.Sprintf("p/new %s %s made elsewhere", hv(8), hv(9))] != 0 || seen[fmt.Sprintf("p/new %s %s moved elsewhere", hv(8), hv(9))] != 1 {
		t.Errorf("the replay does not hold the import's creation once: %v", seen)
	}
}

// testWatchPrunePrefix: a change whose log entry a prefix's shorter
// retention pruned is never skipped unsaid: a watch from before it
// delivers it or yields ErrCursorGone (once); the changes of refs the
// default retention kept are all delivered, each once.
func testWatchPrunePrefix(t *testing.T, e *refsEnv, w cas.Watcher) {
	r := e.r
	ctx := t.Context()
	start := watchHead(t, w)
	mustCAS(t, r, "keep/b", 0, hv(1), "keep create")
	mustCAS(t, r, "keep/b", hv(1), hv(2), "keep move")
	mustCAS(t, r, "runs/a", 0, hv(1), "run create")
	mustCAS(t, r, "runs/a", hv(1), hv(2), "run move")
	mustCAS(t, r, "runs/a", hv(2), hv(3), "run newest")
	now := waitPastMilli(t, e.now, e.nowMilli(t))
	if n, err := r.PruneLog(ctx, now.Add(-time.Hour), cas.PrefixCutoff{Prefix: "runs/", Before: now}); err != nil || n != 1 {
		t.Fatalf("PruneLog(runs/ now, the rest an hour ago) = %d, %v; want runs/a's middle entry", n, err)
	}
	mustCAS(t, r, "keep/sentinel", 0, hv(9), "sentinel")
	wt := startWatch(t, w, "", start)
	seen := map[string]int{}
	gone := 0
	for {
		it := wt.next(t)
		if errors.Is(it.err, cas.ErrCursorGone) {
			gone++
			continue
		}
		if it.err != nil {
			t.Fatal(it.err)
		}
		if it.ev.Message == "sentinel" {
			break
		}
		seen[it.ev.Message]++
	}
	for _, m := range []string{"keep create", "keep move", "run create", "run newest"} {
		if seen[m] != 1 {
			t.Errorf("change %q delivered %d times, want once (its log entry is kept)", m, seen[m])
		}
	}
	if seen["run move"] > 1 || seen["run move"] == 0 && gone == 0 {
		t.Errorf("the pruned change delivered %d times and ErrCursorGone yielded %d times: want it delivered once, or skipped with ErrCursorGone", seen["run move"], gone)
	}
	if gone > 1 {
		t.Errorf("ErrCursorGone yielded %d times, want at most once", gone)
	}
}

// testWatchCancel: cancelling the context ends a waiting watch with the
// context's error.
func testWatchCancel(t *testing.T, e *refsEnv, w cas.Watcher) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		var last error
		for _, err := range w.Watch(ctx, "", watchHead(t, w)) {
			last = err
		}
		done <- last
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled watch ended with %v, want context.Canceled", err)
		}
	case <-time.After(WatchWakeBound):
		t.Fatalf("the watch did not end within %v of its context's cancellation", WatchWakeBound)
	}
	// An already-cancelled context: the error at once.
	n := 0
	for _, err := range w.Watch(ctx, "", "") {
		n++
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a watch on a cancelled context yielded %v, want context.Canceled", err)
		}
	}
	if n != 1 {
		t.Errorf("a watch on a cancelled context yielded %d items, want 1 error", n)
	}
}

// testWatchOtherInstance: a watcher of refs opened again on the same store
// (another process, for disk and PostgreSQL) is woken by a change made
// through the first, and the reverse, within WatchWakeBound, and the
// cursors of one are read by the other.
func testWatchOtherInstance(t *testing.T, e *refsEnv, w cas.Watcher) {
	ro, ok := e.r.(Reopener)
	if !ok {
		t.Skip("the refs cannot be opened again (cas/castest.Reopener): one instance")
	}
	r2 := ro.Reopen(t)
	w2, ok := r2.(cas.Watcher)
	if !ok {
		t.Fatalf("the reopened refs (%T) do not implement cas.Watcher", r2)
	}
	wt2 := startWatch(t, w2, "", watchHead(t, w2))
	wt1 := startWatch(t, w, "", watchHead(t, w))
	time.Sleep(50 * time.Millisecond) // let both wait
	mustCAS(t, e.r, "o/one", 0, hv(1), "from one")
	ev := wt2.event(t)
	wantEvent(t, 0, ev, "o/one", change{0, hv(1), "from one"})
	wantEvent(t, 0, wt1.event(t), "o/one", change{0, hv(1), "from one"})
	mustCAS(t, r2, "o/two", 0, hv(2), "from two")
	wantEvent(t, 1, wt1.event(t), "o/two", change{0, hv(2), "from two"})
	wantEvent(t, 1, wt2.event(t), "o/two", change{0, hv(2), "from two"})
	// A cursor handed out by one instance resumes on the other.
	wantEvent(t, 2, startWatch(t, w, "", ev.Cursor).event(t), "o/two", change{0, hv(2), "from two"})
}
