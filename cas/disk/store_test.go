package disk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

func TestParseDurability(t *testing.T) {
	tests := []struct {
		in      string
		want    disk.Durability
		wantErr bool
	}{
		{"strict", disk.DurabilityStrict, false},
		{"none", disk.DurabilityNone, false},
		{"", 0, true},
		{"Strict", 0, true},
		{"fsync", 0, true},
	}
	for _, tc := range tests {
		got, err := disk.ParseDurability(tc.in)
		if tc.wantErr {
			if err == nil || !errors.Is(err, cas.ErrInvalid) || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprintf("%q", tc.in))) {
				t.Errorf("ParseDurability(%q) error = %v, want one naming the input", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != tc.in {
			t.Errorf("ParseDurability(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if s := disk.Durability(7).String(); s != "Durability(7)" {
		t.Errorf("Durability(7).String() = %q", s)
	}
}

func TestPutGet(t *testing.T) {
	for _, d := range []disk.Durability{disk.DurabilityStrict, disk.DurabilityNone} {
		t.Run(d.String(), func(t *testing.T) {
			clk := newClock()
			s := newStore(t, &disk.Options{Durability: d, Now: clk.Now})
			ctx := t.Context()
			for _, data := range [][]byte{[]byte("hello"), {}, bytes.Repeat([]byte{0, 1, 2}, 100000)} {
				h := mustPut(t, s, data)
				mustGet(t, s, h, data)
				if ok, err := s.Has(ctx, h); !ok || err != nil {
					t.Errorf("Has(%s) = %v, %v", h, ok, err)
				}
				o := objects(t, s)[h]
				if o.Size != int64(len(data)) || !o.Time.Equal(clk.Now()) {
					t.Errorf("All: %s = size %d time %v, want %d %v", h, o.Size, o.Time, len(data), clk.Now())
				}
			}
			if got := tempFiles(t, s); len(got) != 0 {
				t.Errorf("temporary files left: %v", got)
			}
			if now, err := s.Now(ctx); err != nil || !now.Equal(clk.Now()) {
				t.Errorf("Now() = %v, %v", now, err)
			}
		})
	}
}

func TestGetMissing(t *testing.T) {
	s := newStore(t, nil)
	h := cas.Sum([]byte("absent"))
	_, err := s.Get(t.Context(), h)
	var oe *cas.ObjectError
	if !errors.Is(err, cas.ErrNotFound) || !errors.As(err, &oe) || oe.Op != "get" || oe.Hash != h {
		t.Fatalf("Get(absent) error = %v, want an ObjectError{get} wrapping ErrNotFound", err)
	}
	if ok, err := s.Has(t.Context(), h); ok || err != nil {
		t.Errorf("Has(absent) = %v, %v", ok, err)
	}
	if err := s.Touch(t.Context(), h); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Touch(absent) error = %v, want ErrNotFound", err)
	}
	if ok, err := s.DeleteIfOlder(t.Context(), h, time.Now()); ok || err != nil {
		t.Errorf("DeleteIfOlder(absent) = %v, %v", ok, err)
	}
}

func TestAges(t *testing.T) {
	clk := newClock()
	s := newStore(t, &disk.Options{Now: clk.Now})
	ctx := t.Context()
	t0 := clk.Now()
	h := mustPut(t, s, []byte("aging"))

	clk.Add(time.Hour)
	mustPut(t, s, []byte("aging")) // a re-put refreshes the age
	if got := objects(t, s)[h].Time; !got.Equal(clk.Now()) {
		t.Fatalf("after re-put, Time = %v, want %v", got, clk.Now())
	}
	clk.Add(time.Hour)
	if err := s.Touch(ctx, h); err != nil {
		t.Fatal(err)
	}
	t2 := clk.Now()
	if got := objects(t, s)[h].Time; !got.Equal(t2) {
		t.Fatalf("after Touch, Time = %v, want %v", got, t2)
	}

	if ok, err := s.DeleteIfOlder(ctx, h, t0); ok || err != nil {
		t.Fatalf("DeleteIfOlder(cutoff before its time) = %v, %v", ok, err)
	}
	if ok, err := s.DeleteIfOlder(ctx, h, t2); ok || err != nil {
		t.Fatalf("DeleteIfOlder(cutoff at its time) = %v, %v; want no delete", ok, err)
	}
	if ok, err := s.DeleteIfOlder(ctx, h, t2.Add(time.Nanosecond)); !ok || err != nil {
		t.Fatalf("DeleteIfOlder(cutoff after its time) = %v, %v; want a delete", ok, err)
	}
	if ok, _ := s.Has(ctx, h); ok {
		t.Fatal("deleted object still present")
	}
}

// TestDeleteIfOlderVersusTouch races DeleteIfOlder against Touch and Put of
// the same old object: whenever the refresher succeeds, the object must
// survive.
func TestDeleteIfOlderVersusTouch(t *testing.T) {
	clk := newClock()
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone, Now: clk.Now})
	ctx := t.Context()
	for i := range 100 {
		data := []byte(fmt.Sprintf("race %d", i))
		h := mustPut(t, s, data)
		cutoff := clk.Now().Add(time.Minute)
		clk.Add(time.Hour) // refreshes from now on are past cutoff
		var wg sync.WaitGroup
		var refreshed bool
		var deleted bool
		wg.Go(func() {
			if i%2 == 0 {
				refreshed = s.Touch(ctx, h) == nil
			} else {
				_, err := s.Put(ctx, data)
				refreshed = err == nil
			}
		})
		wg.Go(func() {
			ok, err := s.DeleteIfOlder(ctx, h, cutoff)
			if err != nil {
				t.Error(err)
			}
			deleted = ok
		})
		wg.Wait()
		present, _ := s.Has(ctx, h)
		if i%2 == 1 && !present {
			t.Fatalf("round %d: Put returned but the object is gone", i)
		}
		if refreshed && deleted && present == false && i%2 == 0 {
			// Touch succeeded before the delete: then the delete must have
			// refused. Touch after the delete fails instead.
			t.Fatalf("round %d: a touched object was deleted", i)
		}
	}
}

