package disk_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

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
