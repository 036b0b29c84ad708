package castest

import (
	"context"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// Corrupter is implemented by stores that can damage an object in place,
// for tests: Corrupt replaces the bytes stored at h without changing its
// address and reports whether h was present. [cas.MemStore] implements it.
// The suite runs its corruption tests only on stores that do.
type Corrupter interface {
	Corrupt(h cas.Hash, data []byte) bool
}

// RefDropper is implemented by refs that can lose a ref behind their own
// back, for tests: DropRef removes ref name without logging it, as a ref
// file deleted by hand would be, so its log says it exists while it does
// not (a missing ref), and reports whether it existed. The suite runs its
// missing-ref tests only on refs that do.
type RefDropper interface {
	DropRef(name string) bool
}

// Clock is implemented by refs that can tell the time by the clock their
// log entries use. [RunRefs] reads it to bound log times; [Run] uses the
// store's clock instead, so refs need not implement it there.
type Clock interface {
	Now(ctx context.Context) (time.Time, error)
}

// clock reads a backend's clock.
type clock func(ctx context.Context) (time.Time, error)

func localClock(context.Context) (time.Time, error) { return time.Now(), nil }

// Run runs every conformance test against backends made by open: a fresh,
// empty store and its refs for each subtest, sharing one clock: the store
// tests, the refs tests and the GC interleaving tests ([RunGC]). Store and
// GC tests re-hash every object when they end ([Verify]).
func Run(t *testing.T, open func(t *testing.T) (cas.Store, cas.Refs)) {
	t.Helper()
	t.Run("Store", func(t *testing.T) {
		RunStore(t, func(t *testing.T) cas.Store {
			s, _ := open(t)
			return s
		})
	})
	t.Run("Refs", func(t *testing.T) {
		runRefs(t, func(t *testing.T) (cas.Refs, clock) {
			s, r := open(t)
			return r, s.Now
		})
	})
	t.Run("GC", func(t *testing.T) { RunGC(t, open) })
}

// RunStore runs the [cas.Store] conformance tests against stores made by
// open, a fresh, empty one for each subtest. Each subtest re-hashes every
// object when it ends ([Verify]).
func RunStore(t *testing.T, open func(t *testing.T) cas.Store) {
	t.Helper()
	for _, tc := range storeTests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { Verify(t, s) })
			tc.f(t, s)
		})
	}
}

// RunRefs runs the [cas.Refs] conformance tests against refs made by open,
// fresh and empty for each subtest. Log times are checked against the refs'
// own clock if they implement [Clock], else against the local clock.
func RunRefs(t *testing.T, open func(t *testing.T) cas.Refs) {
	t.Helper()
	runRefs(t, func(t *testing.T) (cas.Refs, clock) {
		r := open(t)
		if c, ok := r.(Clock); ok {
			return r, c.Now
		}
		return r, localClock
	})
}

func runRefs(t *testing.T, open func(t *testing.T) (cas.Refs, clock)) {
	t.Helper()
	for _, tc := range refsTests {
		t.Run(tc.name, func(t *testing.T) {
			r, now := open(t)
			tc.f(t, &refsEnv{r: r, now: now, open: open})
		})
	}
	for _, tc := range watchTests {
		t.Run(tc.name, func(t *testing.T) {
			r, now := open(t)
			w, ok := r.(cas.Watcher)
			if !ok {
				t.Skipf("the refs (%T) do not implement cas.Watcher", r)
			}
			tc.f(t, &refsEnv{r: r, now: now, open: open}, w)
		})
	}
}

// Verify re-hashes every object of s (Get each one listed by All) and fails
// t on any error, or if a listed size is not the object's length. Tests
// register it with t.Cleanup; it uses its own context, since t's is done by
// then.
func Verify(t testing.TB, s cas.Store) {
	t.Helper()
	ctx := context.Background()
	for o, err := range s.All(ctx) {
		if err != nil {
			t.Errorf("verify store: All: %v", err)
			return
		}
		data, err := s.Get(ctx, o.Hash)
		if err != nil {
			t.Errorf("verify store: Get(%s): %v", o.Hash, err)
			continue
		}
		if int64(len(data)) != o.Size {
			t.Errorf("verify store: object %s is %d bytes, All says %d", o.Hash, len(data), o.Size)
		}
	}
}

// waitTimeout bounds every wait for a backend's clock to pass a time.
const waitTimeout = 2 * time.Second

// mustNow reads a clock, failing t on error.
func mustNow(t *testing.T, now clock) time.Time {
	t.Helper()
	tm, err := now(t.Context())
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	return tm
}

// waitPast sleeps until the clock reads after t0 and returns its reading.
func waitPast(t *testing.T, now clock, t0 time.Time) time.Time {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		tm := mustNow(t, now)
		if tm.After(t0) {
			return tm
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store's clock did not pass %v within %v (it reads %v)", t0, waitTimeout, tm)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitPastMilli sleeps until the clock reads a later millisecond than ms
// and returns its reading.
func waitPastMilli(t *testing.T, now clock, ms int64) time.Time {
	t.Helper()
	return waitPast(t, now, time.UnixMilli(ms).Add(time.Millisecond-1))
}
