//go:build !unix

package rawfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadFile reads the file at path. A regular file of at most limit bytes is
// read whole into data, with its size. A larger regular file is not read:
// data is nil and size is its size, for the caller to refuse. Anything else
// but a folder is returned open as f, unread, for the caller to read and
// close. A folder is an *fs.PathError wrapping syscall.EISDIR; other errors
// are *fs.PathError values too (a missing file matches fs.ErrNotExist).
func ReadFile(path string, limit int64) (data []byte, size int64, f *os.File, err error) {
	f, fi, err := openStat(path)
	if err != nil {
		return nil, 0, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, f, nil
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fi.Size(), nil, nil
	}
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, nil, err
	}
	if int64(len(data)) > limit {
		return nil, int64(len(data)), nil, nil
	}
	return data, int64(len(data)), nil, nil
}

// ReadAll reads the file at path as far as the size its metadata reports (a
// file that shrank is returned short, one that grew is cut at its old size).
// A missing file matches fs.ErrNotExist; a folder is an *fs.PathError
// wrapping syscall.EISDIR; errors are *fs.PathError values.
func ReadAll(path string) ([]byte, error) {
	f, fi, err := openStat(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, fi.Size())
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// Exists reports whether anything is at path (following symbolic links); a
// missing name is false, not an error. Other errors are *fs.PathError
// values.
func Exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// openStat opens path and stats it; a folder is an *fs.PathError wrapping
// syscall.EISDIR.
func openStat(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	}
	return f, fi, nil
}
