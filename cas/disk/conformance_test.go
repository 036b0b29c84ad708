package disk_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestConformance runs the shared conformance suite against the disk
// backend, each subtest on a fresh store (durability none: the order of
// syncs is tested through the recording filesystem instead).
func TestConformance(t *testing.T) {
	runConformance(t, &disk.Options{Durability: disk.DurabilityNone})
}

// TestConformancePortable runs the suite on the path macOS and the other
// Unix systems take, with renameat2 and syncfs switched off (objects
// published by link(2), a batch synced file by file), and strict
// durability so that the fallbacks are exercised.
func TestConformancePortable(t *testing.T) {
	opts := &disk.Options{Durability: disk.DurabilityStrict}
	disk.SetFS(opts, atomicfile.Portable)
	runConformance(t, opts)
}

func runConformance(t *testing.T, opts *disk.Options) {
	castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
		st, err := disk.Create(t.TempDir(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return corruptible{st}, droppable{st.Refs(), st.Dir(), opts}
	})
}

// droppable adds castest.RefDropper to disk refs: it removes a ref's file
// by hand; and castest.Reopener: it opens the folder again, as another
// process would.
type droppable struct {
	*disk.Refs
	dir  string
	opts *disk.Options
}

func (d droppable) Reopen(t *testing.T) cas.Refs {
	st, err := disk.Open(d.dir, d.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.Refs()
}

func (d droppable) DropRef(name string) bool {
	return os.Remove(filepath.Join(d.dir, "refs", filepath.FromSlash(strings.ToLower(name)))) == nil
}

// corruptible adds castest.Corrupter to a store: it overwrites an object's
// file in place, keeping its modification time, as a bit flip would.
type corruptible struct{ *disk.Store }

func (c corruptible) Corrupt(h cas.Hash, data []byte) bool {
	name := h.String()
	path := filepath.Join(c.Dir(), "objects", name[len(name)-2:], name)
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return false
	}
	return os.Chtimes(path, fi.ModTime(), fi.ModTime()) == nil
}