func TestAllSkipsForeignNames(t *testing.T) {
	s := newStore(t, nil)
	allowCorrupt(t)
	h := mustPut(t, s, []byte("listed"))
	x := h.String()
	other := cas.Sum([]byte("other"))
	y := other.String()
	shard := filepath.Join(s.Dir(), "objects", x[11:])
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(shard, "junk"))
	write(filepath.Join(shard, "abc"))
	write(filepath.Join(shard, x[:12]+"z"))                         // not canonical
	write(filepath.Join(shard, y))                                  // in the wrong folder (unless same shard)
	write(filepath.Join(s.Dir(), "objects", "zz", "0000000000Zzz")) // not a shard
	write(filepath.Join(s.Dir(), "objects", "README"))
	corrupt := cas.Sum([]byte("corrupt"))
	write(objectFile(s, corrupt)) // a valid name with bad content is listed

	got := objects(t, s)
	want := map[cas.Hash]bool{h: true, corrupt: true}
	if y[11:] == x[11:] {
		want[other] = true
	}
	if len(got) != len(want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("All misses %s", k)
		}
	}
}

func TestAllStopsEarlyAndOnCancel(t *testing.T) {
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	for i := range 50 {
		mustPut(t, s, []byte(fmt.Sprint(i)))
	}
	n := 0
	for range s.All(t.Context()) {
		n++
		if n == 3 {
			break
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var gotErr error
	for _, err := range s.All(ctx) {
		gotErr = err
	}
	if !errors.Is(gotErr, context.Canceled) {
		t.Errorf("All(cancelled) error = %v", gotErr)
	}
}

func TestCorruptionHeals(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(path string, data []byte) []byte
	}{
		{"bit flip", func(_ string, d []byte) []byte { c := bytes.Clone(d); c[3] ^= 0x10; return c }},
		{"truncated", func(_ string, d []byte) []byte { return d[:len(d)/2] }},
		{"empty", func(string, []byte) []byte { return nil }},
		{"other intact content", func(string, []byte) []byte { return []byte("some other object") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, batch := range []bool{false, true} {
				s := newStore(t, nil)
				data := []byte("the right bytes of an object")
				h := mustPut(t, s, data)
				path := objectFile(s, h)
				if err := os.WriteFile(path, tc.corrupt(path, data), 0o644); err != nil {
					t.Fatal(err)
				}
				_, err := s.Get(t.Context(), h)
				var oe *cas.ObjectError
				if !errors.Is(err, cas.ErrCorrupt) || !errors.As(err, &oe) || oe.Op != "get" || oe.Hash != h {
					t.Fatalf("Get(corrupt) error = %v, want an ObjectError{get} wrapping ErrCorrupt", err)
				}
				if _, ok := objects(t, s)[h]; !ok {
					t.Fatal("All does not list the corrupt object")
				}
				if batch {
					hs, err := s.PutBatch(t.Context(), [][]byte{[]byte("x"), data})
					if err != nil || hs[1] != h {
						t.Fatalf("PutBatch = %v, %v", hs, err)
					}
				} else {
					mustPut(t, s, data)
				}
				mustGet(t, s, h, data)
				if got := tempFiles(t, s); len(got) != 0 {
					t.Errorf("temporary files left: %v", got)
				}
			}
		})
	}
}

// collide maps every input starting with "c" to one hash.
func collide(data []byte) cas.Hash {
	if len(data) > 0 && data[0] == 'c' {
		return 42
	}
	return cas.Sum(data)
}

func TestCollision(t *testing.T) {
	opts := &disk.Options{}
	disk.SetHash(opts, collide)
	s, err := disk.Create(t.TempDir()+"/s", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	h, err := s.Put(ctx, []byte("c-first"))
	if err != nil || h != 42 {
		t.Fatalf("Put = %v, %v", h, err)
	}
	_, err = s.Put(ctx, []byte("c-second"))
	var oe *cas.ObjectError
	if !errors.Is(err, cas.ErrCollision) || !errors.As(err, &oe) || oe.Op != "put" || oe.Hash != 42 {
		t.Fatalf("Put(colliding) error = %v, want an ObjectError{put} wrapping ErrCollision", err)
	}
	if got, err := s.Get(ctx, 42); err != nil || string(got) != "c-first" {
		t.Fatalf("after a collision Get = %q, %v; want the first bytes", got, err)
	}
	if _, err := s.PutBatch(ctx, [][]byte{[]byte("x"), []byte("c-third")}); !errors.Is(err, cas.ErrCollision) {
		t.Errorf("PutBatch(colliding with stored) error = %v", err)
	}
	if _, err := s.PutBatch(ctx, [][]byte{[]byte("cA"), []byte("cA"), []byte("cB")}); !errors.Is(err, cas.ErrCollision) {
		t.Errorf("PutBatch(colliding inside the batch) error = %v", err)
	}
	// Re-putting the first bytes is still fine.
	if h, err := s.Put(ctx, []byte("c-first")); err != nil || h != 42 {
		t.Errorf("re-Put = %v, %v", h, err)
	}
	if got := tempFiles(t, s); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
}

func TestConcurrentIdenticalPuts(t *testing.T) {
	s := newStore(t, nil)
	data := []byte("the same bytes from 64 goroutines")
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if h, err := s.Put(context.Background(), data); err != nil || h != cas.Sum(data) {
				t.Errorf("Put = %v, %v", h, err)
			}
		})
	}
	wg.Wait()
	if got := objects(t, s); len(got) != 1 {
		t.Errorf("%d objects, want 1", len(got))
	}
	if got := tempFiles(t, s); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
}

