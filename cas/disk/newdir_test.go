package disk_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// newDirsIn lists the folders tmp/new-* of s.
func newDirsIn(t *testing.T, s *disk.Store) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(s.Dir(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range es {
		if e.IsDir() && strings.HasPrefix(e.Name(), "new-") {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

func batchData(prefix string, n int) [][]byte {
	var data [][]byte
	for i := range n {
		data = append(data, []byte(fmt.Sprintf("%s %d", prefix, i)))
	}
	return data
}

// TestPutBatchNewDirs: a batch's unnamed files are made in two folders
// tmp/new-*, which hold no entry; a batch after they were removed (another
// process's clean-up) makes fresh ones; Close removes them, and so does
// removing stale temporary files once they are older than the stale age.
func TestPutBatchNewDirs(t *testing.T) {
	if _, err := atomicfile.OS.CreateUnnamed(t.TempDir(), 0o644); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no unnamed files here: %v", err)
	}
	for _, d := range []disk.Durability{disk.DurabilityNone, disk.DurabilityStrict} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			opts := &disk.Options{Durability: d}
			disk.SetStaleTempAge(opts, 0) // everything is stale at once
			s := newStore(t, opts)
			put := func(prefix string) {
				t.Helper()
				data := batchData(prefix, 100)
				hs, err := s.PutBatch(t.Context(), data)
				if err != nil {
					t.Fatal(err)
				}
				for i, b := range data {
					mustGet(t, s, hs[i], b)
				}
			}
			put("first")
			if dirs := newDirsIn(t, s); len(dirs) != 2 {
				t.Fatalf("tmp/ holds folders %v, want two tmp/new-*", dirs)
			}
			if got := tempFiles(t, s); len(got) != 0 {
				t.Errorf("entries left in tmp/: %v", got)
			}
			for _, n := range newDirsIn(t, s) {
				if err := os.Remove(filepath.Join(s.Dir(), "tmp", n)); err != nil {
					t.Fatal(err)
				}
			}
			put("after removal")
			if dirs := newDirsIn(t, s); len(dirs) != 2 {
				t.Fatalf("after removal, tmp/ holds folders %v, want two fresh tmp/new-*", dirs)
			}
			if n, err := s.RemoveStaleTemps(t.Context()); err != nil || n != 0 {
				t.Errorf("RemoveStaleTemps = %d, %v; want 0 files, no error", n, err)
			}
			if dirs := newDirsIn(t, s); len(dirs) != 0 {
				t.Errorf("stale folders %v kept", dirs)
			}
			put("after clean-up")
			s.Close()
			if dirs := newDirsIn(t, s); len(dirs) != 0 {
				t.Errorf("Close left folders %v", dirs)
			}
		})
	}
}

// failingFS fails CreateUnnamed from its failAt-th call on, as a full disk
// would.
type failingFS struct {
	atomicfile.FS
	calls  atomic.Int32
	failAt int32
}

func (f *failingFS) CreateUnnamed(dir string, perm fs.FileMode) (atomicfile.File, error) {
	if f.calls.Add(1) >= f.failAt {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOSPC}
	}
	return f.FS.CreateUnnamed(dir, perm)
}

// TestPutBatchWriteFails: a batch written by several goroutines that
// fails midway returns the error, leaves no file behind, and every object
// it reports or not is either whole or absent; the same batch then
// succeeds.
func TestPutBatchWriteFails(t *testing.T) {
	if _, err := atomicfile.OS.CreateUnnamed(t.TempDir(), 0o644); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no unnamed files here: %v", err)
	}
	for _, failAt := range []int32{1, 37, 150} {
		t.Run(fmt.Sprint(failAt), func(t *testing.T) {
			f := &failingFS{FS: atomicfile.OS, failAt: failAt}
			opts := &disk.Options{Durability: disk.DurabilityNone}
			disk.SetFS(opts, f)
			s := newStore(t, opts)
			data := batchData("fails", 300)
			_, err := s.PutBatch(t.Context(), data)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("PutBatch error = %v, want ENOSPC", err)
			}
			stored := 0
			for _, b := range data {
				got, err := s.Get(t.Context(), cas.Sum(b))
				switch {
				case errors.Is(err, cas.ErrNotFound):
				case err != nil:
					t.Fatal(err)
				case string(got) != string(b):
					t.Fatalf("stored %q, want %q", got, b)
				default:
					stored++
				}
			}
			if stored >= int(failAt) {
				t.Errorf("%d objects stored, want fewer than %d", stored, failAt)
			}
			if got := tempFiles(t, s); len(got) != 0 {
				t.Errorf("entries left in tmp/: %v", got)
			}
			f.failAt = 1 << 30
			hs, err := s.PutBatch(t.Context(), data)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range data {
				mustGet(t, s, hs[i], b)
			}
		})
	}
}
