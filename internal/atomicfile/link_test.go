package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestLinkFallback checks the link(2) path used where renameat2 is missing.
func TestLinkFallback(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("a"), 0o644)
	os.WriteFile(b, []byte("b"), 0o644)
	if err := atomicfile.LinkRemove(a, b); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("linkRemove over an existing name = %v", err)
	}
	if got, _ := os.ReadFile(b); string(got) != "b" {
		t.Fatalf("overwritten: %q", got)
	}
	c := filepath.Join(dir, "c")
	if err := atomicfile.LinkRemove(a, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("the old name remains: %v", err)
	}
	if got, _ := os.ReadFile(c); string(got) != "a" {
		t.Errorf("content %q", got)
	}
}
