package castest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// storeTests are the [cas.Store] conformance tests, each run on a fresh store.
var storeTests = []struct {
	name string
	f    func(t *testing.T, s cas.Store)
}{
	{"PutGet", testPutGet},
	{"GetReturnsCopy", testGetReturnsCopy},
	{"PutCopiesInput", testPutCopiesInput},
	{"GetAbsent", testGetAbsent},
	{"PutTwice", testPutTwice},
	{"PutRefreshesAge", testPutRefreshesAge},
	{"Has", testHas},
	{"HasBatch", testHasBatch},
	{"Touch", testTouch},
	{"All", testAll},
	{"AllEarlyStop", testAllEarlyStop},
	{"AllBodyUsesStore", testAllBodyUsesStore},
	{"DeleteIfOlder", testDeleteIfOlder},
	{"DeleteIfOlderRacesTouch", testDeleteRacesTouch},
	{"DeleteIfOlderRacesPut", testDeleteRacesPut},
	{"DeleteIfOlderBatch", testDeleteIfOlderBatch},
	{"ConcurrentPuts", testConcurrentPuts},
	{"PutBatch", testPutBatch},
	{"Now", testNow},
	{"LockExclusive", testLockExclusive},
	{"LockShared", testLockShared},
	{"LockUnlockIdempotent", testLockUnlockIdempotent},
	{"LockCancelWhileWaiting", testLockCancel},
	{"LockWriterNotStarved", testLockWriterNotStarved},
	{"LockIsAdvisory", testLockIsAdvisory},
	{"LockGC", testLockGC},
	{"CancelledContext", testStoreCancelledContext},
	{"Corruption", testCorruption},
}

// Lock waits: how long a request that must be granted may take, and how
// long one that must stay blocked is watched.
const (
	grantWait   = 2 * time.Second
	blockedWait = 50 * time.Millisecond
)

func mustPut(t *testing.T, s cas.Store, data []byte) cas.Hash {
	t.Helper()
	h, err := s.Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	if want := cas.Sum(data); h != want {
		t.Fatalf("Put(%d bytes) = %s, want %s", len(data), h, want)
	}
	return h
}

func mustGet(t *testing.T, s cas.Store, h cas.Hash) []byte {
	t.Helper()
	data, err := s.Get(t.Context(), h)
	if err != nil {
		t.Fatalf("Get(%s): %v", h, err)
	}
	return data
}

func mustHas(t *testing.T, s cas.Store, h cas.Hash) bool {
	t.Helper()
	ok, err := s.Has(t.Context(), h)
	if err != nil {
		t.Fatalf("Has(%s): %v", h, err)
	}
	return ok
}

func mustDelete(t *testing.T, s cas.Store, h cas.Hash, cutoff time.Time) bool {
	t.Helper()
	ok, err := s.DeleteIfOlder(t.Context(), h, cutoff)
	if err != nil {
		t.Fatalf("DeleteIfOlder(%s, %v): %v", h, cutoff, err)
	}
	return ok
}

// listAll returns every object All lists, failing t on an error or a hash
// listed twice.
func listAll(t *testing.T, s cas.Store) map[cas.Hash]cas.Object {
	t.Helper()
	objs := make(map[cas.Hash]cas.Object)
	for o, err := range s.All(t.Context()) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		if _, dup := objs[o.Hash]; dup {
			t.Errorf("All lists %s twice", o.Hash)
		}
		objs[o.Hash] = o
	}
	return objs
}

// object returns h's listing by All, failing t if it is not listed.
func object(t *testing.T, s cas.Store, h cas.Hash) cas.Object {
	t.Helper()
	o, ok := listAll(t, s)[h]
	if !ok {
		t.Fatalf("All does not list %s", h)
	}
	return o
}

// blob returns n deterministic pseudo-random bytes; seed picks the sequence.
func blob(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// inTime fails t unless lo <= tm <= hi.
func inTime(t *testing.T, what string, tm, lo, hi time.Time) {
	t.Helper()
	if tm.Before(lo) || tm.After(hi) {
		t.Errorf("%s = %v, want within [%v, %v]", what, tm, lo, hi)
	}
}

// within runs f and fails t if it has not returned after d: a deadlock
// check. f must not call t.Fatal.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v (deadlock?)", what, d)
	}
}

