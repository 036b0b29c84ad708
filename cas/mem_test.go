package cas_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

func TestMemConformance(t *testing.T) {
	castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
		s := cas.NewMemStore(nil)
		t.Cleanup(func() { castest.Verify(t, s) })
		return s, droppableMem{s.Refs()}
	})
}

// droppableMem adds castest.RefDropper to memory refs.
type droppableMem struct{ *cas.MemRefs }

func (d droppableMem) DropRef(name string) bool {
	if _, err := d.Get(context.Background(), name); err != nil {
		return false
	}
	cas.DropMemRef(d.MemRefs, name)
	return true
}

func ExampleNewMemStore() {
	ctx := context.Background()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := cas.NewMemStore(&cas.MemOptions{Now: func() time.Time { return clock }})

	h, err := s.Put(ctx, []byte("hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	data, err := s.Get(ctx, h)
	fmt.Println(h, string(data), err)

	refs := s.Refs()
	if err := refs.CompareAndSwap(ctx, "greetings/latest", cas.Hash(0), h, "first greeting"); err != nil {
		fmt.Println(err)
		return
	}
	err = refs.CompareAndSwap(ctx, "greetings/latest", cas.Hash(0), h, "again")
	fmt.Println(errors.Is(err, cas.ErrConflict), err)

	log, _ := refs.Log(ctx, "greetings/latest")
	for _, e := range log {
		fmt.Println(e.Old, "->", e.New, time.UnixMilli(e.Time).UTC().Format(time.RFC3339), e.Message)
	}
	// Output:
	// 2DHW2FP49YVD3 hello <nil>
	// true ref greetings/latest already exists: it is at 2DHW2FP49YVD3
	// 0000000000000 -> 2DHW2FP49YVD3 2026-01-02T03:04:05Z first greeting
}

// fakeClock is a settable clock for memory-store tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newFakeMem(t *testing.T) (*cas.MemStore, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s := cas.NewMemStore(&cas.MemOptions{Now: c.now})
	t.Cleanup(func() { castest.Verify(t, s) })
	return s, c
}

func objectTime(t *testing.T, s cas.Store, h cas.Hash) time.Time {
	t.Helper()
	for o, err := range s.All(t.Context()) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		if o.Hash == h {
			return o.Time
		}
	}
	t.Fatalf("All does not list %s", h)
	return time.Time{}
}

func TestMemClock(t *testing.T) {
	ctx := t.Context()
	s, c := newFakeMem(t)
	start := c.t
	if got, err := s.Now(ctx); err != nil || !got.Equal(start) {
		t.Errorf("Now = %v, %v; want %v", got, err, start)
	}
	if got, err := s.Refs().Now(ctx); err != nil || !got.Equal(start) {
		t.Errorf("Refs().Now = %v, %v; want %v", got, err, start)
	}
	h, _ := s.Put(ctx, []byte("clocked"))
	if got := objectTime(t, s, h); !got.Equal(start) {
		t.Errorf("Time after Put = %v, want %v", got, start)
	}
	c.advance(time.Minute)
	if err := s.Touch(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got := objectTime(t, s, h); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("Time after Touch = %v, want %v", got, start.Add(time.Minute))
	}
	c.advance(time.Minute)
	if _, err := s.Put(ctx, []byte("clocked")); err != nil {
		t.Fatal(err)
	}
	if got := objectTime(t, s, h); !got.Equal(start.Add(2 * time.Minute)) {
		t.Errorf("Time after re-Put = %v, want %v", got, start.Add(2*time.Minute))
	}
	if ok, _ := s.DeleteIfOlder(ctx, h, start.Add(2*time.Minute)); ok {
		t.Errorf("DeleteIfOlder(cutoff = Time) deleted")
	}
	if ok, _ := s.DeleteIfOlder(ctx, h, start.Add(2*time.Minute+time.Nanosecond)); !ok {
		t.Errorf("DeleteIfOlder(cutoff = Time + 1ns) kept the object")
	}

	r := s.Refs()
	if err := r.CompareAndSwap(ctx, "clocked", 0, h, "create"); err != nil {
		t.Fatal(err)
	}
	log, _ := r.Log(ctx, "clocked")
	if want := c.t.UnixMilli(); len(log) != 1 || log[0].Time != want {
		t.Errorf("Log = %v, want one entry at %d", log, want)
	}
	if s.Refs() != r {
		t.Errorf("Refs returns a different *MemRefs on each call")
	}
}

