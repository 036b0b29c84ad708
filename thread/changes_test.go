package thread_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// countingWatch wraps a memory store's refs and counts the watches and
// cursor reads asked of it.
type countingWatch struct {
	*cas.MemRefs
	watches, heads atomic.Int64
	failHeads      atomic.Int64 // the first failHeads WatchHead calls fail
}

func (r *countingWatch) WatchHead(ctx context.Context) (cas.Cursor, error) {
	if r.heads.Add(1) <= r.failHeads.Load() {
		return "", errors.New("connection refused")
	}
	return r.MemRefs.WatchHead(ctx)
}

func (r *countingWatch) Watch(ctx context.Context, prefix string, after cas.Cursor) iter.Seq2[cas.Event, error] {
	r.watches.Add(1)
	return r.MemRefs.Watch(ctx, prefix, after)
}

// TestLeasesShareOneWatch: the leases an engine keeps follow their run
// records through one shared watch of runs/, not one watch (and one cursor
// read) each, and each still sees its own record dropped at once.
func TestLeasesShareOneWatch(t *testing.T) {
	mem := cas.NewMemStore(nil)
	cw := &countingWatch{MemRefs: mem.Refs()}
	te := newTEnvOn(t, &clock{t: time.Now().UTC()}, mem, cw)
	const n = 6
	var leases []*thread.Lease
	var ctxs []context.Context
	for range n {
		id := te.start()
		if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		l, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		lctx, stop := l.Keep(te.ctx)
		t.Cleanup(stop)
		leases = append(leases, l)
		ctxs = append(ctxs, lctx)
	}
	if w, h := watchesAfter(cw, 1), cw.heads.Load(); w != 1 || h != 1 {
		t.Errorf("%d leases opened %d watches and read %d cursors, want 1 and 1", n, w, h)
	}
	// Dropping one record ends that lease alone.
	if _, err := te.e.DropRun(te.ctx, leases[2].Thread(), "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctxs[2].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the dropped lease's context was not cancelled through the shared watch")
	}
	time.Sleep(50 * time.Millisecond)
	for i, c := range ctxs {
		if i != 2 && c.Err() != nil {
			t.Errorf("lease %d ended by another's drop: %v", i, context.Cause(c))
		}
	}
}

// TestChanges: a subscriber is signalled for changes under its prefix only,
// changes made while it does not read coalesce into one signal, and the
// shared watch ends with its last subscriber (a new one starts another).
func TestChanges(t *testing.T) {
	mem := cas.NewMemStore(nil)
	cw := &countingWatch{MemRefs: mem.Refs()}
	te := newTEnvOn(t, &clock{t: time.Now().UTC()}, mem, cw)
	ctx := te.ctx
	a, stopA, err := te.e.Changes(ctx, thread.RunPrefix+"A")
	if err != nil {
		t.Fatal(err)
	}
	all, stopAll, err := te.e.Changes(ctx, thread.RunPrefix)
	if err != nil {
		t.Fatal(err)
	}
	slots, stopSlots, err := te.e.Changes(ctx, thread.SlotPrefix)
	if err != nil {
		t.Fatal(err)
	}
	got := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(300 * time.Millisecond):
			return false
		}
	}
	for i := range 3 {
		if err := cw.CompareAndSwap(ctx, thread.RunPrefix+"B", cas.Hash(i), cas.Hash(i+1), "b"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the three delivered, not read
	if !got(all) {
		t.Error("runs/ was not signalled a change of runs/B")
	}
	if got(all) {
		t.Error("three changes read late gave more than one signal")
	}
	if got(a) {
		t.Error("runs/A was signalled a change of runs/B")
	}
	if got(slots) {
		t.Error("slots/ was signalled a change of runs/B")
	}
	if err := cw.CompareAndSwap(ctx, thread.RunPrefix+"A", 0, 1, "a"); err != nil {
		t.Fatal(err)
	}
	if !got(a) || !got(all) {
		t.Error("a change of runs/A was not signalled to runs/A and runs/")
	}
	if w := watchesAfter(cw, 2); w != 2 {
		t.Errorf("%d watches for three subscribers under runs/ and slots/, want 2", w)
	}
	stopA()
	stopAll()
	stopSlots()
	b, stopB, err := te.e.Changes(ctx, thread.RunPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer stopB()
	if w := watchesAfter(cw, 3); w != 3 {
		t.Errorf("%d watches after the last subscriber left and a new one came, want 3", w)
	}
	if err := cw.CompareAndSwap(ctx, thread.RunPrefix+"A", 1, 2, "a"); err != nil {
		t.Fatal(err)
	}
	if !got(b) {
		t.Error("the new subscriber was not signalled")
	}
	// Two threads' heads (calls waiting for their branches) share one
	// watch of threads/.
	for _, id := range []string{"X", "Y"} {
		_, stop, err := te.e.Changes(ctx, thread.ThreadPrefix+id)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	if w := watchesAfter(cw, 4); w != 4 {
		t.Errorf("%d watches after two subscribers under threads/, want 4", w)
	}
}

// watchesAfter returns the count of watches once it reached want (a
// shared watch starts in the background), or after a second.
func watchesAfter(cw *countingWatch, want int64) int64 {
	for range 100 {
		if cw.watches.Load() >= want {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and no more
	return cw.watches.Load()
}

// TestLeaseWatchRetries: a lease whose watch could not start (the store
// did not answer) tries again, and still sees its record dropped long
// before a renewal would.
func TestLeaseWatchRetries(t *testing.T) {
	mem := cas.NewMemStore(nil)
	cw := &countingWatch{MemRefs: mem.Refs()}
	te := newTEnvOn(t, &clock{t: time.Now().UTC()}, mem, cw)
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cw.failHeads.Store(1)
	lctx, stop := l.Keep(te.ctx)
	defer stop()
	for i := 0; cw.heads.Load() < 2 && i < 300; i++ { // the failed start, then the retry
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := te.e.DropRun(te.ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a lease whose watch failed to start did not see its record dropped")
	}
}