func testPutGet(t *testing.T, s cas.Store) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"nil", nil},
		{"one byte", []byte{0}},
		{"text", []byte("hello")},
		{"binary", blob(4096, 1)},
		{"1MiB", blob(1<<20, 2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := s.Put(t.Context(), tc.data)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if want := cas.Sum(tc.data); h != want {
				t.Fatalf("Put = %s, want %s", h, want)
			}
			got := mustGet(t, s, h)
			if !bytes.Equal(got, tc.data) {
				t.Errorf("Get(%s) = %d bytes, want the %d put", h, len(got), len(tc.data))
			}
			if !mustHas(t, s, h) {
				t.Errorf("Has(%s) = false after Put", h)
			}
			if o := object(t, s, h); o.Size != int64(len(tc.data)) {
				t.Errorf("All lists %s with size %d, want %d", h, o.Size, len(tc.data))
			}
		})
	}
}

func testGetReturnsCopy(t *testing.T, s cas.Store) {
	want := []byte("immutable bytes")
	h := mustPut(t, s, want)
	got := mustGet(t, s, h)
	for i := range got {
		got[i] = 'X'
	}
	if again := mustGet(t, s, h); !bytes.Equal(again, want) {
		t.Errorf("after mutating a Get result, Get(%s) = %q, want %q", h, again, want)
	}
}

func testPutCopiesInput(t *testing.T, s cas.Store) {
	data := []byte("original bytes")
	want := bytes.Clone(data)
	h := mustPut(t, s, data)
	for i := range data {
		data[i] = 'X'
	}
	if got := mustGet(t, s, h); !bytes.Equal(got, want) {
		t.Errorf("after mutating the slice given to Put, Get(%s) = %q, want %q", h, got, want)
	}
}

func testGetAbsent(t *testing.T, s cas.Store) {
	h := cas.Sum([]byte("never stored"))
	data, err := s.Get(t.Context(), h)
	if !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get(absent %s) error = %v, want one wrapping ErrNotFound", h, err)
	}
	if data != nil {
		t.Errorf("Get(absent) returned %d bytes with its error", len(data))
	}
	if !strings.Contains(err.Error(), h.String()) {
		t.Errorf("Get(absent) error %q does not name the hash %s", err, h)
	}
	if mustHas(t, s, h) {
		t.Errorf("Has(absent %s) = true", h)
	}
}

func testPutTwice(t *testing.T, s cas.Store) {
	data := []byte("put twice")
	h1 := mustPut(t, s, data)
	h2 := mustPut(t, s, bytes.Clone(data))
	if h1 != h2 {
		t.Errorf("Put twice = %s, %s; want the same hash", h1, h2)
	}
	objs := listAll(t, s)
	if len(objs) != 1 {
		t.Fatalf("All lists %d objects after putting one twice, want 1", len(objs))
	}
	if o := objs[h1]; o.Size != int64(len(data)) {
		t.Errorf("All lists %v, want %s with size %d", o, h1, len(data))
	}
}

func testPutRefreshesAge(t *testing.T, s cas.Store) {
	data := []byte("refresh me")
	h := mustPut(t, s, data)
	t1 := waitPast(t, s.Now, object(t, s, h).Time)
	mustPut(t, s, data)
	if o := object(t, s, h); o.Time.Before(t1) {
		t.Errorf("after a re-Put at or after %v, the object's Time is %v", t1, o.Time)
	}
	if mustDelete(t, s, h, t1) {
		t.Errorf("DeleteIfOlder(cutoff taken before a re-Put) deleted the object")
	}
}

func testHas(t *testing.T, s cas.Store) {
	h := cas.Sum([]byte("has"))
	if mustHas(t, s, h) {
		t.Fatalf("Has(%s) = true before Put", h)
	}
	mustPut(t, s, []byte("has"))
	if !mustHas(t, s, h) {
		t.Fatalf("Has(%s) = false after Put", h)
	}
	future := mustNow(t, s.Now).Add(time.Hour)
	if !mustDelete(t, s, h, future) {
		t.Fatalf("DeleteIfOlder(%s, an hour ahead) = false", h)
	}
	if mustHas(t, s, h) {
		t.Errorf("Has(%s) = true after delete", h)
	}
}

// testHasBatch: cas.HasBatch (the backend's BatchHaser, if it has one)
// answers for each hash in order, repeats and absent ones included.
func testHasBatch(t *testing.T, s cas.Store) {
	a := mustPut(t, s, []byte("has batch a"))
	b := mustPut(t, s, []byte("has batch b"))
	absent := cas.Sum([]byte("has batch: never stored"))
	for _, tc := range []struct {
		hs   []cas.Hash
		want []bool
	}{
		{nil, []bool{}},
		{[]cas.Hash{absent}, []bool{false}},
		{[]cas.Hash{a, absent, b, a}, []bool{true, false, true, true}},
	} {
		got, err := cas.HasBatch(t.Context(), s, tc.hs)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("HasBatch(%v) = %v, %v; want %v", tc.hs, got, err, tc.want)
		}
	}
}