func TestConcurrentDistinctPuts(t *testing.T) {
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				// Half the objects are shared between goroutines.
				data := []byte(fmt.Sprintf("object %d %d", g%2, i))
				if _, err := s.Put(context.Background(), data); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := objects(t, s); len(got) != 200 {
		t.Errorf("%d objects, want 200", len(got))
	}
}

func TestPutBatch(t *testing.T) {
	for _, mode := range []struct {
		name string
		pool bool
		d    disk.Durability
	}{{"syncfs", false, disk.DurabilityStrict}, {"pool", true, disk.DurabilityStrict}, {"none", false, disk.DurabilityNone}} {
		t.Run(mode.name, func(t *testing.T) {
			clk := newClock()
			opts := &disk.Options{Durability: mode.d, Now: clk.Now}
			disk.SetBatchSyncPool(opts, mode.pool)
			s := newStore(t, opts)
			pre := mustPut(t, s, []byte("already there"))
			var data [][]byte
			for i := range 300 {
				data = append(data, []byte(fmt.Sprintf("batch object %d", i)))
			}
			data = append(data, []byte("already there"), []byte("batch object 7"), []byte{})
			clk.Add(time.Minute)
			hs, err := s.PutBatch(t.Context(), data)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != len(data) {
				t.Fatalf("%d hashes for %d inputs", len(hs), len(data))
			}
			all := objects(t, s)
			for i, d := range data {
				if hs[i] != cas.Sum(d) {
					t.Fatalf("hash %d = %s, want %s", i, hs[i], cas.Sum(d))
				}
				mustGet(t, s, hs[i], d)
				if !all[hs[i]].Time.Equal(clk.Now()) {
					t.Errorf("object %d time %v, want %v", i, all[hs[i]].Time, clk.Now())
				}
			}
			if len(all) != 302 || all[pre].Hash != pre {
				t.Errorf("%d objects, want 302", len(all))
			}
			if got := tempFiles(t, s); len(got) != 0 {
				t.Errorf("temporary files left: %v", got)
			}
			if hs, err := s.PutBatch(t.Context(), nil); err != nil || len(hs) != 0 {
				t.Errorf("PutBatch(nil) = %v, %v", hs, err)
			}
			if hs, err := cas.PutBatch(t.Context(), s, data[:2]); err != nil || hs[1] != cas.Sum(data[1]) {
				t.Errorf("cas.PutBatch = %v, %v", hs, err)
			}
		})
	}
}

