//go:build !unix

package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
)

// LockFile is an open lock file. Outside Unix there is no flock(2): no
// LockFile can be opened.
type LockFile struct{}

// OpenLock fails outside Unix with an error wrapping
// [errors.ErrUnsupported].
func OpenLock(path string) (*LockFile, error) {
	return nil, &fs.PathError{Op: "open lock", Path: path, Err: errUnsupportedLock}
}

var errUnsupportedLock = fmt.Errorf("file locks (flock) are not available on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Lock is never reached (OpenLock fails).
func (l *LockFile) Lock(exclusive bool) error { return errUnsupportedLock }

// TryLock is never reached (OpenLock fails).
func (l *LockFile) TryLock(exclusive bool) error { return errUnsupportedLock }

// Close does nothing.
func (l *LockFile) Close() error { return nil }
