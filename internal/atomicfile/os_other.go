//go:build unix && !linux

package atomicfile

import (
	"errors"
	"time"
)

// renameNoReplace is Linux-only (renameat2(2)): elsewhere Publish uses
// link(2).
func renameNoReplace(oldpath, newpath string) error { return errNoRenameat2 }

// syncfs is Linux-only; callers fall back to syncing each file.
func syncfs(fd int) error { return errors.ErrUnsupported }

// openUnnamed is Linux-only (O_TMPFILE): elsewhere callers write named
// temporary files.
func openUnnamed(dir string, perm uint32) (int, error) { return -1, errors.ErrUnsupported }

// linkUnnamed is Linux-only, as unnamed files are.
func linkUnnamed(fd int, path string) error { return errors.ErrUnsupported }

// futimesNano is only called on unnamed files, which are Linux-only.
func futimesNano(fd int, t time.Time) error { return errors.ErrUnsupported }

// SpreadSubdirs is Linux-only (FS_TOPDIR_FL, for ext2/3/4): elsewhere the
// filesystem places folders as it will.
func SpreadSubdirs(dir string) error { return errors.ErrUnsupported }
