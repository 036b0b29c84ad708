package atomicfile

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// GetAttr returns the extended attribute name of the file at path
// (getxattr(2)). The error wraps [ErrNoAttr] when the file has no such
// attribute and [errors.ErrUnsupported] when its filesystem keeps no user
// attributes (or the system has none: outside Linux).
func GetAttr(path, name string) ([]byte, error) {
	buf := make([]byte, 1024)
	for {
		n, err := unix.Getxattr(path, name, buf)
		if err == unix.ERANGE {
			// Larger than buf: ask its size, then read it.
			if n, err = unix.Getxattr(path, name, nil); err != nil {
				return nil, attrErr(err)
			}
			buf = make([]byte, n+64)
			continue
		}
		if err != nil {
			return nil, attrErr(err)
		}
		return buf[:n], nil
	}
}

// SetAttr sets the extended attribute name of the file at path to value
// (setxattr(2)); with create set it fails, wrapping [fs.ErrExist], if the
// file has one. It errs as [GetAttr] does.
func SetAttr(path, name string, value []byte, create bool) error {
	flags := 0
	if create {
		flags = unix.XATTR_CREATE
	}
	return attrErr(unix.Setxattr(path, name, value, flags))
}

// RemoveAttr removes the extended attribute name of the file at path, if it
// has one (removexattr(2)).
func RemoveAttr(path, name string) error {
	if err := attrErr(unix.Removexattr(path, name)); err != nil && !errors.Is(err, ErrNoAttr) {
		return err
	}
	return nil
}

func attrErr(err error) error {
	switch err {
	case nil:
		return nil
	case unix.ENODATA:
		return ErrNoAttr
	case unix.ENOTSUP:
		return errors.ErrUnsupported
	case unix.EEXIST:
		return fs.ErrExist
	}
	return err
}
