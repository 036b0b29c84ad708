//go:build unix && !linux

package atomicfile

import "errors"

// renameNoReplace is Linux-only (renameat2(2)): elsewhere Publish uses
// link(2).
func renameNoReplace(oldpath, newpath string) error { return errNoRenameat2 }

// syncfs is Linux-only; callers fall back to syncing each file.
func syncfs(fd int) error { return errors.ErrUnsupported }