func TestMemPruneLogMillisecondCutoff(t *testing.T) {
	ctx := t.Context()
	s, c := newFakeMem(t)
	c.t = time.UnixMilli(1_700_000_000_123).Add(400 * time.Microsecond)
	r := s.Refs()
	for _, name := range []string{"a", "b"} {
		if err := r.CompareAndSwap(ctx, name, 0, 1, "create"); err != nil {
			t.Fatal(err)
		}
		if err := r.CompareAndSwap(ctx, name, 1, 0, "delete"); err != nil {
			t.Fatal(err)
		}
	}
	// The entries are at ...123 ms; a cutoff within that millisecond is
	// after it, so they are older.
	tests := []struct {
		before time.Time
		want   int
	}{
		{time.UnixMilli(1_700_000_000_123), 0},
		{time.UnixMilli(1_700_000_000_123).Add(time.Microsecond), 4},
	}
	for _, tc := range tests {
		n, err := r.PruneLog(ctx, tc.before)
		if err != nil || n != tc.want {
			t.Errorf("PruneLog(%v) = %d, %v; want %d", tc.before, n, err, tc.want)
		}
	}
}

// firstByte addresses data by its first byte only, so "ab" and "ac"
// collide.
func firstByte(data []byte) cas.Hash { return cas.Sum(data[:min(1, len(data))]) }

func TestMemCollision(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemStore(nil)
	cas.SetMemHash(s, firstByte)
	h, err := s.Put(ctx, []byte("ab"))
	if err != nil || h != firstByte([]byte("ab")) {
		t.Fatalf("Put(ab) = %s, %v", h, err)
	}
	_, err = s.Put(ctx, []byte("ac"))
	var oe *cas.ObjectError
	if !errors.Is(err, cas.ErrCollision) || !errors.As(err, &oe) || oe.Op != "put" || oe.Hash != h {
		t.Fatalf("Put(colliding bytes) error = %#v, want an *ObjectError{put, %s} wrapping ErrCollision", err, h)
	}
	if got, err := s.Get(ctx, h); string(got) != "ab" || err != nil {
		t.Errorf("after a collision, Get = %q, %v; want the first bytes", got, err)
	}
	if _, err := s.PutBatch(ctx, [][]byte{[]byte("xyz"), []byte("ad"), []byte("qrs")}); !errors.Is(err, cas.ErrCollision) {
		t.Errorf("PutBatch(with colliding bytes) error = %v, want ErrCollision", err)
	}
	if got, _ := s.Get(ctx, h); string(got) != "ab" {
		t.Errorf("after a colliding batch, Get = %q, want ab", got)
	}
	if ok, _ := s.Has(ctx, firstByte([]byte("xyz"))); !ok {
		t.Errorf("a batch stores the objects before a failing one")
	}
	if ok, _ := s.Has(ctx, firstByte([]byte("qrs"))); ok {
		t.Errorf("a batch stored an object after the failing one")
	}

	// Corrupt bytes at the address are healed by any bytes that hash there.
	s.Corrupt(h, []byte("zz"))
	if _, err := s.Get(ctx, h); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("Get(corrupt) error = %v, want ErrCorrupt", err)
	}
	if got, err := s.Put(ctx, []byte("ac")); err != nil || got != h {
		t.Fatalf("Put over corrupt bytes = %s, %v; want %s, nil", got, err, h)
	}
	if got, _ := s.Get(ctx, h); string(got) != "ac" {
		t.Errorf("after healing, Get = %q, want ac", got)
	}
	castest.Verify(t, s)
}

