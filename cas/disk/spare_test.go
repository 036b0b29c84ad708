//go:build linux

package disk_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// inode returns the inode number of the file at path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestRefMoveFreesNoFile: a move of an existing ref exchanges the new ref
// file, written into its stripe's spare, with the old one, so a thread's
// steps create and free no file for their ref (each freed file slows later
// creations on ext4 without a journal: bench/README.md, section I). From
// the first move on, the ref and its spare take turns with the same two
// files; the spare is neither a leftover for fsck nor removed as stale.
// Where the exchange is unsupported (the portable path) the spare is
// renamed into place, as a temporary file was.
func TestRefMoveFreesNoFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fsys     atomicfile.FS
		exchange bool
	}{{"exchange", atomicfile.OS, true}, {"portable", atomicfile.Portable, false}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &disk.Options{}
			disk.SetFS(opts, tc.fsys)
			s := newStore(t, opts)
			r := s.Refs()
			ctx := t.Context()
			const name = "threads/x"
			ref := filepath.Join(s.Dir(), "refs", "threads", "x")
			spares := func() []string {
				m, err := filepath.Glob(filepath.Join(s.Dir(), "tmp", "spare-*"))
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			old := hashOf("v0")
			mustCAS(t, r, name, 0, old, "create")
			if got := spares(); len(got) != 0 {
				t.Fatalf("after a create: spares %v, want none (the spare became the ref)", got)
			}
			var pair map[uint64]bool
			for i := 1; i <= 6; i++ {
				before, err := os.ReadFile(ref)
				if err != nil {
					t.Fatal(err)
				}
				next := hashOf(string(rune('a' + i)))
				mustCAS(t, r, name, old, next, "step")
				if h, err := r.Get(ctx, name); err != nil || h != next {
					t.Fatalf("move %d: Get = %s, %v; want %s", i, h, err, next)
				}
				got := spares()
				if !tc.exchange {
					if len(got) != 0 {
						t.Fatalf("move %d without the exchange: spares %v, want none", i, got)
					}
					old = next
					continue
				}
				if len(got) != 1 {
					t.Fatalf("move %d: spares %v, want one", i, got)
				}
				// The spare holds the ref file the move replaced.
				if b, err := os.ReadFile(got[0]); err != nil || !bytes.Equal(b, before) {
					t.Fatalf("move %d: spare holds %q, %v; want the old ref file %q", i, b, err, before)
				}
				now := map[uint64]bool{inode(t, ref): true, inode(t, got[0]): true}
				if pair == nil {
					pair = now
				} else if len(now) != 2 || !now[inode(t, ref)] || !pair[inode(t, ref)] || !pair[inode(t, got[0])] {
					t.Fatalf("move %d: ref and spare are inodes %v, want the same two as after the first move %v", i, now, pair)
				}
				old = next
			}
			total, stale, err := s.CountTemps(ctx)
			if err != nil || total != 0 || stale != 0 {
				t.Errorf("CountTemps = %d, %d, %v; want no temporary file (the spare is not one)", total, stale, err)
			}
			n := len(spares())
			s.Close()
			reopen := &disk.Options{}
			disk.SetStaleTempAge(reopen, 0)
			s2, err := disk.Open(s.Dir(), reopen)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if got := spares(); len(got) != n {
				t.Errorf("after an Open removing every stale temporary file: spares %v, want %d kept", got, n)
			}
			if h, err := s2.Refs().Get(ctx, name); err != nil || h != old {
				t.Errorf("after reopening: Get = %s, %v; want %s", h, err, old)
			}
		})
	}
}

// TestRefMoveSpareBlocked: a spare that cannot be opened (a folder in its
// place) does not stop a move: the new ref file goes through a temporary
// file instead.
func TestRefMoveSpareBlocked(t *testing.T) {
	s := newStore(t, &disk.Options{})
	r := s.Refs()
	a, b, c := hashOf("a"), hashOf("b"), hashOf("c")
	mustCAS(t, r, "threads/x", 0, a, "create")
	mustCAS(t, r, "threads/x", a, b, "move")
	m, err := filepath.Glob(filepath.Join(s.Dir(), "tmp", "spare-*"))
	if err != nil || len(m) != 1 {
		t.Fatalf("spares %v, %v; want one", m, err)
	}
	if err := os.Remove(m[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(m[0], 0o755); err != nil {
		t.Fatal(err)
	}
	mustCAS(t, r, "threads/x", b, c, "move")
	if h, err := r.Get(t.Context(), "threads/x"); err != nil || h != c {
		t.Fatalf("Get = %s, %v; want %s", h, err, c)
	}
}
