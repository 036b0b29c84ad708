//go:build unix

package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestExchange: on Linux, Exchange swaps two files' names atomically, and
// a missing name is fs.ErrNotExist with nothing changed; the portable path
// (and any other system) reports errors.ErrUnsupported and changes
// nothing.
func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fsys      atomicfile.FS
		supported bool
	}{
		{"os", atomicfile.OS, runtime.GOOS == "linux"},
		{"portable", atomicfile.Portable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			for p, data := range map[string]string{a: "one", b: "two"} {
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.fsys.Exchange(a, b)
			want := map[string]string{a: "two", b: "one"}
			if !tc.supported {
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("Exchange = %v, want errors.ErrUnsupported", err)
				}
				want = map[string]string{a: "one", b: "two"}
			} else if err != nil {
				t.Fatalf("Exchange: %v", err)
			}
			for p, w := range want {
				if got, err := os.ReadFile(p); err != nil || string(got) != w {
					t.Errorf("%s = %q, %v; want %q", filepath.Base(p), got, err, w)
				}
			}
			if !tc.supported {
				return
			}
			err = tc.fsys.Exchange(a, filepath.Join(dir, "missing"))
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Exchange with a missing name = %v, want fs.ErrNotExist", err)
			}
			if got, err := os.ReadFile(a); err != nil || string(got) != "two" {
				t.Errorf("after a failed Exchange a = %q, %v; want %q", got, err, "two")
			}
		})
	}
}
