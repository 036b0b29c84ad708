// Package rawfile reads small files with plain system calls: open, fstat,
// read, close. os.Open also registers every descriptor with the runtime's
// poller (on Linux four fcntl calls and a failing epoll_ctl for a regular
// file), which is most of the cost of reading many small files. Outside Unix
// the same functions go through package os.
//
// It also holds the one retry loop on EINTR ([IgnoringEINTR]) that this
// module's plain system calls share.
package rawfile

import "syscall"

// IgnoringEINTR calls f until it returns anything but syscall.EINTR (a
// signal interrupted the call before it did anything) and returns that.
func IgnoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
