//go:build unix

// Package rawfile reads small files with plain system calls: open, fstat,
// read, close. os.Open also registers every descriptor with the runtime's
// poller (on Linux four fcntl calls and a failing epoll_ctl for a regular
// file), which is most of the cost of reading many small files.
package rawfile

import (
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// ReadFile reads the file at path. A regular file of at most limit bytes is
// read whole into data, with its size. A larger regular file is not read:
// data is nil and size is its size, for the caller to refuse. Anything else
// but a folder (a FIFO, a device) is returned open as f, unread, for the
// caller to read and close. A folder is an *fs.PathError wrapping
// syscall.EISDIR; other errors are *fs.PathError values too (a missing file
// matches fs.ErrNotExist).
func ReadFile(path string, limit int64) (data []byte, size int64, f *os.File, err error) {
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, 0, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		syscall.Close(fd)
		return nil, 0, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
	case syscall.S_IFDIR:
		syscall.Close(fd)
		return nil, 0, nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	default:
		return nil, 0, os.NewFile(uintptr(fd), path), nil
	}
	defer syscall.Close(fd)
	if st.Size > limit {
		return nil, st.Size, nil, nil
	}
	// Room for one byte more than the size, so that a file read whole
	// takes one read and one at its end; a file that grew meanwhile is read
	// on until its end or the limit.
	buf := make([]byte, 0, st.Size+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
		m, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, 0, nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return buf, int64(len(buf)), nil, nil
		}
		buf = buf[:len(buf)+m]
		if int64(len(buf)) > limit {
			return nil, int64(len(buf)), nil, nil
		}
	}
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
