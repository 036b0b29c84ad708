package disk_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// unnamedFS is atomicfile.OS whose Link first runs before (another writer
// acting between the batch's check and its publish), or, with refuse, fails
// as a filesystem that cannot link unnamed files would.
type unnamedFS struct {
	atomicfile.FS
	before func(path string)
	refuse bool
	links  atomic.Int32
}

func (u *unnamedFS) Link(f atomicfile.File, path string) error {
	u.links.Add(1)
	if u.refuse {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: errors.ErrUnsupported}
	}
	if u.before != nil {
		u.before(path)
	}
	return u.FS.Link(f, path)
}

// TestPutBatchUnnamed checks the put path of Linux: a batch's new objects
// are unnamed files created in a folder tmp/new-* (no entry there) and linked into their
// shard folder; a strict batch holds at most 256 of them open, the rest
// go through tmp/ as before, all published in input order.
func TestPutBatchUnnamed(t *testing.T) {
	if _, err := atomicfile.OS.CreateUnnamed(t.TempDir(), 0o644); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no unnamed files here: %v", err)
	}
	for _, tc := range []struct {
		name    string
		d       disk.Durability
		n       int
		unnamed int // publishes of unnamed files
	}{
		{"none", disk.DurabilityNone, 300, 300},
		{"strict", disk.DurabilityStrict, 100, 100},
		{"strict over the open limit", disk.DurabilityStrict, 300, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := recorded(t, tc.d, false)
			var data [][]byte
			for i := range tc.n {
				data = append(data, []byte(fmt.Sprintf("unnamed %d", i)))
			}
			hs, err := s.PutBatch(t.Context(), data)
			if err != nil {
				t.Fatal(err)
			}
			ops := rec.Ops()
			unnamed, named, k := 0, 0, 0
			for _, op := range ops {
				switch {
				case op.Kind == "create":
					named++
				case op.Kind == "publish" && !op.Err:
					if file, _ := objRel(hs[k]); op.To != file {
						t.Fatalf("publish %d is %s, want %s", k, op, file)
					}
					k++
					if strings.Contains(op.Path, "(unnamed ") {
						unnamed++
						if !strings.HasPrefix(op.Path, "tmp/new-") {
							t.Errorf("%s: the unnamed file was not made in tmp/new-*/", op)
						}
					}
				}
			}
			if unnamed != tc.unnamed || named != tc.n-tc.unnamed || k != tc.n {
				t.Errorf("%d publishes, %d of unnamed files, %d temporary files created; want %d, %d, %d:%s", k, unnamed, named, tc.n, tc.unnamed, tc.n-tc.unnamed, dump(ops))
			}
			for i, d := range data {
				mustGet(t, s, hs[i], d)
			}
			if got := tempFiles(t, s); len(got) != 0 {
				t.Errorf("temporary files left: %v", got)
			}
		})
	}
}

// TestPutBatchUnnamedRace: another writer stores the object between the
// batch's check and its link: the same bytes leave them as they are, bytes
// that do not hash to the address are replaced (the unnamed file is linked
// under a temporary name and renamed over them), different intact bytes are
// a collision.
func TestPutBatchUnnamedRace(t *testing.T) {
	if _, err := atomicfile.OS.CreateUnnamed(t.TempDir(), 0o644); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no unnamed files here: %v", err)
	}
	data := []byte("a contended object")
	for _, tc := range []struct {
		name    string
		other   []byte
		collide bool
	}{
		{"same bytes", data, false},
		{"corrupt bytes", []byte("a contended obj"), false},
		{"intact different bytes", []byte("collides"), true},
	} {
		for _, d := range []disk.Durability{disk.DurabilityNone, disk.DurabilityStrict} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, d), func(t *testing.T) {
				u := &unnamedFS{FS: atomicfile.OS}
				u.before = func(path string) {
					if u.links.Load() == 1 {
						os.MkdirAll(filepath.Dir(path), 0o755)
						if err := os.WriteFile(path, tc.other, 0o644); err != nil {
							t.Error(err)
						}
					}
				}
				opts := &disk.Options{Durability: d}
				disk.SetFS(opts, u)
				if tc.collide {
					disk.SetHash(opts, func(b []byte) cas.Hash {
						if string(b) == "collides" {
							return cas.Sum(data)
						}
						return cas.Sum(b)
					})
				}
				s := newStore(t, opts)
				hs, err := s.PutBatch(t.Context(), [][]byte{data})
				if tc.collide {
					if !errors.Is(err, cas.ErrCollision) {
						t.Fatalf("PutBatch = %v, %v; want a collision", hs, err)
					}
					allowCorrupt(t)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				mustGet(t, s, hs[0], data)
				if u.links.Load() != 2 && tc.name == "corrupt bytes" {
					t.Errorf("%d links, want 2 (the address, then a temporary name)", u.links.Load())
				}
				if got := tempFiles(t, s); len(got) != 0 {
					t.Errorf("temporary files left: %v", got)
				}
			})
		}
	}
}

// TestPutBatchLinkUnsupported: a filesystem that makes unnamed files but
// cannot link them (no CAP_DAC_READ_SEARCH and no /proc) still stores the
// batch, through named temporary files, and stops trying unnamed files.
func TestPutBatchLinkUnsupported(t *testing.T) {
	for _, d := range []disk.Durability{disk.DurabilityNone, disk.DurabilityStrict} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			u := &unnamedFS{FS: atomicfile.OS, refuse: true}
			opts := &disk.Options{Durability: d}
			disk.SetFS(opts, u)
			s := newStore(t, opts)
			var data [][]byte
			for i := range 20 {
				data = append(data, []byte(fmt.Sprintf("refused %d", i)))
			}
			for round := range 2 {
				hs, err := s.PutBatch(t.Context(), data)
				if err != nil {
					t.Fatal(err)
				}
				for i, b := range data {
					mustGet(t, s, hs[i], b)
				}
				data = append(data[:0:0], []byte(fmt.Sprintf("round %d", round)))
			}
			if _, err := atomicfile.OS.CreateUnnamed(t.TempDir(), 0o644); err == nil && u.links.Load() != 1 {
				t.Errorf("%d links tried, want 1 (then named files only)", u.links.Load())
			}
			if got := tempFiles(t, s); len(got) != 0 {
				t.Errorf("temporary files left: %v", got)
			}
		})
	}
}