func testTouch(t *testing.T, s cas.Store) {
	t.Run("absent", func(t *testing.T) {
		h := cas.Sum([]byte("never stored"))
		err := s.Touch(t.Context(), h)
		if !errors.Is(err, cas.ErrNotFound) {
			t.Fatalf("Touch(absent) error = %v, want one wrapping ErrNotFound", err)
		}
		if !strings.Contains(err.Error(), h.String()) {
			t.Errorf("Touch(absent) error %q does not name the hash %s", err, h)
		}
		if mustHas(t, s, h) {
			t.Errorf("Touch(absent) created the object")
		}
	})
	t.Run("refreshes", func(t *testing.T) {
		touched := mustPut(t, s, []byte("touched"))
		control := mustPut(t, s, []byte("not touched"))
		cutoff := waitPast(t, s.Now, object(t, s, control).Time)
		if err := s.Touch(t.Context(), touched); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		if o := object(t, s, touched); o.Time.Before(cutoff) {
			t.Errorf("Touch at or after %v left Time %v", cutoff, o.Time)
		}
		if mustDelete(t, s, touched, cutoff) {
			t.Errorf("DeleteIfOlder(cutoff taken before Touch) deleted the touched object")
		}
		if !mustHas(t, s, touched) {
			t.Errorf("touched object gone")
		}
		if !mustDelete(t, s, control, cutoff) {
			t.Errorf("DeleteIfOlder(cutoff after its Put) kept the untouched object")
		}
	})
}

func testAll(t *testing.T, s cas.Store) {
	if objs := listAll(t, s); len(objs) != 0 {
		t.Fatalf("a fresh store lists %d objects, want 0", len(objs))
	}
	data := [][]byte{{}, []byte("x"), []byte("all of them"), blob(1000, 3)}
	before := mustNow(t, s.Now)
	want := make(map[cas.Hash]int64)
	for _, d := range data {
		want[mustPut(t, s, d)] = int64(len(d))
	}
	after := mustNow(t, s.Now)
	objs := listAll(t, s)
	if len(objs) != len(want) {
		t.Errorf("All lists %d objects, want %d", len(objs), len(want))
	}
	for h, size := range want {
		o, ok := objs[h]
		if !ok {
			t.Errorf("All does not list %s", h)
			continue
		}
		if o.Hash != h || o.Size != size {
			t.Errorf("All lists %s as {%s, size %d}, want size %d", h, o.Hash, o.Size, size)
		}
		inTime(t, fmt.Sprintf("Time of %s", h), o.Time, before, after)
	}
}

func testAllEarlyStop(t *testing.T, s cas.Store) {
	for i := range 5 {
		mustPut(t, s, fmt.Appendf(nil, "object %d", i))
	}
	n := 0
	for _, err := range s.All(t.Context()) { // an iterator that ignores a false yield panics here
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("loop ran %d times before break, want 1", n)
	}
}

func testAllBodyUsesStore(t *testing.T, s cas.Store) {
	for i := range 3 {
		mustPut(t, s, fmt.Appendf(nil, "listed %d", i))
	}
	ctx := t.Context()
	past := mustNow(t, s.Now).Add(-time.Hour)
	var errs []error
	within(t, 5*time.Second, "a loop over All that uses the store", func() {
		i := 0
		for o, err := range s.All(ctx) {
			if err != nil {
				errs = append(errs, fmt.Errorf("All: %w", err))
				return
			}
			if _, err := s.Get(ctx, o.Hash); err != nil {
				errs = append(errs, fmt.Errorf("Get inside All: %w", err))
			}
			if _, err := s.Put(ctx, fmt.Appendf(nil, "put while listing %d", i)); err != nil {
				errs = append(errs, fmt.Errorf("Put inside All: %w", err))
			}
			if err := s.Touch(ctx, o.Hash); err != nil {
				errs = append(errs, fmt.Errorf("Touch inside All: %w", err))
			}
			if _, err := s.DeleteIfOlder(ctx, o.Hash, past); err != nil {
				errs = append(errs, fmt.Errorf("DeleteIfOlder inside All: %w", err))
			}
			i++
		}
	})
	for _, err := range errs {
		t.Error(err)
	}
}

