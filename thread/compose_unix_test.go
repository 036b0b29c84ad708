//go:build unix

package thread_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processAlive reports whether process pid, or on Linux any process of the
// process group it leads (an agent runs in a group of its own, with its
// children), still runs 3 s after the call (ending takes a moment: a
// SIGTERM, then a SIGKILL after the grace). Zombies waiting to be reaped
// by init do not count.
func processAlive(pid int) bool {
	deadline := time.Now().Add(3 * time.Second)
	for {
		if !groupAlive(pid) {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func groupAlive(pid int) bool {
	if runtime.GOOS != "linux" {
		return syscall.Kill(pid, 0) == nil
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split
		// after its closing parenthesis.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		own, _ := strconv.Atoi(strings.Fields(s)[0])
		pgrp, _ := strconv.Atoi(f[2])
		if own == pid || pgrp == pid {
			return true
		}
	}
	return false
}
