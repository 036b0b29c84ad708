package disk_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

func TestFormatFile(t *testing.T) {
	s := newStore(t, nil)
	got, err := os.ReadFile(filepath.Join(s.Dir(), "FORMAT"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "uwf store 1\nbackend disk\nhash xxh64\n"; string(got) != want {
		t.Errorf("FORMAT = %q, want %q", got, want)
	}
	for _, d := range []string{"objects", "tmp", "refs", "logs", "locks"} {
		if fi, err := os.Stat(filepath.Join(s.Dir(), d)); err != nil || !fi.IsDir() {
			t.Errorf("folder %s: %v", d, err)
		}
	}
	if es, _ := os.ReadDir(filepath.Join(s.Dir(), "objects")); len(es) != 0 {
		t.Errorf("shard folders made at create time: %d", len(es))
	}
}

func TestCreateExisting(t *testing.T) {
	s := newStore(t, nil)
	if _, err := disk.Create(s.Dir(), nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a store: %v, want fs.ErrExist", err)
	}
	// A folder holding something else is refused, and is not a store.
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	_, err := disk.Create(foreign, nil)
	if err == nil || errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create in a foreign folder: %v", err)
	}
	if _, err := disk.OpenOrCreate(foreign, nil); err == nil {
		t.Fatal("OpenOrCreate made a store in a foreign folder")
	}
	// An empty existing folder is fine.
	empty := t.TempDir()
	if _, err := disk.Create(empty, nil); err != nil {
		t.Fatalf("Create in an empty folder: %v", err)
	}
	// So is one holding only the lock files a racing creator's first
	// writer made (it published FORMAT after this Create checked for it).
	locked := t.TempDir()
	for _, name := range []string{"lock", "lock.gate", "gc.lock"} {
		os.WriteFile(filepath.Join(locked, name), nil, 0o644)
	}
	if _, err := disk.Create(locked, nil); err != nil {
		t.Fatalf("Create in a folder holding only lock files: %v", err)
	}
}

func TestOpenMissing(t *testing.T) {
	for _, dir := range []string{filepath.Join(t.TempDir(), "absent"), t.TempDir()} {
		if _, err := disk.Open(dir, nil); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s) = %v, want fs.ErrNotExist", dir, err)
		}
	}
}

func TestOpenUnknownFormat(t *testing.T) {
	tests := []struct{ name, format string }{
		{"newer version", "uwf store 3\nbackend disk\nhash xxh64\n"},
		{"version 0", "uwf store 0\nbackend disk\nhash xxh64\n"},
		{"padded version", "uwf store 02\nbackend disk\nhash xxh64\n"},
		{"not a number", "uwf store one\nbackend disk\nhash xxh64\n"},
		{"other hash", "uwf store 1\nbackend disk\nhash sha256\n"},
		{"other backend", "uwf store 1\nbackend postgres\nhash xxh64\n"},
		{"unknown setting", "uwf store 1\nbackend disk\nhash xxh64\ncompression zstd\n"},
		{"missing hash", "uwf store 1\nbackend disk\n"},
		{"garbage", "hello\n"},
		{"empty", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, nil)
			path := filepath.Join(s.Dir(), "FORMAT")
			good, _ := os.ReadFile(path)
			if err := os.WriteFile(path, []byte(tc.format), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, good, 0o644)
			if _, err := disk.Open(s.Dir(), nil); !errors.Is(err, cas.ErrFormat) {
				t.Errorf("Open = %v, want cas.ErrFormat", err)
			}
			if _, err := disk.OpenOrCreate(s.Dir(), nil); !errors.Is(err, cas.ErrFormat) {
				t.Errorf("OpenOrCreate = %v, want cas.ErrFormat", err)
			}
		})
	}
}

func TestOpenRepairsFolders(t *testing.T) {
	s := newStore(t, nil)
	os.RemoveAll(filepath.Join(s.Dir(), "tmp"))
	s2, err := disk.Open(s.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s2, []byte("works"))
}

func TestOpenOrCreateConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "store")
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			s, err := disk.OpenOrCreate(dir, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Put(t.Context(), []byte("x")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestBumpFormatHoldsWantedRefs: between BumpFormat's check of the wanted
// refs and its FORMAT write (the hook), no wanted ref can move, not even
// by a move from one value to another (which takes only the ref's own
// lock): the move waits for the bump, so the check still holds when the
// version changes.
func TestBumpFormatHoldsWantedRefs(t *testing.T) {
	const k1, k2, user = cas.Hash(0x1111), cas.Hash(0x2222), cas.Hash(0x3333)
	want := map[string]cas.Hash{"schemas/kind-a": k1, "schemas/kind-b": k2}
	var s *disk.Store
	var moves []error
	opts := &disk.Options{}
	disk.SetBumpHook(opts, func() {
		for name, h := range want {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			moves = append(moves, s.Refs().CompareAndSwap(ctx, name, h, user, "slip in"))
			cancel()
		}
	})
	s = newStore(t, opts)
	ctx := t.Context()
	for name, h := range want {
		if err := s.Refs().CompareAndSwap(ctx, name, 0, h, "create"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Refs().BumpFormat(ctx, cas.FormatV1, cas.FormatV2, want); err != nil {
		t.Fatalf("BumpFormat: %v", err)
	}
	if len(moves) != len(want) {
		t.Fatalf("the hook ran %d moves, want %d", len(moves), len(want))
	}
	for _, err := range moves {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a move of a wanted ref during the bump = %v, want it to wait (context.DeadlineExceeded)", err)
		}
	}
	if v, err := s.Refs().FormatVersion(ctx); err != nil || v != cas.FormatV2 {
		t.Errorf("FormatVersion = %d, %v; want 2", v, err)
	}
	for name, h := range want {
		if got, err := s.Refs().Get(ctx, name); err != nil || got != h {
			t.Errorf("%s = %v, %v after the bump, want %v", name, got, err, h)
		}
	}
	// After the bump the refs move again.
	if err := s.Refs().CompareAndSwap(ctx, "schemas/kind-a", k1, user, "after"); err != nil {
		t.Errorf("a move after the bump: %v", err)
	}
}