// testDeleteIfOlderBatch: the batch deletes exactly the objects older
// than the cutoff, reports them in input order, skips absent ones, younger
// ones and ones touched or put again after the cutoff was taken, and an
// empty batch deletes nothing.
func testDeleteIfOlderBatch(t *testing.T, s cas.Store) {
	ctx := t.Context()
	old1 := mustPut(t, s, []byte("batch old 1"))
	old2 := mustPut(t, s, []byte("batch old 2"))
	touched := mustPut(t, s, []byte("batch touched"))
	reput := mustPut(t, s, []byte("batch put again"))
	cutoff := waitPast(t, s.Now, object(t, s, reput).Time)
	young := mustPut(t, s, []byte("batch young"))
	if err := s.Touch(ctx, touched); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, []byte("batch put again"))
	absent := cas.Sum([]byte("batch never stored"))
	got, err := s.DeleteIfOlderBatch(ctx, []cas.Hash{young, old2, absent, touched, reput, old1}, cutoff)
	if err != nil {
		t.Fatalf("DeleteIfOlderBatch: %v", err)
	}
	if want := []cas.Hash{old2, old1}; !slices.Equal(got, want) {
		t.Errorf("DeleteIfOlderBatch deleted %v, want %v (in input order)", got, want)
	}
	for h, want := range map[cas.Hash]bool{old1: false, old2: false, young: true, touched: true, reput: true} {
		if mustHas(t, s, h) != want {
			t.Errorf("after the batch, Has(%s) = %v, want %v", h, !want, want)
		}
	}
	got, err = s.DeleteIfOlderBatch(ctx, []cas.Hash{old1, old2}, cutoff)
	if err != nil || len(got) != 0 {
		t.Errorf("second DeleteIfOlderBatch = %v, %v; want nothing deleted", got, err)
	}
	got, err = s.DeleteIfOlderBatch(ctx, nil, mustNow(t, s.Now).Add(time.Hour))
	if err != nil || len(got) != 0 {
		t.Errorf("empty DeleteIfOlderBatch = %v, %v; want nothing deleted", got, err)
	}
	if !mustHas(t, s, young) {
		t.Errorf("an empty batch deleted something")
	}
}

func testDeleteIfOlder(t *testing.T, s cas.Store) {
	t.Run("older", func(t *testing.T) {
		data := []byte("older")
		h := mustPut(t, s, data)
		cutoff := waitPast(t, s.Now, object(t, s, h).Time)
		if !mustDelete(t, s, h, cutoff) {
			t.Fatalf("DeleteIfOlder(cutoff after Put) = false, want true")
		}
		if mustHas(t, s, h) {
			t.Errorf("Has = true after delete")
		}
		if _, err := s.Get(t.Context(), h); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Get after delete error = %v, want ErrNotFound", err)
		}
		if _, ok := listAll(t, s)[h]; ok {
			t.Errorf("All lists a deleted object")
		}
		if mustDelete(t, s, h, cutoff) {
			t.Errorf("second DeleteIfOlder = true, want false")
		}
		mustPut(t, s, data)
		if got := mustGet(t, s, h); !bytes.Equal(got, data) {
			t.Errorf("Get after re-Put = %q, want %q", got, data)
		}
	})
	t.Run("younger", func(t *testing.T) {
		cutoff := mustNow(t, s.Now)
		h := mustPut(t, s, []byte("younger"))
		if mustDelete(t, s, h, cutoff) {
			t.Errorf("DeleteIfOlder(cutoff before Put) = true, want false")
		}
		if !mustHas(t, s, h) {
			t.Errorf("younger object gone")
		}
	})
	t.Run("absent", func(t *testing.T) {
		h := cas.Sum([]byte("never stored"))
		ok, err := s.DeleteIfOlder(t.Context(), h, mustNow(t, s.Now).Add(time.Hour))
		if ok || err != nil {
			t.Errorf("DeleteIfOlder(absent) = %v, %v; want false, nil", ok, err)
		}
	})
	t.Run("at its time", func(t *testing.T) {
		h := mustPut(t, s, []byte("at its time"))
		o := object(t, s, h)
		if mustDelete(t, s, h, o.Time) {
			t.Errorf("DeleteIfOlder(cutoff = its Time) = true, want false: only a Time before cutoff is older")
		}
		if !mustDelete(t, s, h, o.Time.Add(time.Millisecond)) {
			t.Errorf("DeleteIfOlder(cutoff = its Time + 1ms) = false, want true")
		}
	})
}

// raceObjects puts n distinct objects and returns them with a cutoff after
// every one's Time.
func raceObjects(t *testing.T, s cas.Store, n int, tag string) ([][]byte, []cas.Hash, time.Time) {
	t.Helper()
	data := make([][]byte, n)
	hs := make([]cas.Hash, n)
	for i := range n {
		data[i] = fmt.Appendf(nil, "%s %d", tag, i)
		hs[i] = mustPut(t, s, data[i])
	}
	var latest time.Time
	for _, o := range listAll(t, s) {
		if o.Time.After(latest) {
			latest = o.Time
		}
	}
	return data, hs, waitPast(t, s.Now, latest)
}

