package disk

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// getAttr returns the extended attribute name of the file at path. The
// error wraps [errNoAttr] when the file has no such attribute and
// [errors.ErrUnsupported] when the filesystem keeps no user attributes.
func getAttr(path, name string) ([]byte, error) {
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

// setAttr sets the extended attribute name of the file at path to value;
// with create set it fails (wrapping [fs.ErrExist]) if the file has one.
func setAttr(path, name string, value []byte, create bool) error {
	flags := 0
	if create {
		flags = unix.XATTR_CREATE
	}
	return attrErr(unix.Setxattr(path, name, value, flags))
}

// removeAttr removes the extended attribute name of the file at path, if
// it has one.
func removeAttr(path, name string) error {
	if err := attrErr(unix.Removexattr(path, name)); err != nil && !errors.Is(err, errNoAttr) {
		return err
	}
	return nil
}

func attrErr(err error) error {
	switch err {
	case nil:
		return nil
	case unix.ENODATA:
		return errNoAttr
	case unix.ENOTSUP:
		return errors.ErrUnsupported
	case unix.EEXIST:
		return fs.ErrExist
	}
	return err
}
