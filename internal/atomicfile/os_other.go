//go:build unix && !linux

package atomicfile

import (
	"errors"
	"syscall"
	"time"
)

// renameNoReplace is not available outside Linux: publish with link(2).
func renameNoReplace(oldpath, newpath string) error { return errNoRenameat2 }

// syncfs is Linux-only; callers fall back to syncing each file.
func syncfs(fd int) error { return errors.ErrUnsupported }

// futimes sets fd's access and modification times (to the microsecond).
func futimes(fd int, t time.Time) error {
	tv := syscall.NsecToTimeval(t.UnixNano())
	return syscall.Futimes(fd, []syscall.Timeval{tv, tv})
}