func testDeleteRacesTouch(t *testing.T, s cas.Store) {
	const n = 64
	_, hs, cutoff := raceObjects(t, s, n, "race touch")
	ctx := t.Context()
	touchErr := make([]error, n)
	deleted := make([]bool, n)
	deleteErr := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			touchErr[i] = s.Touch(ctx, hs[i])
		})
		wg.Go(func() {
			<-start
			deleted[i], deleteErr[i] = s.DeleteIfOlder(ctx, hs[i], cutoff)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, h := range hs {
		if deleteErr[i] != nil {
			t.Errorf("DeleteIfOlder(%s): %v", h, deleteErr[i])
			continue
		}
		present := mustHas(t, s, h)
		switch {
		case touchErr[i] == nil:
			won++
			if deleted[i] || !present {
				t.Errorf("%s: Touch succeeded, but DeleteIfOlder = %v and Has = %v; want false, true", h, deleted[i], present)
			}
		case errors.Is(touchErr[i], cas.ErrNotFound):
			if !deleted[i] || present {
				t.Errorf("%s: Touch found nothing, but DeleteIfOlder = %v and Has = %v; want true, false", h, deleted[i], present)
			}
		default:
			t.Errorf("Touch(%s): %v", h, touchErr[i])
		}
	}
	t.Logf("Touch went first for %d of %d objects", won, n)
}

func testDeleteRacesPut(t *testing.T, s cas.Store) {
	const n = 64
	data, hs, cutoff := raceObjects(t, s, n, "race put")
	ctx := t.Context()
	putErr := make([]error, n)
	deleted := make([]bool, n)
	deleteErr := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, putErr[i] = s.Put(ctx, data[i])
		})
		wg.Go(func() {
			<-start
			deleted[i], deleteErr[i] = s.DeleteIfOlder(ctx, hs[i], cutoff)
		})
	}
	close(start)
	wg.Wait()
	for i, h := range hs {
		if putErr[i] != nil || deleteErr[i] != nil {
			t.Errorf("%s: Put error %v, DeleteIfOlder error %v", h, putErr[i], deleteErr[i])
			continue
		}
		if got, err := s.Get(ctx, h); err != nil || !bytes.Equal(got, data[i]) {
			t.Errorf("%s: Put succeeded (and DeleteIfOlder = %v), but Get = %q, %v", h, deleted[i], got, err)
		}
	}
}

func testConcurrentPuts(t *testing.T, s cas.Store) {
	const n = 64
	ctx := t.Context()
	t.Run("identical", func(t *testing.T) {
		data := blob(4096, 4)
		want := cas.Sum(data)
		errs := make([]error, n)
		hs := make([]cas.Hash, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { hs[i], errs[i] = s.Put(ctx, bytes.Clone(data)) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || hs[i] != want {
				t.Errorf("Put #%d = %s, %v; want %s, nil", i, hs[i], errs[i], want)
			}
		}
		objs := listAll(t, s)
		if len(objs) != 1 {
			t.Errorf("All lists %d objects after %d identical Puts, want 1", len(objs), n)
		}
		if got := mustGet(t, s, want); !bytes.Equal(got, data) {
			t.Errorf("Get after concurrent Puts returned other bytes")
		}
	})
	t.Run("distinct", func(t *testing.T) {
		before := len(listAll(t, s))
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				h, err := s.Put(ctx, blob(512, uint64(100+i)))
				if err == nil {
					_, err = s.Get(ctx, h)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Put/Get #%d: %v", i, err)
			}
		}
		if got := len(listAll(t, s)); got != before+n {
			t.Errorf("All lists %d objects, want %d", got, before+n)
		}
	})
}

func testPutBatch(t *testing.T, s cas.Store) {
	if _, ok := s.(cas.BatchPutter); ok {
		t.Log("the store is a BatchPutter")
	} else {
		t.Log("the store is not a BatchPutter: testing the Put fallback")
	}
	old := []byte("already here")
	oldHash := mustPut(t, s, old)
	cutoff := waitPast(t, s.Now, object(t, s, oldHash).Time)
	tests := []struct {
		name string
		data [][]byte
	}{
		{"empty", nil},
		{"one", [][]byte{[]byte("batch one")}},
		{"several", [][]byte{[]byte("batch a"), []byte("batch b"), {}, []byte("batch a"), old, blob(3000, 5)}},
		{"1MiB", [][]byte{blob(1<<20, 6), []byte("after the big one")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs, err := cas.PutBatch(t.Context(), s, tc.data)
			if err != nil {
				t.Fatalf("PutBatch: %v", err)
			}
			if len(hs) != len(tc.data) {
				t.Fatalf("PutBatch returned %d hashes for %d objects", len(hs), len(tc.data))
			}
			for i, d := range tc.data {
				if want := cas.Sum(d); hs[i] != want {
					t.Errorf("hash #%d = %s, want %s", i, hs[i], want)
					continue
				}
				if got := mustGet(t, s, hs[i]); !bytes.Equal(got, d) {
					t.Errorf("Get(hash #%d) returned other bytes", i)
				}
			}
		})
	}
	if mustDelete(t, s, oldHash, cutoff) {
		t.Errorf("a batch that held present bytes did not refresh their age: DeleteIfOlder(cutoff before the batch) deleted them")
	}
}

