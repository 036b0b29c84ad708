package thread_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// slowRefs wraps a store's refs: while hang is set, a compare-and-swap of
// a run record blocks until its context ends; while lose is above zero,
// one of a renewal is applied but answered with an error (its answer lost
// on the way back), lose counting down.
type slowRefs struct {
	cas.Refs
	mu   sync.Mutex
	hang bool
	lose int
}

func (r *slowRefs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if !strings.HasPrefix(name, thread.RunPrefix) {
		return r.Refs.CompareAndSwap(ctx, name, old, new, message)
	}
	r.mu.Lock()
	hang, lose := r.hang, r.lose > 0 && strings.HasPrefix(message, "renew")
	if lose {
		r.lose--
	}
	r.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	err := r.Refs.CompareAndSwap(ctx, name, old, new, message)
	if err == nil && lose {
		return errors.New("connection reset by peer (the answer was lost)")
	}
	return err
}

// The format version is the wrapped refs'.
func (r *slowRefs) FormatVersion(ctx context.Context) (int, error) {
	return r.Refs.(cas.FormatVersioner).FormatVersion(ctx)
}

func (r *slowRefs) BumpFormat(ctx context.Context, from, to int, want map[string]cas.Hash) error {
	return r.Refs.(cas.FormatVersioner).BumpFormat(ctx, from, to, want)
}

func newSlowEnv(t *testing.T) (*tenv, *slowRefs) {
	mem := cas.NewMemStore(nil)
	sr := &slowRefs{Refs: mem.Refs()}
	return newTEnvOn(t, &clock{t: time.Now().UTC()}, mem, sr), sr
}

// TestKeepRenewalHangs: a renewal that never answers does not hold the
// lease past its local validity: the lease's context is cancelled when the
// validity ends, not when (if ever) the store answers.
func TestKeepRenewalHangs(t *testing.T) {
	te, sr := newSlowEnv(t)
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	const length = 900 * time.Millisecond
	l, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: length})
	if err != nil {
		t.Fatal(err)
	}
	sr.mu.Lock()
	sr.hang = true
	sr.mu.Unlock()
	valid := l.ValidUntil()
	lctx, stop := l.Keep(te.ctx)
	defer stop()
	select {
	case <-lctx.Done():
	case <-time.After(10 * length):
		t.Fatal("the lease's context outlived its validity while a renewal hung")
	}
	if late := time.Since(valid); late > length {
		t.Errorf("the lease's context ended %v after its validity", late)
	}
	if err := context.Cause(lctx); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("cause = %v, want ErrLeaseLost", err)
	}
}

// TestKeepRenewalAnswerLost: a renewal applied by the store whose answer
// was lost does not lose the lease: the next renewal finds the record
// still this holder's and goes on from it.
func TestKeepRenewalAnswerLost(t *testing.T) {
	te, sr := newSlowEnv(t)
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	const length = 1500 * time.Millisecond
	l, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: length})
	if err != nil {
		t.Fatal(err)
	}
	sr.mu.Lock()
	sr.lose = 2
	sr.mu.Unlock()
	lctx, stop := l.Keep(te.ctx)
	time.Sleep(2 * length)
	if err := context.Cause(lctx); err != nil {
		t.Fatalf("the lease was lost after a renewal's answer was lost: %v", err)
	}
	stop()
	sr.mu.Lock()
	left := sr.lose
	sr.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d lost answers left: the renewals did not run", left)
	}
	if err := l.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	if got := te.runOf(id); got.Hash != l.Run().Hash {
		t.Errorf("the holder's record %s is not the stored one %s", l.Run().Hash, got.Hash)
	}
	if err := l.Release(te.ctx, "done"); err != nil {
		t.Fatal(err)
	}
}
