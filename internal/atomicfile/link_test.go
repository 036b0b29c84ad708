package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestPortable checks the path macOS runs, on any system: RenameNoReplace by
// link(2) never overwrites and removes the old name, and SyncFS is
// unsupported, so callers sync each file.
func TestPortable(t *testing.T) {
	fsys := atomicfile.Portable
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("a"), 0o644)
	os.WriteFile(b, []byte("b"), 0o644)
	err := fsys.RenameNoReplace(a, b)
	var le *os.LinkError
	if !errors.Is(err, fs.ErrExist) || !errors.As(err, &le) || le.Op != "publish" {
		t.Fatalf("RenameNoReplace over an existing name = %v, want a publish *os.LinkError wrapping fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(b); string(got) != "b" {
		t.Fatalf("overwritten: %q", got)
	}
	if got, _ := os.ReadFile(a); string(got) != "a" {
		t.Fatalf("the old name is gone after a refused publish: %q", got)
	}
	c := filepath.Join(dir, "c")
	if err := fsys.RenameNoReplace(a, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("the old name remains: %v", err)
	}
	if got, _ := os.ReadFile(c); string(got) != "a" {
		t.Errorf("content %q", got)
	}
	if err := fsys.SyncFS(dir); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Portable.SyncFS = %v, want errors.ErrUnsupported", err)
	}
}

// TestPublishRaceBothPaths: of many goroutines publishing the same name
// through either path, exactly one succeeds and its bytes stay.
func TestPublishRaceBothPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys atomicfile.FS
	}{{"OS", atomicfile.OS}, {"Portable", atomicfile.Portable}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "obj")
			var wg sync.WaitGroup
			var mu sync.Mutex
			var winners []string
			for i := range 32 {
				wg.Go(func() {
					data := string(rune('A' + i))
					err := atomicfile.Publish(tc.fsys, dir, target, []byte(data), time.Time{}, true)
					if err == nil {
						mu.Lock()
						winners = append(winners, data)
						mu.Unlock()
					} else if !errors.Is(err, fs.ErrExist) {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if len(winners) != 1 || readFile(t, target) != winners[0] {
				t.Fatalf("winners %v, content %q", winners, readFile(t, target))
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Errorf("files left: %v", es)
			}
		})
	}
}

// TestReplacePerm: the new file has the permissions asked for (before the
// umask), whatever the old one had.
func TestReplacePerm(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".env")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.ReplacePerm(atomicfile.OS, "", p, []byte("SECRET=1\n"), 0o600, true); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got&0o077 != 0 {
		t.Errorf("mode %v: readable beyond the owner", got)
	}
	if got := readFile(t, p); got != "SECRET=1\n" {
		t.Errorf("content %q", got)
	}
}
