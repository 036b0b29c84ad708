//go:build unix

package thread_test

import "syscall"

// processAlive reports whether process pid exists (and is not a zombie
// this test would have to reap: agents are reaped by their runner).
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
