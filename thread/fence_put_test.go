package thread_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// slowPutStore is a store whose Put of bytes holding marker waits until
// wait returns, as a put of a large step on a slow disk does.
type slowPutStore struct {
	cas.Store
	marker []byte
	wait   func()
}

func (s *slowPutStore) Put(ctx context.Context, data []byte) (cas.Hash, error) {
	if bytes.Contains(data, s.marker) && s.wait != nil {
		s.wait()
	}
	return s.Store.Put(ctx, data)
}

// TestFenceAfterSlowPut checks the lease fence where the nodes' put is not
// one step with the move (the memory and disk stores, PostgreSQL's
// fallback): a lease that runs out while the nodes are written must stop
// the move, checked right before it, not only before the put.
func TestFenceAfterSlowPut(t *testing.T) {
	st, refs := openBackend(t, "memory", "lease")
	slow := &slowPutStore{Store: st, marker: []byte("outlasts-the-lease")}
	te := newTEnvOn(t, &clock{t: time.Now().UTC()}, slow, refs)
	id := te.start()
	l, err := te.e.Acquire(te.ctx, id, "wA", &thread.LeaseOptions{Length: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lctx, stop := l.Keep(te.ctx)
	stop() // no renewals: the lease runs out during the put
	slow.wait = func() { time.Sleep(time.Until(l.ValidUntil()) + 10*time.Millisecond) }
	before := te.head(id)
	if _, err := te.e.Suspend(lctx, id, "outlasts-the-lease"); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("a commit whose put outlasted the lease = %v, want ErrLeaseLost", err)
	}
	if got := te.head(id); got != before {
		t.Errorf("head moved to %s after the lease ran out during the put", got)
	}
}
