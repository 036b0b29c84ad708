//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package progress

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a terminal; without the terminal's
// ioctl, an *os.File that is a character device is taken for one.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// width returns 0: the terminal's width is not known here.
func width(io.Writer) int { return 0 }
