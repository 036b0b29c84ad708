//go:build unix

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
	fd, st, err := openStat(path)
	if err == syscall.ENOENT {
		err = &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err != nil {
		return nil, 0, nil, err
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

// ReadAll reads the file at path as far as the size fstat(2) reports, in one
// read when nothing changes meanwhile: the read path of files whose content
// the caller verifies (a file that shrank is returned short, one that grew
// is cut at its old size). A missing file is a bare syscall.ENOENT (it
// matches fs.ErrNotExist), which costs no allocation; a folder is an
// *fs.PathError wrapping syscall.EISDIR; other errors are *fs.PathError
// values.
func ReadAll(path string) ([]byte, error) {
	fd, st, err := openStat(path)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	}
	buf := make([]byte, st.Size)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break // the file shrank
		}
		n += m
	}
	return buf[:n], nil
}

// Exists reports whether anything is at path (stat(2), following symbolic
// links); a missing name or a missing folder on the way is false, not an
// error. Other errors are *fs.PathError values.
func Exists(path string) (bool, error) {
	var st syscall.Stat_t
	switch err := IgnoringEINTR(func() error { return syscall.Stat(path, &st) }); err {
	case nil:
		return true, nil
	case syscall.ENOENT, syscall.ENOTDIR:
		return false, nil
	default:
		return false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
}

// openStat opens path read-only and fstats it. A missing file is a bare
// syscall.ENOENT; other errors are *fs.PathError values.
func openStat(path string) (int, syscall.Stat_t, error) {
	var st syscall.Stat_t
	var fd int
	err := IgnoringEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		return err
	})
	if err == syscall.ENOENT {
		return -1, st, err
	}
	if err != nil {
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := IgnoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		syscall.Close(fd)
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return fd, st, nil
}
