//go:build unix

package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
)

// The process-group tests need Unix: Windows has neither process groups
// nor signals to probe a process with (see [agent.Command]).

// alive reports whether pid is a live process: not gone and not a zombie
// waiting for a parent that may never reap it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// waitDead waits up to 5 s for pid to die.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d outlived the run", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the helper wrote no pid file: %v", err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestCommandKillsProcessGroup(t *testing.T) {
	t.Parallel()
	grace := agent.CommandSpec{KillGrace: 300 * time.Millisecond}

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		spec := grace
		spec.Timeout = 4 * time.Second
		start := time.Now()
		_, err := helper(t, spec, "grandchild", pidFile, "sleep").Run(t.Context(), request())
		if code := agent.ExitCode(err); code != agent.ExitTimeout {
			t.Fatalf("exit code = %d (%v), want %d", code, err, agent.ExitTimeout)
		}
		if took := time.Since(start); took > 8*time.Second {
			t.Errorf("Run took %v; the grandchild held the output open", took)
		}
		waitDead(t, readPid(t, pidFile))
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				if _, err := os.Stat(pidFile); err == nil {
					cancel()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		_, err := helper(t, grace, "grandchild", pidFile, "sleep").Run(ctx, request())
		if !errors.Is(err, context.Canceled) || agent.ExitCode(err) != agent.ExitInterrupted {
			t.Fatalf("Run() error = %v, want an interruption (130)", err)
		}
		waitDead(t, readPid(t, pidFile))
	})

	t.Run("leader exits", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		if _, err := helper(t, grace, "grandchild", pidFile, "exit").Run(t.Context(), request()); err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		waitDead(t, readPid(t, pidFile))
	})

	t.Run("SIGTERM ignored", func(t *testing.T) {
		t.Parallel()
		spec := grace
		spec.Timeout = 300 * time.Millisecond
		start := time.Now()
		_, err := helper(t, spec, "ignore-term", "20s").Run(t.Context(), request())
		if code := agent.ExitCode(err); code != agent.ExitTimeout {
			t.Fatalf("exit code = %d (%v), want %d", code, err, agent.ExitTimeout)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Run took %v, want about timeout + grace", took)
		}
	})
}