func TestMemObjectErrors(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemStore(nil)
	absent := cas.Sum([]byte("absent"))
	h, _ := s.Put(ctx, []byte("present"))
	s.Corrupt(h, []byte("damaged"))
	_, getAbsent := s.Get(ctx, absent)
	_, getCorrupt := s.Get(ctx, h)
	tests := []struct {
		name string
		err  error
		op   string
		hash cas.Hash
		is   error
	}{
		{"get absent", getAbsent, "get", absent, cas.ErrNotFound},
		{"get corrupt", getCorrupt, "get", h, cas.ErrCorrupt},
		{"touch absent", s.Touch(ctx, absent), "touch", absent, cas.ErrNotFound},
	}
	for _, tc := range tests {
		var oe *cas.ObjectError
		if !errors.As(tc.err, &oe) || oe.Op != tc.op || oe.Hash != tc.hash || !errors.Is(tc.err, tc.is) {
			t.Errorf("%s: error = %#v, want an *ObjectError{%s, %s} wrapping %v", tc.name, tc.err, tc.op, tc.hash, tc.is)
		}
	}
	if s.Corrupt(absent, nil) {
		t.Errorf("Corrupt(absent) = true")
	}
	s.Put(ctx, []byte("present")) // heal, for Verify
	castest.Verify(t, s)
}

// TestMemCancelledContext pins that every memory-store method honours a
// done context, which the conformance suite demands of only some.
func TestMemCancelledContext(t *testing.T) {
	s := cas.NewMemStore(nil)
	r := s.Refs()
	h, _ := s.Put(t.Context(), []byte("present"))
	if err := r.CompareAndSwap(t.Context(), "present", 0, h, "create"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	errOf := func(_ any, err error) error { return err }
	tests := []struct {
		name string
		err  error
	}{
		{"Get", errOf(s.Get(ctx, h))},
		{"Put", errOf(s.Put(ctx, []byte("new")))},
		{"PutBatch", errOf(s.PutBatch(ctx, [][]byte{[]byte("new")}))},
		{"Has", errOf(s.Has(ctx, h))},
		{"Touch", s.Touch(ctx, h)},
		{"DeleteIfOlder", errOf(s.DeleteIfOlder(ctx, h, time.Now().Add(time.Hour)))},
		{"Lock", errOf(s.Lock(ctx, false))},
		{"LockGC", errOf(s.LockGC(ctx))},
		{"Now", errOf(s.Now(ctx))},
		{"Refs.Now", errOf(r.Now(ctx))},
		{"Refs.Get", errOf(r.Get(ctx, "present"))},
		{"Refs.CompareAndSwap", r.CompareAndSwap(ctx, "present", h, 0, "delete")},
		{"Refs.Log", errOf(r.Log(ctx, "present"))},
		{"Refs.PruneLog", errOf(r.PruneLog(ctx, time.Now().Add(time.Hour)))},
		{"Refs.ImportLog", r.ImportLog(ctx, "imported", []cas.LogEntry{{New: h, Time: 1}})},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, context.Canceled) {
			t.Errorf("%s(cancelled ctx) error = %v, want one wrapping context.Canceled", tc.name, tc.err)
		}
	}
	if ok, _ := s.Has(t.Context(), cas.Sum([]byte("new"))); ok {
		t.Errorf("a cancelled Put stored its object")
	}
	if got, _ := r.Get(t.Context(), "present"); got != h {
		t.Errorf("a cancelled CompareAndSwap moved the ref")
	}
}

// TestMemLockWriterPreference pins the memory lock's fairness: once an
// exclusive request waits, later shared requests wait behind it.
func TestMemLockWriterPreference(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemStore(nil)
	first, err := s.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	go func() {
		u, err := s.Lock(ctx, true)
		if err == nil {
			order <- "exclusive"
			time.Sleep(5 * time.Millisecond)
			u()
		}
	}()
	time.Sleep(20 * time.Millisecond) // the exclusive request is waiting now
	go func() {
		u, err := s.Lock(ctx, false)
		if err == nil {
			order <- "shared"
			u()
		}
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case who := <-order:
		t.Fatalf("%s granted while a shared hold remains", who)
	default:
	}
	first()
	if a, b := <-order, <-order; a != "exclusive" || b != "shared" {
		t.Errorf("grant order = %s, %s; want the waiting exclusive request first", a, b)
	}
}
