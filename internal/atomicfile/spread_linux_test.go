package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestSpreadSubdirs: on a filesystem with the flag (ext2/3/4), the folder
// gets FS_TOPDIR_FL (chattr +T) and keeps its other flags, a second call
// changes nothing, and a missing folder is an error naming it. Elsewhere
// the error wraps errors.ErrUnsupported.
func TestSpreadSubdirs(t *testing.T) {
	const topdir = 0x00020000
	dir := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	flags := func() uint32 {
		t.Helper()
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		v, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	err := atomicfile.SpreadSubdirs(dir)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no FS_TOPDIR_FL here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	before := flags()
	if before&topdir == 0 {
		t.Fatalf("flags %#x after SpreadSubdirs: FS_TOPDIR_FL not set", before)
	}
	if err := atomicfile.SpreadSubdirs(dir); err != nil {
		t.Fatalf("second SpreadSubdirs: %v", err)
	}
	if after := flags(); after != before {
		t.Errorf("flags %#x after a second call, want %#x", after, before)
	}
	missing := filepath.Join(dir, "none")
	if err := atomicfile.SpreadSubdirs(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("SpreadSubdirs(missing) = %v, want an error wrapping fs.ErrNotExist", err)
	}
}
