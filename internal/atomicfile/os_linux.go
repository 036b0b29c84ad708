package atomicfile

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	atFDCWD         = -0x64 // AT_FDCWD
	renameNoreplace = 0x1   // RENAME_NOREPLACE
)

// noRenameat2 is set once the kernel has said it has no renameat2(2).
var noRenameat2 atomic.Bool

// renameNoReplace calls renameat2(AT_FDCWD, oldpath, AT_FDCWD, newpath,
// RENAME_NOREPLACE). It returns errNoRenameat2 if the kernel lacks the call
// (ENOSYS) or the filesystem the flag (EINVAL).
func renameNoReplace(oldpath, newpath string) error {
	if sysRenameat2 < 0 || noRenameat2.Load() {
		return errNoRenameat2
	}
	op, err := syscall.BytePtrFromString(oldpath)
	if err != nil {
		return err
	}
	np, err := syscall.BytePtrFromString(newpath)
	if err != nil {
		return err
	}
	num, dirfd := sysRenameat2, atFDCWD // variables: the conversions happen at run time
	for {
		_, _, e := syscall.Syscall6(uintptr(num), uintptr(dirfd), uintptr(unsafe.Pointer(op)),
			uintptr(dirfd), uintptr(unsafe.Pointer(np)), renameNoreplace, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		case syscall.ENOSYS:
			noRenameat2.Store(true)
			return errNoRenameat2
		case syscall.EINVAL:
			return errNoRenameat2
		}
		return e
	}
}

// syncfs calls syncfs(2) on fd.
func syncfs(fd int) error {
	if sysSyncfs < 0 {
		return errors.ErrUnsupported
	}
	num := sysSyncfs
	for {
		_, _, e := syscall.Syscall(uintptr(num), uintptr(fd), 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		case syscall.ENOSYS:
			return errors.ErrUnsupported
		}
		return e
	}
}

// futimes sets fd's access and modification times with utimensat(2) on the
// descriptor itself (a NULL path), to the nanosecond.
func futimes(fd int, t time.Time) error {
	ts := [2]syscall.Timespec{syscall.NsecToTimespec(t.UnixNano()), syscall.NsecToTimespec(t.UnixNano())}
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
