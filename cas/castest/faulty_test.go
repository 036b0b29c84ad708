package castest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

// tickingMem returns a memory store whose clock moves a second per reading,
// so any refresh of an object's age shows.
func tickingMem() *cas.MemStore {
	var ticks atomic.Int64
	return cas.NewMemStore(&cas.MemOptions{Now: func() time.Time {
		return time.Unix(1_700_000_000+ticks.Add(1), 0)
	}})
}

func listErr(seq func(yield func(cas.Object, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

func objectTimes(t *testing.T, s cas.Store) map[cas.Hash]time.Time {
	t.Helper()
	times := make(map[cas.Hash]time.Time)
	for o, err := range s.All(context.Background()) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		times[o.Hash] = o.Time
	}
	return times
}

func TestFaultyStoreFailsEachOp(t *testing.T) {
	target := []byte("target")
	h := cas.Sum(target)
	fresh := []byte("fresh")
	calls := []struct {
		op   string
		key  cas.Hash
		call func(ctx context.Context, s cas.Store) error
	}{
		{"get", h, func(ctx context.Context, s cas.Store) error { _, err := s.Get(ctx, h); return err }},
		{"has", h, func(ctx context.Context, s cas.Store) error { _, err := s.Has(ctx, h); return err }},
		{"touch", h, func(ctx context.Context, s cas.Store) error { return s.Touch(ctx, h) }},
		{"all", 0, func(ctx context.Context, s cas.Store) error { return listErr(s.All(ctx)) }},
		{"put", cas.Sum(fresh), func(ctx context.Context, s cas.Store) error { _, err := s.Put(ctx, fresh); return err }},
		{"putbatch", 0, func(ctx context.Context, s cas.Store) error {
			_, err := cas.PutBatch(ctx, s, [][]byte{[]byte("batch")})
			return err
		}},
		{"lock", 0, func(ctx context.Context, s cas.Store) error {
			u, err := s.Lock(ctx, true)
			if err == nil {
				u()
			}
			return err
		}},
		{"lockgc", 0, func(ctx context.Context, s cas.Store) error {
			u, err := s.LockGC(ctx)
			if err == nil {
				u()
			}
			return err
		}},
		{"now", 0, func(ctx context.Context, s cas.Store) error { _, err := s.Now(ctx); return err }},
		{"delete", h, func(ctx context.Context, s cas.Store) error {
			_, err := s.DeleteIfOlder(ctx, h, time.Unix(1_800_000_000, 0))
			return err
		}},
	}
	for _, failing := range calls {
		t.Run(failing.op, func(t *testing.T) {
			ctx := t.Context()
			inner := tickingMem()
			if _, err := inner.Put(ctx, target); err != nil {
				t.Fatal(err)
			}
			before := objectTimes(t, inner)
			fs := &castest.FaultyStore{Store: inner, Fail: castest.FailOn(failing.op, failing.key, castest.ErrInjected)}
			if err := failing.call(ctx, fs); !errors.Is(err, castest.ErrInjected) {
				t.Errorf("%s error = %v, want ErrInjected", failing.op, err)
			}
			// The failed call did not reach the store.
			after := objectTimes(t, inner)
			switch failing.op {
			case "touch":
				if !after[h].Equal(before[h]) {
					t.Errorf("a failed Touch refreshed the object")
				}
			case "put":
				if _, ok := after[cas.Sum(fresh)]; ok {
					t.Errorf("a failed Put stored its object")
				}
			case "putbatch":
				if _, ok := after[cas.Sum([]byte("batch"))]; ok {
					t.Errorf("a failed PutBatch stored its object")
				}
			case "delete":
				if _, ok := after[h]; !ok {
					t.Errorf("a failed DeleteIfOlder deleted its object")
				}
			}
			// Every other call passes through.
			for _, c := range calls {
				if c.op != failing.op {
					if err := c.call(ctx, fs); err != nil {
						t.Errorf("%s error = %v, want it passed through", c.op, err)
					}
				}
			}
		})
	}
}

func TestFaultyStoreNilFail(t *testing.T) {
	ctx := t.Context()
	fs := &castest.FaultyStore{Store: cas.NewMemStore(nil)}
	h, err := fs.Put(ctx, []byte("through"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fs.Get(ctx, h); err != nil || string(got) != "through" {
		t.Errorf("Get = %q, %v", got, err)
	}
	castest.Verify(t, fs)
}

func TestFaultyStoreAllMidway(t *testing.T) {
	ctx := t.Context()
	inner := cas.NewMemStore(nil)
	var hs []cas.Hash
	for i := range 5 {
		h, _ := inner.Put(ctx, fmt.Appendf(nil, "object %d", i))
		hs = append(hs, h)
	}
	fs := &castest.FaultyStore{Store: inner, Fail: castest.FailOn("all", hs[2], castest.ErrInjected)}
	var seen []cas.Hash
	var errs []error
	for o, err := range fs.All(ctx) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(errs) > 0 {
			t.Errorf("All went on after yielding an error")
		}
		seen = append(seen, o.Hash)
	}
	if len(errs) != 1 || !errors.Is(errs[0], castest.ErrInjected) {
		t.Errorf("All yielded errors %v, want one ErrInjected", errs)
	}
	if slices.Contains(seen, hs[2]) || len(seen) >= len(hs) {
		t.Errorf("All yielded %v, want only objects listed before %s", seen, hs[2])
	}
}

func TestFaultyStorePutBatch(t *testing.T) {
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	tests := []struct {
		name   string
		key    cas.Hash
		stored []bool
	}{
		{"whole batch", 0, []bool{false, false, false}},
		{"first object", cas.Sum(a), []bool{false, false, false}},
		{"middle object", cas.Sum(b), []bool{true, false, false}},
		{"last object", cas.Sum(c), []bool{true, true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			inner := cas.NewMemStore(nil)
			fs := &castest.FaultyStore{Store: inner, Fail: castest.FailOn("putbatch", tc.key, castest.ErrInjected)}
			if hs, err := fs.PutBatch(ctx, [][]byte{a, b, c}); !errors.Is(err, castest.ErrInjected) || hs != nil {
				t.Fatalf("PutBatch = %v, %v; want nil, ErrInjected", hs, err)
			}
			for i, d := range [][]byte{a, b, c} {
				if ok, _ := inner.Has(ctx, cas.Sum(d)); ok != tc.stored[i] {
					t.Errorf("object %q stored = %v, want %v", d, ok, tc.stored[i])
				}
			}
		})
	}
	t.Run("no fault", func(t *testing.T) {
		fs := &castest.FaultyStore{Store: cas.NewMemStore(nil), Fail: castest.FailOp[cas.Hash](castest.ErrInjected, "put")}
		hs, err := fs.PutBatch(t.Context(), [][]byte{a, b})
		if err != nil || !slices.Equal(hs, []cas.Hash{cas.Sum(a), cas.Sum(b)}) {
			t.Errorf("PutBatch = %v, %v; want both hashes (the put op does not apply to batches)", hs, err)
		}
	})
}

func TestFaultyRefsFailsEachOp(t *testing.T) {
	h := cas.Hash(42)
	calls := []struct {
		op, key string
		call    func(ctx context.Context, r cas.Refs) error
	}{
		{"get", "live", func(ctx context.Context, r cas.Refs) error { _, err := r.Get(ctx, "live"); return err }},
		{"list", "li", func(ctx context.Context, r cas.Refs) error {
			for _, err := range r.List(ctx, "li") {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"log", "live", func(ctx context.Context, r cas.Refs) error { _, err := r.Log(ctx, "live"); return err }},
		{"logs", "", func(ctx context.Context, r cas.Refs) error {
			for _, err := range r.Logs(ctx) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"cas", "live", func(ctx context.Context, r cas.Refs) error { return r.CompareAndSwap(ctx, "live", h, h+1, "move") }},
		{"import", "imported", func(ctx context.Context, r cas.Refs) error {
			return r.ImportLog(ctx, "imported", []cas.LogEntry{{New: h, Time: 1, Message: "import"}})
		}},
		{"replace", "replaced", func(ctx context.Context, r cas.Refs) error { return r.Replace(ctx, "replaced", h, "restore") }},
		{"prune", "", func(ctx context.Context, r cas.Refs) error {
			_, err := r.PruneLog(ctx, time.Now().Add(time.Hour))
			return err
		}},
	}
	for _, failing := range calls {
		t.Run(failing.op, func(t *testing.T) {
			ctx := t.Context()
			inner := cas.NewMemStore(nil).Refs()
			if err := inner.CompareAndSwap(ctx, "live", 0, h, "create"); err != nil {
				t.Fatal(err)
			}
			fr := &castest.FaultyRefs{Refs: inner, Fail: castest.FailOn(failing.op, failing.key, castest.ErrInjected)}
			for _, c := range calls {
				err := c.call(ctx, fr)
				switch {
				case c.op == failing.op && !errors.Is(err, castest.ErrInjected):
					t.Errorf("%s error = %v, want ErrInjected", c.op, err)
				case c.op != failing.op && err != nil:
					t.Errorf("%s error = %v, want it passed through", c.op, err)
				}
			}
			switch failing.op {
			case "cas":
				if got, _ := inner.Get(ctx, "live"); got != h {
					t.Errorf("a failed CompareAndSwap moved the ref to %s", got)
				}
			case "import":
				if _, err := inner.Log(ctx, "imported"); !errors.Is(err, cas.ErrNotFound) {
					t.Errorf("a failed ImportLog wrote a log")
				}
			case "replace":
				if _, err := inner.Log(ctx, "replaced"); !errors.Is(err, cas.ErrNotFound) {
					t.Errorf("a failed Replace wrote a log")
				}
			}
		})
	}
}

func TestFaultyRefsListingsMidway(t *testing.T) {
	ctx := t.Context()
	inner := cas.NewMemStore(nil).Refs()
	for i, name := range []string{"a", "b", "c"} {
		if err := inner.CompareAndSwap(ctx, name, 0, cas.Hash(i+1), "create"); err != nil {
			t.Fatal(err)
		}
	}
	fr := &castest.FaultyRefs{Refs: inner, Fail: castest.FailAny(
		castest.FailOn("list", "b", castest.ErrInjected),
		castest.FailOn("logs", "c", castest.ErrInjected),
	)}
	var got []string
	for ref, err := range fr.List(ctx, "") {
		if err != nil {
			got = append(got, "error: "+err.Error())
			continue
		}
		got = append(got, ref.Name)
	}
	for name, err := range fr.Logs(ctx) {
		if err != nil {
			got = append(got, "error: "+err.Error())
			continue
		}
		got = append(got, name)
	}
	want := []string{"a", "error: " + castest.ErrInjected.Error(), "a", "b", "error: " + castest.ErrInjected.Error()}
	if !slices.Equal(got, want) {
		t.Errorf("List then Logs yielded %q, want %q", got, want)
	}
}

func TestFailHelpers(t *testing.T) {
	boom := castest.ErrInjected
	type call struct {
		op   string
		key  string
		fail bool
	}
	tests := []struct {
		name  string
		fail  func(op, key string) error
		calls []call
	}{
		{"FailOp some", castest.FailOp[string](boom, "get", "cas"), []call{
			{"get", "x", true}, {"cas", "y", true}, {"log", "x", false}, {"get", "z", true},
		}},
		{"FailOp all", castest.FailOp[string](boom), []call{
			{"get", "x", true}, {"prune", "", true},
		}},
		{"FailOn", castest.FailOn("cas", "x", boom), []call{
			{"cas", "x", true}, {"cas", "y", false}, {"get", "x", false}, {"cas", "x", true},
		}},
		{"FailAfter", castest.FailAfter[string](2, boom, "cas"), []call{
			{"cas", "x", false}, {"get", "x", false}, {"cas", "y", false}, {"cas", "x", true}, {"get", "x", false}, {"cas", "z", true},
		}},
		{"FailAfter zero", castest.FailAfter[string](0, boom), []call{
			{"get", "x", true}, {"cas", "x", true},
		}},
		{"FailFirst", castest.FailFirst[string](2, boom, "log"), []call{
			{"log", "x", true}, {"get", "x", false}, {"log", "y", true}, {"log", "x", false}, {"log", "x", false},
		}},
		{"FailAny", castest.FailAny(castest.FailOn("get", "x", boom), castest.FailOp[string](boom, "prune")), []call{
			{"get", "x", true}, {"get", "y", false}, {"prune", "", true}, {"cas", "x", false},
		}},
		{"FailAny empty", castest.FailAny[string](), []call{{"get", "x", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, c := range tc.calls {
				err := tc.fail(c.op, c.key)
				if c.fail && err != boom || !c.fail && err != nil {
					t.Errorf("call %d Fail(%q, %q) = %v, want failure %v", i, c.op, c.key, err, c.fail)
				}
			}
		})
	}
}

func TestFailCountersConcurrent(t *testing.T) {
	const n, calls = 10, 200
	after := castest.FailAfter[cas.Hash](n, castest.ErrInjected)
	first := castest.FailFirst[cas.Hash](n, castest.ErrInjected)
	var passedAfter, failedFirst atomic.Int64
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if after("get", 0) == nil {
				passedAfter.Add(1)
			}
			if first("get", 0) != nil {
				failedFirst.Add(1)
			}
		})
	}
	wg.Wait()
	if passedAfter.Load() != n || failedFirst.Load() != n {
		t.Errorf("FailAfter passed %d and FailFirst failed %d of %d concurrent calls, want %d each", passedAfter.Load(), failedFirst.Load(), calls, n)
	}
}

// A transient fault: the first Put fails, a retry succeeds.
func ExampleFaultyStore() {
	ctx := context.Background()
	s := &castest.FaultyStore{
		Store: cas.NewMemStore(nil),
		Fail:  castest.FailFirst[cas.Hash](1, castest.ErrInjected, "put"),
	}
	_, err := s.Put(ctx, []byte("hello"))
	fmt.Println(err)
	h, err := s.Put(ctx, []byte("hello"))
	fmt.Println(h, err)
	// Output:
	// castest: injected fault
	// 2DHW2FP49YVD3 <nil>
}
