package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestUnnamed checks unnamed files on the real filesystem: invisible until
// linked, linked without ever overwriting (the refused link leaves the
// file open for another name), with the modification time set through the
// descriptor, and gone without a trace if closed unlinked.
func TestUnnamed(t *testing.T) {
	dir := t.TempDir()
	mtime := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	f, err := atomicfile.WriteUnnamed(atomicfile.OS, dir, []byte("unnamed"), mtime)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no unnamed files here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("an unnamed file is visible: %v", es)
	}
	taken := filepath.Join(dir, "taken")
	os.WriteFile(taken, []byte("first"), 0o644)
	err = atomicfile.OS.Link(f, taken)
	var le *os.LinkError
	if !errors.Is(err, fs.ErrExist) || !errors.As(err, &le) || le.Op != "link" {
		t.Fatalf("Link over an existing name = %v, want a link *os.LinkError wrapping fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(taken); string(got) != "first" {
		t.Fatalf("overwritten: %q", got)
	}
	path := filepath.Join(dir, "obj")
	if err := atomicfile.OS.Link(f, path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "unnamed" || !st.ModTime().Equal(mtime) {
		t.Errorf("linked file holds %q with time %v, want %q, %v", got, st.ModTime(), "unnamed", mtime)
	}
	tmp, err := atomicfile.LinkTemp(atomicfile.OS, f, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tmp); string(got) != "unnamed" || filepath.Dir(tmp) != dir {
		t.Errorf("LinkTemp made %s holding %q", tmp, got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.OS.Link(f, filepath.Join(dir, "closed")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Link of a closed file = %v, want fs.ErrClosed", err)
	}

	// Closed before it is linked: nothing is left.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	g, err := atomicfile.WriteUnnamed(atomicfile.OS, sub, []byte("dropped"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if es, _ := os.ReadDir(sub); len(es) != 0 {
		t.Errorf("a closed unnamed file left %v", es)
	}
	// In a missing folder the error is fs.ErrNotExist, so callers create it.
	if _, err := atomicfile.OS.CreateUnnamed(filepath.Join(dir, "missing"), 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CreateUnnamed in a missing folder = %v, want fs.ErrNotExist", err)
	}
}

// TestUnnamedPortable: the portable path (macOS, the BSDs) has no unnamed
// files, and says so with errors.ErrUnsupported.
func TestUnnamedPortable(t *testing.T) {
	dir := t.TempDir()
	if _, err := atomicfile.Portable.CreateUnnamed(dir, 0o644); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Portable.CreateUnnamed = %v, want errors.ErrUnsupported", err)
	}
	f, err := atomicfile.OS.CreateTemp(dir, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := atomicfile.Portable.Link(f, filepath.Join(dir, "x")); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Portable.Link = %v, want errors.ErrUnsupported", err)
	}
	if err := atomicfile.OS.Link(f, filepath.Join(dir, "x")); err == nil {
		t.Error("OS.Link of a named file succeeded")
	}
}
