package thread_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