func TestPutBatchCancelled(t *testing.T) {
	s := newStore(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.PutBatch(ctx, [][]byte{[]byte("a")}); !errors.Is(err, context.Canceled) {
		t.Errorf("PutBatch(cancelled) error = %v", err)
	}
	if got := tempFiles(t, s); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
}

func TestClose(t *testing.T) {
	s := newStore(t, nil)
	h := mustPut(t, s, []byte("x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.Get(ctx, h); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Get after Close error = %v", err)
	}
	if _, err := s.Put(ctx, []byte("y")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Put after Close error = %v", err)
	}
	if _, err := s.Refs().Get(ctx, "a"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Refs.Get after Close error = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestLock(t *testing.T) {
	s := newStore(t, nil)
	ctx := t.Context()
	sh1, err := s.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	sh2, err := s.Lock(ctx, false)
	if err != nil {
		t.Fatal("two shared holders must coexist:", err)
	}
	// An exclusive waiter waits for both.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(short, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive Lock while shared held: error = %v, want DeadlineExceeded", err)
	}
	got := make(chan error, 1)
	go func() {
		unlock, err := s.Lock(ctx, true)
		if err == nil {
			unlock()
		}
		got <- err
	}()
	sh1()
	sh1() // idempotent: must not release anything else
	select {
	case err := <-got:
		t.Fatalf("exclusive Lock granted while a shared holder remains (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	sh2()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exclusive Lock not granted after the shared holders left")
	}
	// The cancelled waiter above left nothing held.
	unlock, err := s.Lock(short2(t), true)
	if err != nil {
		t.Fatalf("exclusive Lock after a cancelled wait: %v", err)
	}
	unlock()
}

// short2 returns a context that ends soon: a lock must be granted at once.
func short2(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLockGC(t *testing.T) {
	s := newStore(t, nil)
	ctx := t.Context()
	unlock, err := s.LockGC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockGC(ctx); !errors.Is(err, cas.ErrLocked) {
		t.Fatalf("second LockGC error = %v, want ErrLocked", err)
	}
	// The store-wide lock is separate.
	if u, err := s.Lock(short2(t), true); err != nil {
		t.Fatal(err)
	} else {
		u()
	}
	unlock()
	unlock()
	again, err := s.LockGC(ctx)
	if err != nil {
		t.Fatalf("LockGC after unlock: %v", err)
	}
	again()
}

func TestStaleTemps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := disk.Create(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, "tmp", ".tmp-99999-1")
	if err := os.WriteFile(leftover, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An old modification time does not make it stale: a writer may set
	// any time on a file it is about to publish.
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(leftover, old, old)
	if _, err := disk.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	if got := tempFiles(t, s); len(got) != 1 {
		t.Fatalf("a fresh temporary file was removed: %v", got)
	}
	opts := &disk.Options{}
	disk.SetStaleTempAge(opts, 0)
	if _, err := disk.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if got := tempFiles(t, s); len(got) != 0 {
		t.Fatalf("stale temporary files left: %v", got)
	}
}

func FuzzPutGet(f *testing.F) {
	f.Add([]byte("hello"))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 5000))
	s, err := disk.Create(filepath.Join(f.TempDir(), "store"), &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := mustPut(t, s, data)
		mustGet(t, s, h, data)
		if h2, err := s.PutBatch(t.Context(), [][]byte{data, data}); err != nil || h2[0] != h || h2[1] != h {
			t.Fatalf("PutBatch = %v, %v", h2, err)
		}
	})
}
