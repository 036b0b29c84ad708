//go:build !linux

package dirnotify

import "errors"

// Start has no file notification to offer outside Linux: it fails with
// an error wrapping [errors.ErrUnsupported], and callers poll.
func Start(dir, name string, wake func()) (stop func(), err error) {
	return nil, errors.ErrUnsupported
}
