//go:build unix

package proctest

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GroupRuns reports whether process pid, or on Linux any process of the
// process group it leads (an agent runs in a group of its own, with its
// children), runs. Zombies waiting to be reaped do not count. Elsewhere
// it asks only about pid.
func GroupRuns(pid int) bool {
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

// GroupGone waits up to d for process pid and its group to end
// ([GroupRuns]), and reports whether they did.
func GroupGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !GroupRuns(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
