package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
)

// objTime returns the age the store records for h.
func objTime(t *testing.T, s cas.Store, h cas.Hash) time.Time {
	t.Helper()
	for o, err := range s.All(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		if o.Hash == h {
			return o.Time
		}
	}
	t.Fatalf("object %s not listed", h)
	return time.Time{}
}

// isAbsentTouch: the error a fast path gives for an absent object to
// refresh.
func isAbsentTouch(err error, h cas.Hash) bool {
	var oe *cas.ObjectError
	return errors.As(err, &oe) && oe.Op == "touch" && oe.Hash == h && errors.Is(err, cas.ErrNotFound)
}

// TestPutLinked: the objects are stored only if every edge is there; an
// absent edge is named and nothing is stored; a collision takes the
// transaction and is refused as Put refuses it.
func TestPutLinked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	edge, err := s.Put(ctx, []byte("edge"))
	if err != nil {
		t.Fatal(err)
	}
	absent := cas.Sum([]byte("absent edge"))
	tests := []struct {
		name   string
		data   []string
		edges  []cas.Hash
		absent bool
	}{
		{"no edges", []string{"a", "b", "a"}, nil, false},
		{"present edge", []string{"c"}, []cas.Hash{edge, edge}, false},
		{"absent edge", []string{"d", "e"}, []cas.Hash{edge, absent}, true},
		{"re-put", []string{"a", "f"}, []cas.Hash{edge}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var data [][]byte
			for _, d := range tc.data {
				data = append(data, []byte(d))
			}
			hs, err := s.PutLinked(ctx, data, tc.edges)
			if tc.absent {
				if !isAbsentTouch(err, absent) {
					t.Fatalf("PutLinked with an absent edge = %v, want an *ObjectError touch %s wrapping ErrNotFound", err, absent)
				}
				for _, d := range data {
					if ok, _ := s.Has(ctx, cas.Sum(d)); ok {
						t.Errorf("%q stored although an edge is absent", d)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("PutLinked: %v", err)
			}
			for i, d := range data {
				if hs[i] != cas.Sum(d) {
					t.Errorf("hash %d = %s, want %s", i, hs[i], cas.Sum(d))
				}
				if got, err := s.Get(ctx, hs[i]); err != nil || string(got) != string(d) {
					t.Errorf("Get(%s) = %q, %v; want %q", hs[i], got, err, d)
				}
			}
		})
	}

	c := newStore(t)
	postgres.SetHash(c, func(b []byte) cas.Hash {
		if strings.HasPrefix(string(b), "collide") {
			return 42
		}
		return cas.Sum(b)
	})
	if _, err := c.Put(ctx, []byte("collide A")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutLinked(ctx, [][]byte{[]byte("collide B")}, nil); !errors.Is(err, cas.ErrCollision) {
		t.Errorf("PutLinked at a taken address = %v, want ErrCollision", err)
	}
	if got, err := c.Get(ctx, 42); err != nil || string(got) != "collide A" {
		t.Errorf("Get(42) = %q, %v; want A, untouched", got, err)
	}
}

// TestLinkedRefresh: the fast paths leave an age refreshed within the last
// second alone while no GC runs, and refresh it while one holds the GC lock
// (its sweep relies on the refresh).
func TestLinkedRefresh(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	edge, err := s.Put(ctx, []byte("hot edge"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := objTime(t, s, edge)
	if _, err := s.PutLinked(ctx, [][]byte{[]byte("one")}, []cas.Hash{edge}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutLinked(ctx, [][]byte{[]byte("hot edge")}, nil); err != nil {
		t.Fatal(err)
	}
	if got := objTime(t, s, edge); !got.Equal(t0) {
		t.Errorf("with no GC running, a fresh edge was refreshed: %v -> %v", t0, got)
	}
	unlock, err := s.LockGC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutLinked(ctx, [][]byte{[]byte("two")}, []cas.Hash{edge}); err != nil {
		t.Fatal(err)
	}
	t1 := objTime(t, s, edge)
	if !t1.After(t0) {
		t.Errorf("with a GC running, the edge was not refreshed: %v -> %v", t0, t1)
	}
	if _, err := s.PutLinked(ctx, [][]byte{[]byte("hot edge")}, nil); err != nil {
		t.Fatal(err)
	}
	if t2 := objTime(t, s, edge); !t2.After(t1) {
		t.Errorf("with a GC running, a re-put was not refreshed: %v -> %v", t1, t2)
	}
	unlock()
	h := cas.Sum([]byte("one"))
	before := objTime(t, s, h)
	time.Sleep(1100 * time.Millisecond)
	if _, err := s.PutLinked(ctx, [][]byte{[]byte("three")}, []cas.Hash{h}); err != nil {
		t.Fatal(err)
	}
	if got := objTime(t, s, h); !got.After(before.Add(time.Second)) {
		t.Errorf("an age over a second old was not refreshed: %v -> %v", before, got)
	}
}

// TestSwapTouching: a move refreshes its target and logs; a stale old is
// a conflict carrying the current value; an absent target changes nothing;
// a create, a delete or another store's refs take the slow path.
func TestSwapTouching(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	r := s.Refs()
	a, _ := s.Put(ctx, []byte("node a"))
	b, _ := s.Put(ctx, []byte("node b"))
	if err := r.CompareAndSwap(ctx, "threads/x", 0, a, "create"); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.LockGC(ctx) // so the refresh is not skipped
	if err != nil {
		t.Fatal(err)
	}
	tb := objTime(t, s, b)
	if ok, err := r.SwapTouching(ctx, s, "threads/x", a, b, "step"); !ok || err != nil {
		t.Fatalf("SwapTouching = %v, %v", ok, err)
	}
	unlock()
	if got := objTime(t, s, b); !got.After(tb) {
		t.Errorf("the target was not refreshed: %v -> %v", tb, got)
	}
	var ce *cas.ConflictError
	if ok, err := r.SwapTouching(ctx, s, "threads/x", a, b, "stale"); !ok || !errors.As(err, &ce) || ce.Current != b {
		t.Errorf("SwapTouching from a stale old = %v, %v; want a conflict with current %s", ok, err, b)
	}
	absent := cas.Sum([]byte("absent node"))
	if ok, err := r.SwapTouching(ctx, s, "threads/x", b, absent, "absent"); !ok || !isAbsentTouch(err, absent) {
		t.Errorf("SwapTouching to an absent node = %v, %v; want an *ObjectError touch wrapping ErrNotFound", ok, err)
	}
	if h, err := r.Get(ctx, "threads/x"); err != nil || h != b {
		t.Errorf("ref = %s, %v; want %s", h, err, b)
	}
	log, err := r.Log(ctx, "threads/x")
	if err != nil || len(log) != 2 || log[1].Old != a || log[1].New != b || log[1].Message != "step" {
		t.Errorf("log = %+v, %v; want the create and one step", log, err)
	}
	if ok, err := r.SwapTouching(ctx, corruptible{s, t}, "threads/x", b, a, "wrapped"); !ok || err != nil {
		t.Errorf("SwapTouching through a wrapper with Unwrap = %v, %v; want the fast path", ok, err)
	}
	other := newStore(t)
	for _, tc := range []struct {
		name     string
		st       cas.Store
		old, new cas.Hash
	}{
		{"create", s, 0, a},
		{"same", s, b, b},
		{"other store", other, b, a},
	} {
		if ok, err := r.SwapTouching(ctx, tc.st, "threads/y", tc.old, tc.new, tc.name); ok || err != nil {
			t.Errorf("%s: SwapTouching = %v, %v; want false, nil (the slow path)", tc.name, ok, err)
		}
	}
}
