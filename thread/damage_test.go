package thread_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/thread"
)

// TestListPastDamage: a thread ref that cannot be read, and a thread whose
// head node is corrupt, are left out of List and reported one by one; the
// other threads are listed.
func TestListPastDamage(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	st, err := disk.Create(filepath.Join(t.TempDir(), "store"), &disk.Options{Now: c.Now, Durability: disk.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	te := newTEnvOn(t, c, st, st.Refs())
	var ids []string
	for range 4 {
		te.clock.Advance(time.Second)
		ids = append(ids, te.start())
	}
	refFile := filepath.Join(st.Dir(), "refs", "threads", strings.ToLower(ids[1]))
	if err := os.WriteFile(refFile, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := te.head(ids[2])
	obj := filepath.Join(st.Dir(), "objects", head.String()[11:], head.String())
	os.Chmod(obj, 0o644)
	if err := os.WriteFile(obj, []byte("not the node"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(obj) }) // the end-of-test re-hash would fail

	infos, err := te.engine().List(te.ctx, thread.ListOptions{})
	if err == nil || !errors.Is(err, cas.ErrBadRef) || !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("List error = %v, want the bad ref and the corrupt head reported", err)
	}
	for _, id := range []string{ids[1], ids[2]} {
		if !strings.Contains(err.Error(), strings.ToLower(id)) && !strings.Contains(err.Error(), id) {
			t.Errorf("List's error does not name thread %s: %v", id, err)
		}
	}
	var got []string
	for _, info := range infos {
		got = append(got, info.ID)
	}
	if want := []string{ids[3], ids[0]}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("List = %v, want %v", got, want)
	}
}

// TestListPastReadErrors: a thread whose head or start cannot be read for
// a reason other than its kind (an I/O or permission error, a lost
// connection) is damage: List leaves it out and returns the error, and
// does not pass it off as a node of a kind this build does not know.
func TestListPastReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start bool // fail the start node rather than the head
		err   error
	}{
		{"head EIO", false, &fs.PathError{Op: "read", Path: "objects/x", Err: syscall.EIO}},
		{"start EACCES", true, &fs.PathError{Op: "open", Path: "objects/y", Err: syscall.EACCES}},
		{"head lost connection", false, errors.New("postgres: read: connection reset by peer")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTEnv(t)
			var ids []string
			var bad cas.Hash
			for i := range 3 {
				te.clock.Advance(time.Second)
				id, hs := te.chain(2)
				ids = append(ids, id)
				if i == 1 {
					bad = hs[len(hs)-1]
					if tc.start {
						bad = hs[0]
					}
				}
			}
			te.cnt.fail = func(h cas.Hash) error {
				if h == bad {
					return tc.err
				}
				return nil
			}
			for _, opts := range []thread.ListOptions{{}, {Status: thread.StatusActive}} {
				infos, err := te.engine().List(te.ctx, opts)
				if err == nil || !errors.Is(err, tc.err) || !strings.Contains(err.Error(), ids[1]) {
					t.Fatalf("List(%+v) error = %v, want it to name thread %s and wrap %v", opts, err, ids[1], tc.err)
				}
				var got []string
				for _, info := range infos {
					if info.Err != nil {
						t.Errorf("List(%+v): thread %s listed with Err %v, want it left out as damage", opts, info.ID, info.Err)
					}
					got = append(got, info.ID)
				}
				if want := []string{ids[2], ids[0]}; strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("List(%+v) = %v, want %v", opts, got, want)
				}
			}
		})
	}
}
