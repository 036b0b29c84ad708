package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// uwfProcess returns a command running this test binary as the uwf binary
// (see TestMain) with a clean environment around home.
func uwfProcess(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+home, "UWF_STORE=", "UWF_DURABILITY=", "UWF_LOG_LEVEL=")
	return cmd
}

// TestFirstUseConcurrent starts several uwf processes on a home that does
// not exist yet: they all create (or find) the store and succeed.
func TestFirstUseConcurrent(t *testing.T) {
	home := filepath.Join(t.TempDir(), "fresh", "home")
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([][2]bytes.Buffer, n)
	for i := range cmds {
		cmds[i] = uwfProcess(t, home, "cas", "put-text", "x")
		cmds[i].Stdout, cmds[i].Stderr = &outs[i][0], &outs[i][1]
	}
	for _, c := range cmds { // all start before any can finish creating the store
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	first := ""
	for i, c := range cmds {
		err := c.Wait()
		stdout, stderr := outs[i][0].String(), outs[i][1].String()
		if i == 0 {
			first = stdout
		}
		if err != nil || stderr != "" || stdout != first || len(stdout) != 14 {
			t.Errorf("process %d: %v, stdout %q (first: %q), stderr %q", i, err, stdout, first, stderr)
		}
	}
	// The store is whole: fsck finds nothing wrong.
	cmd := uwfProcess(t, home, "cas", "fsck")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.HasSuffix(string(b), ": 0 problems\n") {
		t.Errorf("fsck after concurrent first use: %v\n%s", err, b)
	}
}

// TestProcessExitCodes runs the binary to check main: exit statuses and
// stdout/stderr separation.
func TestProcessExitCodes(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string // prefix
	}{
		{[]string{"cas", "has", "EYHPV6X8XHTCS"}, 3, "no\n", ""},
		{[]string{"cas", "get", "nothash"}, 2, "", `uwf: invalid hash "nothash"`},
		{[]string{"cas", "nope"}, 2, "", `uwf: unknown subcommand "nope"`},
		{[]string{"--store", "postgres://x/y", "cas", "fsck"}, 1, "", "uwf: store postgres://x/y: the PostgreSQL backend"},
	} {
		cmd := uwfProcess(t, home, tc.args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || o.String() != tc.stdout || !strings.HasPrefix(e.String(), tc.stderr) || (tc.stderr == "") != (e.Len() == 0) {
			t.Errorf("uwf %q: exit %d, stdout %q, stderr %q; want %d, %q, %q...", tc.args, code, o.String(), e.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}
