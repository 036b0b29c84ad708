//go:build !linux

package disk

import "errors"

// Extended attributes are used on Linux only; elsewhere every derived-cache
// entry is a file.

func getAttr(path, name string) ([]byte, error) { return nil, errors.ErrUnsupported }

func setAttr(path, name string, value []byte, create bool) error { return errors.ErrUnsupported }

func removeAttr(path, name string) error { return nil }