func testNow(t *testing.T, s cas.Store) {
	first := mustNow(t, s.Now)
	if first.IsZero() {
		t.Fatalf("Now = zero time")
	}
	prev := first
	for range 20 {
		tm := mustNow(t, s.Now)
		if tm.Before(prev) {
			t.Errorf("Now went back from %v to %v", prev, tm)
		}
		prev = tm
	}
	waitPast(t, s.Now, first)
}

// tryLock asks for the lock for at most d. It returns unlock if granted,
// else nil after checking that the error is the deadline's.
func tryLock(t *testing.T, s cas.Store, exclusive bool, d time.Duration) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	unlock, err := s.Lock(ctx, exclusive)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock(exclusive=%v) error = %v, want one wrapping context.DeadlineExceeded", exclusive, err)
		}
		return nil
	}
	if unlock == nil {
		t.Fatalf("Lock(exclusive=%v) returned a nil unlock and no error", exclusive)
	}
	return unlock
}

// mustLock takes the lock, failing t if it is not granted within grantWait.
func mustLock(t *testing.T, s cas.Store, exclusive bool, why string) func() {
	t.Helper()
	u := tryLock(t, s, exclusive, grantWait)
	if u == nil {
		t.Fatalf("Lock(exclusive=%v) not granted within %v: %s", exclusive, grantWait, why)
	}
	return u
}

// mustBlock fails t if the lock is granted within blockedWait.
func mustBlock(t *testing.T, s cas.Store, exclusive bool, why string) {
	t.Helper()
	if u := tryLock(t, s, exclusive, blockedWait); u != nil {
		u()
		t.Errorf("Lock(exclusive=%v) granted, want it to wait: %s", exclusive, why)
	}
}

func testLockExclusive(t *testing.T, s cas.Store) {
	x := mustLock(t, s, true, "the lock is free")
	mustBlock(t, s, false, "an exclusive holder excludes shared requests")
	mustBlock(t, s, true, "an exclusive holder excludes exclusive requests")
	x()
	mustLock(t, s, false, "the exclusive holder unlocked")()
	mustLock(t, s, true, "the lock is free again")()
}

func testLockShared(t *testing.T, s cas.Store) {
	a := mustLock(t, s, false, "the lock is free")
	b := mustLock(t, s, false, "shared holders coexist")
	mustBlock(t, s, true, "two shared holders")
	a()
	mustBlock(t, s, true, "a shared holder remains")
	b()
	mustLock(t, s, true, "every shared holder unlocked")()
}

func testLockUnlockIdempotent(t *testing.T, s cas.Store) {
	a := mustLock(t, s, false, "the lock is free")
	b := mustLock(t, s, false, "shared holders coexist")
	a()
	a()
	mustBlock(t, s, true, "one shared holder unlocked twice, another still holds")
	b()
	x := mustLock(t, s, true, "every shared holder unlocked")
	x()
	x()
	y := mustLock(t, s, true, "the exclusive holder unlocked (twice)")
	x() // a stale unlock must not release y's hold
	mustBlock(t, s, false, "a stale unlock of an earlier exclusive hold must not release the current one")
	y()
	mustLock(t, s, false, "the lock is free")()
}

// lockAsync asks for the lock in a goroutine; the result arrives on the
// returned channel.
func lockAsync(ctx context.Context, s cas.Store, exclusive bool) <-chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		u, err := s.Lock(ctx, exclusive)
		ch <- lockResult{u, err}
	}()
	return ch
}

type lockResult struct {
	unlock func()
	err    error
}

// cancelled cancels a waiting request and checks that it fails with
// context.Canceled.
func cancelled(t *testing.T, ch <-chan lockResult, cancel func(), what string) {
	t.Helper()
	select {
	case r := <-ch:
		if r.err == nil {
			r.unlock()
		}
		t.Fatalf("%s returned before it was cancelled (error %v), want it to wait", what, r.err)
	case <-time.After(blockedWait):
	}
	cancel()
	select {
	case r := <-ch:
		if r.err == nil {
			r.unlock()
			t.Fatalf("%s was granted after its ctx was cancelled", what)
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("%s error = %v, want one wrapping context.Canceled", what, r.err)
		}
	case <-time.After(grantWait):
		t.Fatalf("%s did not return within %v of its ctx being cancelled", what, grantWait)
	}
}

