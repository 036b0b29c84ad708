package disk_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

// TestPruneRemovesEmptyLogFolders: once PruneLog removes the logs of
// deleted refs, the folders of logs/ they leave empty go too (as refs/'s
// do when a ref is deleted), and a folder still holding a log stays; the
// lock files stay the fixed, striped set, however many refs came and went.
func TestPruneRemovesEmptyLogFolders(t *testing.T) {
	ctx := t.Context()
	st := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	dir := st.Dir()
	refs := st.Refs()
	r, err := cas.Open(ctx, st, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Put(ctx, cas.ContentSchema, "target")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, n := range []string{"a/b/c/d", "a/b/e", "slots/wf/1", "keys/pr/" + string(rune('a'+i)) + "x"} {
			if err := refs.CompareAndSwap(ctx, n, 0, h, "create"); err != nil {
				t.Fatal(err)
			}
			if err := refs.CompareAndSwap(ctx, n, h, 0, "delete"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := refs.CompareAndSwap(ctx, "a/live", 0, h, "create"); err != nil {
		t.Fatal(err)
	}
	if _, err := refs.PruneLog(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var folders []string // schemas/ holds the built-ins' logs
	filepath.WalkDir(filepath.Join(dir, "logs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			folders = append(folders, filepath.ToSlash(rel))
		}
		return err
	})
	if want := []string{"logs", "logs/a", "logs/schemas"}; !slices.Equal(folders, want) {
		t.Errorf("folders of logs/ after the prune = %q, want %q (a/live's)", folders, want)
	}
	if _, err := refs.Log(ctx, "a/live"); err != nil {
		t.Errorf("the live ref's log: %v", err)
	}
	// The live ref moves, and a ref is made again where folders went.
	for _, n := range []string{"a/b/c/d", "slots/wf/1"} {
		if err := refs.CompareAndSwap(ctx, n, 0, h, "again"); err != nil {
			t.Errorf("create %s after its folders went: %v", n, err)
		}
	}
	locks, err := os.ReadDir(filepath.Join(dir, "locks"))
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) > 256+3 {
		t.Errorf("locks/ holds %d files, want at most the 256 stripes, refs, journal and journal.gate", len(locks))
	}
	if rep, err := r.Fsck(ctx, nil); err != nil || !rep.OK() {
		t.Errorf("fsck: %v, %+v", err, rep)
	}
}
