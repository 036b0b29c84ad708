//go:build !linux

package disk

import "errors"

// notifyDir has no file notification to offer outside Linux: watchers
// poll.
func notifyDir(dir string, wake func()) (stop func(), err error) {
	return nil, errors.ErrUnsupported
}