func testLockCancel(t *testing.T, s cas.Store) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v waits for exclusive", exclusive), func(t *testing.T) {
			x := mustLock(t, s, true, "the lock is free")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cancelled(t, lockAsync(ctx, s, exclusive), cancel, "a waiting Lock")
			x()
			mustLock(t, s, true, "a cancelled request must leave no lock held")()
		})
	}
	t.Run("exclusive waits for shared", func(t *testing.T) {
		r := mustLock(t, s, false, "the lock is free")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancelled(t, lockAsync(ctx, s, true), cancel, "a waiting exclusive Lock")
		mustLock(t, s, false, "a cancelled exclusive request must not hold back shared ones")()
		r()
		mustLock(t, s, true, "a cancelled request must leave no lock held")()
	})
}

func testLockWriterNotStarved(t *testing.T, s cas.Store) {
	ctx, stop := context.WithCancel(t.Context())
	var active atomic.Int32
	var granted atomic.Int32
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				unlock, err := s.Lock(ctx, false)
				if err != nil {
					return
				}
				active.Add(1)
				granted.Add(1)
				time.Sleep(2 * time.Millisecond)
				active.Add(-1)
				unlock()
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // let the overlapping shared holds get going
	begin := time.Now()
	x := tryLock(t, s, true, grantWait)
	if x == nil {
		t.Fatalf("an exclusive request was starved for %v by a stream of overlapping shared holders (%d shared grants)", grantWait, granted.Load())
	}
	defer x()
	t.Logf("exclusive granted after %v, amid %d shared grants", time.Since(begin), granted.Load())
	for range 3 {
		if n := active.Load(); n != 0 {
			t.Fatalf("%d shared holders hold the lock while an exclusive one does", n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func testLockIsAdvisory(t *testing.T, s cas.Store) {
	h := mustPut(t, s, []byte("before the lock"))
	x := mustLock(t, s, true, "the lock is free")
	defer x()
	ctx, cancel := context.WithTimeout(t.Context(), grantWait)
	defer cancel()
	var errs []error
	check := func(op string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s while the exclusive lock is held: %w", op, err))
		}
	}
	within(t, 2*grantWait, "store methods while the exclusive lock is held", func() {
		_, err := s.Get(ctx, h)
		check("Get", err)
		_, err = s.Put(ctx, []byte("under the lock"))
		check("Put", err)
		_, err = cas.PutBatch(ctx, s, [][]byte{[]byte("batch under the lock")})
		check("PutBatch", err)
		_, err = s.Has(ctx, h)
		check("Has", err)
		check("Touch", s.Touch(ctx, h))
		for _, err := range s.All(ctx) {
			check("All", err)
		}
		_, err = s.DeleteIfOlder(ctx, h, time.Unix(0, 0))
		check("DeleteIfOlder", err)
		_, err = s.Now(ctx)
		check("Now", err)
		unlock, err := s.LockGC(ctx)
		check("LockGC", err)
		if err == nil {
			unlock()
		}
	})
	for _, err := range errs {
		t.Error(err)
	}
}

func mustLockGC(t *testing.T, s cas.Store, why string) func() {
	t.Helper()
	u, err := s.LockGC(t.Context())
	if err != nil {
		t.Fatalf("LockGC: %v (%s)", err, why)
	}
	return u
}

func mustNotLockGC(t *testing.T, s cas.Store, why string) {
	t.Helper()
	u, err := s.LockGC(t.Context())
	if err == nil {
		u()
		t.Errorf("LockGC succeeded: %s", why)
		return
	}
	if !errors.Is(err, cas.ErrLocked) {
		t.Errorf("LockGC error = %v, want one wrapping ErrLocked (%s)", err, why)
	}
}

func testLockGC(t *testing.T, s cas.Store) {
	a := mustLockGC(t, s, "the GC lock is free")
	mustNotLockGC(t, s, "another GC holds the lock")
	x := mustLock(t, s, true, "the GC lock and the store lock are independent")
	x()
	a()
	b := mustLockGC(t, s, "the first GC unlocked")
	a() // a stale unlock must not release b's hold
	mustNotLockGC(t, s, "a stale unlock of an earlier hold must not release the current one")
	b()
	b()
	mustLockGC(t, s, "the GC lock was released")()
}

func testStoreCancelledContext(t *testing.T, s cas.Store) {
	h := mustPut(t, s, []byte("present"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	// These must fail: they list or wait.
	t.Run("All", func(t *testing.T) {
		n := 0
		for o, err := range s.All(ctx) {
			n++
			if err == nil {
				t.Errorf("All(cancelled ctx) listed %s", o.Hash)
				continue
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("All(cancelled ctx) error = %v, want one wrapping context.Canceled", err)
			}
		}
		if n == 0 {
			t.Errorf("All(cancelled ctx) yielded nothing, want the context's error")
		}
	})
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("Lock exclusive=%v", exclusive), func(t *testing.T) {
			u, err := s.Lock(ctx, exclusive)
			if err == nil {
				u()
				t.Fatalf("Lock(cancelled ctx) was granted")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Lock(cancelled ctx) error = %v, want one wrapping context.Canceled", err)
			}
		})
	}

	// These may succeed; if they fail, the error is the context's and a
	// failed change changed nothing.
	lenient := func(t *testing.T, op string, err error) bool {
		t.Helper()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s(cancelled ctx) error = %v, want nil or one wrapping context.Canceled", op, err)
		}
		return err != nil
	}
	t.Run("others", func(t *testing.T) {
		_, err := s.Get(ctx, h)
		lenient(t, "Get", err)
		_, err = s.Has(ctx, h)
		lenient(t, "Has", err)
		lenient(t, "Touch", s.Touch(ctx, h))
		_, err = s.Now(ctx)
		lenient(t, "Now", err)
		fresh := []byte("put with a cancelled ctx")
		if _, err := s.Put(ctx, fresh); lenient(t, "Put", err) && mustHas(t, s, cas.Sum(fresh)) {
			t.Errorf("a Put that failed stored its object")
		}
		_, err = cas.PutBatch(ctx, s, [][]byte{[]byte("batch with a cancelled ctx")})
		lenient(t, "PutBatch", err) // a failed batch may have stored some objects
		future := mustNow(t, s.Now).Add(time.Hour)
		if _, err := s.DeleteIfOlder(ctx, h, future); lenient(t, "DeleteIfOlder", err) && !mustHas(t, s, h) {
			t.Errorf("a DeleteIfOlder that failed deleted its object")
		}
		if u, err := s.LockGC(ctx); !lenient(t, "LockGC", err) {
			u()
		}
		mustLockGC(t, s, "no GC lock may be left held")()
	})
}

func testCorruption(t *testing.T, s cas.Store) {
	c, ok := s.(Corrupter)
	if !ok {
		t.Skip("the store does not implement castest.Corrupter")
	}
	right := []byte("the right bytes")
	h := mustPut(t, s, right)
	if c.Corrupt(cas.Sum([]byte("absent")), []byte("x")) {
		t.Errorf("Corrupt(absent) = true")
	}
	if !c.Corrupt(h, []byte("the wrong bytes")) {
		t.Fatalf("Corrupt(present) = false")
	}
	data, err := s.Get(t.Context(), h)
	if !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("Get(corrupt) = %q, %v; want an error wrapping ErrCorrupt", data, err)
	} else if data != nil {
		t.Errorf("Get(corrupt) returned %d bytes with its error", len(data))
	} else if !strings.Contains(err.Error(), h.String()) {
		t.Errorf("Get(corrupt) error %q does not name the hash %s", err, h)
	}
	if !mustHas(t, s, h) {
		t.Errorf("Has(corrupt) = false: Has does not verify")
	}
	if _, ok := listAll(t, s)[h]; !ok {
		t.Errorf("All does not list a corrupt object")
	}
	if got, err := s.Put(t.Context(), right); err != nil || got != h {
		t.Fatalf("Put(the right bytes over corrupt ones) = %s, %v; want %s, nil: Put heals", got, err, h)
	}
	if got := mustGet(t, s, h); !bytes.Equal(got, right) {
		t.Errorf("Get after healing = %q, want %q", got, right)
	}
	c.Corrupt(h, []byte("damaged again"))
	if !mustDelete(t, s, h, mustNow(t, s.Now).Add(time.Hour)) {
		t.Errorf("DeleteIfOlder did not delete a corrupt object")
	}
	hs, err := cas.PutBatch(t.Context(), s, [][]byte{right})
	if err != nil || hs[0] != h {
		t.Fatalf("PutBatch(deleted object) = %v, %v", hs, err)
	}
	c.Corrupt(h, []byte("damaged once more"))
	if hs, err := cas.PutBatch(t.Context(), s, [][]byte{right}); err != nil || hs[0] != h {
		t.Fatalf("PutBatch(the right bytes over corrupt ones) = %v, %v; want [%s], nil", hs, err, h)
	}
	if got := mustGet(t, s, h); !bytes.Equal(got, right) {
		t.Errorf("Get after a healing batch = %q, want %q", got, right)
	}
}
