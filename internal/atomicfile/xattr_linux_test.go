package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestAttr: an attribute set is read back (one larger than the first read's
// buffer too); a missing one is ErrNoAttr; create refuses to replace one;
// removing a missing one is no error; a missing file is fs.ErrNotExist.
func TestAttr(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	const name = "user.uwf.test"
	if _, err := atomicfile.GetAttr(p, name); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("%s keeps no user extended attributes", p)
	} else if !errors.Is(err, atomicfile.ErrNoAttr) {
		t.Fatalf("GetAttr of a missing attribute = %v, want ErrNoAttr", err)
	}
	for _, v := range []string{"small", strings.Repeat("v", 3000)} {
		if err := atomicfile.SetAttr(p, name, []byte(v), false); err != nil {
			t.Fatal(err)
		}
		if got, err := atomicfile.GetAttr(p, name); err != nil || string(got) != v {
			t.Fatalf("GetAttr = %d bytes, %v; want %d", len(got), err, len(v))
		}
	}
	if err := atomicfile.SetAttr(p, name, []byte("new"), true); !errors.Is(err, fs.ErrExist) {
		t.Errorf("SetAttr with create over an attribute = %v, want fs.ErrExist", err)
	}
	if err := atomicfile.RemoveAttr(p, name); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.RemoveAttr(p, name); err != nil {
		t.Errorf("RemoveAttr of a missing attribute = %v, want nil", err)
	}
	if _, err := atomicfile.GetAttr(p+"-missing", name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("GetAttr of a missing file = %v, want fs.ErrNotExist", err)
	}
}
