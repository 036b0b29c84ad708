//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package progress

import "golang.org/x/sys/unix"

const ioctlReadTermios = unix.TIOCGETA
