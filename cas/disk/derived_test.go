package disk_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/disk"
)

func TestDerived(t *testing.T) {
	castest.RunDerived(t, func(t *testing.T) cas.Derived {
		st, err := disk.Create(t.TempDir(), &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestDerivedFolder: entries live under cache/ and nowhere else (no
// object, ref or log), a file naming another key is no entry, and
// deleting the folder loses only the entries.
func TestDerivedFolder(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := disk.Create(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutDerived(ctx, "chain/a", []byte("A")); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(filepath.Join(dir, "cache"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if len(files) != 1 {
		t.Fatalf("cache/ holds %v, want one entry file", files)
	}
	for obj, err := range st.All(ctx) {
		t.Errorf("an entry made object %v (%v)", obj, err)
	}
	for ref, err := range st.Refs().List(ctx, "") {
		t.Errorf("an entry made ref %v (%v)", ref, err)
	}
	// A file moved to another key's place (a foreign entry) is no entry.
	if err := st.PutDerived(ctx, "chain/b", []byte("B")); err != nil {
		t.Fatal(err)
	}
	var pb string
	filepath.WalkDir(filepath.Join(dir, "cache"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != files[0] {
			pb = p
		}
		return err
	})
	if err := os.Rename(files[0], pb); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.GetDerived(ctx, "chain/b"); ok || err != nil {
		t.Errorf("GetDerived of a file holding another key's entry = %q, %v, %v; want no entry", v, ok, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.GetDerived(ctx, "chain/a"); ok || err != nil {
		t.Errorf("GetDerived after removing cache/ = ok %v, %v", ok, err)
	}
	if err := st.PutDerived(ctx, "chain/a", []byte("A")); err != nil {
		t.Errorf("PutDerived after removing cache/: %v", err)
	}
	// A store folder holding cache/ is still one Create may complete.
	if _, err := disk.OpenOrCreate(dir, nil); err != nil {
		t.Errorf("OpenOrCreate of a store with cache/: %v", err)
	}
}

// TestDerivedIgnored: fsck is not confused by cache/, GC drops the entry
// of the node it collects (with the node where it is kept in the node's
// attribute, else as an orphan file) and keeps the other, and export and
// import do not carry the cache.
func TestDerivedIgnored(t *testing.T) {
	ctx := t.Context()
	open := func(dir string) (*disk.Store, *cas.Repo) {
		st, err := disk.OpenOrCreate(dir, &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		r, err := cas.Open(ctx, st, st.Refs(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return st, r
	}
	src := t.TempDir()
	st, r := open(src)
	kept, err := r.Put(ctx, cas.ContentSchema, "kept")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := r.Put(ctx, cas.ContentSchema, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refs().CompareAndSwap(ctx, "things/kept", 0, kept, "keep"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []cas.Hash{kept, gone} {
		if err := st.PutDerived(ctx, "chain/"+h.String(), []byte(h.String())); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := r.GC(ctx, &cas.GCOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The collected node's entry goes with it from its attribute, or is
	// dropped as an orphan file where attributes are not kept.
	if stats.Deleted != 1 || stats.DerivedDropped > 1 {
		t.Errorf("GC deleted %d objects and %d cache entries, want 1 and at most 1 (the unreferenced one's): %+v", stats.Deleted, stats.DerivedDropped, stats)
	}
	if ok, _ := st.Has(ctx, kept); !ok {
		t.Error("GC deleted the referenced object")
	}
	if v, ok, err := st.GetDerived(ctx, "chain/"+kept.String()); !ok || err != nil || string(v) != kept.String() {
		// TestDerivedIgnored: fsck is not confused by cache/, GC drops the entry
		// of the node it collects and keeps the other, and export and import do
		// not carry the cache.
	}
	rep, err := r.Fsck(ctx, nil)
	if err != nil || !rep.OK() {
		t.Errorf("fsck with a cache folder: %v, %+v", err, rep)
	}
	var tar bytes.Buffer
	if _, err := cas.Export(ctx, r, &tar, nil); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	_, r2 := open(dst)
	if _, err := cas.Import(ctx, r2, &tar, nil); err != nil {
		t.Fatal(err)
	}
	// cache/ comes with the store (and its first write); no entry of it
	// was carried.
	var carried []string
	err = filepath.WalkDir(filepath.Join(dst, "cache"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			carried = append(carried, p)
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(carried) > 0 {
		t.Errorf("import carried the cache: %v", carried)
	}
}

// TestReadsCreateNothing: a store made by a build older than the derived
// cache and the watch journal (no cache/, no journal/) is opened and read
// (an object, a ref, its log, the cache, a watch) without either folder
// appearing; the first ref change by this build makes cache/, and the
// cache keeps entries from then on.
func TestReadsCreateNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := disk.Create(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	h, err := st.Put(ctx, []byte(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Refs().CompareAndSwap(ctx, "things/x", 0, h, "create"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, d := range []string{"cache", "journal"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	names := func() []string {
		t.Helper()
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	before := names()
	st, err = disk.Open(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := st.Refs()
	if _, err := st.Get(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, "things/x"); err != nil || got != h {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if _, err := r.Log(ctx, "things/x"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.GetDerived(ctx, "chain/x"); ok || err != nil {
		t.Fatalf("GetDerived = %v, %v; want a miss", ok, err)
	}
	if err := st.PutDerived(ctx, "chain/x", []byte("X")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.WatchHead(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	for _, err := range r.Watch(wctx, "", "") {
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Watch: %v", err)
		}
		break
	}
	cancel()
	if after := names(); !slices.Equal(after, before) {
		t.Fatalf("Open and reads changed the store's folder: %v, want %v", after, before)
	}
	if _, ok, _ := st.GetDerived(ctx, "chain/x"); ok {
		t.Error("a put without cache/ kept an entry")
	}
	if err := r.CompareAndSwap(ctx, "things/y", 0, h, "create"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); err != nil {
		t.Fatalf("the first ref change did not make cache/: %v", err)
	}
	if err := st.PutDerived(ctx, "chain/x", []byte("X")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.GetDerived(ctx, "chain/x"); !ok || err != nil || string(v) != "X" {
		t.Errorf("after the first write, GetDerived = %q, %v, %v", v, ok, err)
	}
}
