//go:build unix

package atomicfile

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// LockFile is an open lock file. Its lock is flock(2) on an open file
// description of its own, so two LockFiles exclude each other the same way
// within a process and across processes, and a process that dies releases
// its locks. A LockFile is not safe for concurrent use.
type LockFile struct {
	fd   int
	path string
}

// OpenLock opens the lock file at path, creating it (mode 0o644) if it is
// missing. Errors are *fs.PathError values.
func OpenLock(path string) (*LockFile, error) {
	fd, err := open(path, syscall.O_RDONLY|syscall.O_CREAT, 0o644)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &LockFile{fd: fd, path: path}, nil
}

// Lock takes the lock, exclusive or shared, waiting until it is granted.
func (l *LockFile) Lock(exclusive bool) error {
	return l.flock(exclusive, 0)
}

// TryLock takes the lock, exclusive or shared, without waiting: if another
// holder's lock conflicts the error is [ErrWouldBlock].
func (l *LockFile) TryLock(exclusive bool) error {
	return l.flock(exclusive, unix.LOCK_NB)
}

func (l *LockFile) flock(exclusive bool, flags int) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	err := ignoringEINTR(func() error { return unix.Flock(l.fd, how|flags) })
	if err == unix.EWOULDBLOCK && flags&unix.LOCK_NB != 0 {
		return ErrWouldBlock
	}
	if err != nil {
		return &fs.PathError{Op: "flock", Path: l.path, Err: err}
	}
	return nil
}

// Close closes the file, releasing its lock.
func (l *LockFile) Close() error {
	if l.fd < 0 {
		return &fs.PathError{Op: "close", Path: l.path, Err: fs.ErrClosed}
	}
	err := syscall.Close(l.fd)
	l.fd = -1
	if err != nil && err != syscall.EINTR {
		return &fs.PathError{Op: "close", Path: l.path, Err: err}
	}
	return nil
}
