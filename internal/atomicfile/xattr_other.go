//go:build !linux

package atomicfile

import "errors"

// GetAttr reports [errors.ErrUnsupported]: extended attributes are used on
// Linux only.
func GetAttr(path, name string) ([]byte, error) { return nil, errors.ErrUnsupported }

// SetAttr reports [errors.ErrUnsupported], as GetAttr does.
func SetAttr(path, name string, value []byte, create bool) error { return errors.ErrUnsupported }

// RemoveAttr does nothing: no attribute was ever set.
func RemoveAttr(path, name string) error { return nil }
