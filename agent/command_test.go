package agent_test

import (
	"context"
	"encoding/json"
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

// helper returns a Command that runs the test binary as the helper program
// with args.
func helper(t *testing.T, spec agent.CommandSpec, args ...string) *agent.Command {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec.Command = self
	spec.Args = args
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	spec.Env[helperEnv] = "1"
	return agent.NewCommand("helper", spec)
}

func request() *agent.Request {
	return &agent.Request{
		Thread: "01JCQ5S7Q7T7Y3V0Z3K5W8M9AB", Workflow: "review-loop", Role: "developer",
		Prompt: "Implement the plan.\n", Home: "/home/u/.uncaged/workflow", Store: "/srv/store", Attempt: 2,
	}
}

// runErr returns err as a *RunError, failing the test if it is not one.
func runErr(t *testing.T, err error) *agent.RunError {
	t.Helper()
	var re *agent.RunError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v (%T), want a *agent.RunError", err, err)
	}
	if !errors.Is(err, agent.ErrFailed) {
		t.Errorf("errors.Is(%v, ErrFailed) = false", err)
	}
	if re.Result == nil {
		t.Fatalf("RunError.Result is nil")
	}
	return re
}

func TestCommandExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       agent.CommandSpec
		args       []string
		cancel     time.Duration // cancel the context after this long
		notFound   bool
		wantCode   int
		wantReason string
		wantIs     error
	}{
		{name: "ok", args: []string{"echo"}, wantCode: 0},
		{name: "exit 3", args: []string{"exit", "3"}, wantCode: 3, wantReason: "exit status 3"},
		{name: "timeout", spec: agent.CommandSpec{Timeout: 300 * time.Millisecond}, args: []string{"sleep", "20s"},
			wantCode: 124, wantReason: "timed out after 300ms", wantIs: context.DeadlineExceeded},
		{name: "not found", notFound: true, wantCode: 127, wantReason: "command not found: uwf-no-such-agent-command"},
		{name: "killed", args: []string{"kill-self", "9"}, wantCode: 137, wantReason: "killed by signal 9 (killed)"},
		{name: "interrupted", args: []string{"sleep", "20s"}, cancel: 300 * time.Millisecond,
			wantCode: 130, wantReason: "interrupted", wantIs: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := helper(t, tc.spec, tc.args...)
			if tc.notFound {
				c = agent.NewCommand("helper", agent.CommandSpec{Command: "uwf-no-such-agent-command"})
			}
			ctx := t.Context()
			if tc.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(tc.cancel, cancel)
			}
			start := time.Now()
			res, err := c.Run(ctx, request())
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Run took %v", took)
			}
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("Run() error = %v", err)
				}
				if res.ExitCode != 0 || res.Raw == "" || res.Duration <= 0 {
					t.Errorf("Run() = %+v, want exit 0, some output and a duration", res)
				}
				return
			}
			if res != nil {
				t.Errorf("Run() result = %+v, want nil with an error", res)
			}
			re := runErr(t, err)
			if re.Result.ExitCode != tc.wantCode || agent.ExitCode(err) != tc.wantCode {
				t.Errorf("exit code = %d, ExitCode(err) = %d, want %d", re.Result.ExitCode, agent.ExitCode(err), tc.wantCode)
			}
			if re.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q", re.Reason, tc.wantReason)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
			if re.Agent != "helper" || !strings.HasPrefix(err.Error(), "agent helper: "+tc.wantReason) {
				t.Errorf("Error() = %q", err)
			}
		})
	}
}

func TestCommandCapturesOnFailure(t *testing.T) {
	t.Parallel()
	_, err := helper(t, agent.CommandSpec{}, "exit", "4").Run(t.Context(), request())
	re := runErr(t, err)
	if re.Result.Raw != "partial output\n" {
		t.Errorf("Raw = %q, want the partial output", re.Result.Raw)
	}
	if re.Result.Stderr != "some noise\nboom 4\n" {
		t.Errorf("Stderr = %q", re.Result.Stderr)
	}
	if want := "agent helper: exit status 4 (stderr: boom 4)"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestCommandEnvCwdStdinArgs(t *testing.T) {
	t.Setenv("PARENT_VAR", "from the parent")
	dir := t.TempDir()
	weird := []string{"$(echo hi); rm -rf /", "*", "a b", "'quoted'", "`uname`", "", "--flag=x y"}
	spec := agent.CommandSpec{Env: map[string]string{"SPEC_VAR": "from the spec", "UWF_ROLE": "overridden"}}
	c := helper(t, spec, append([]string{"echo"}, weird...)...)
	req := request()
	req.Cwd = dir
	res, err := c.Run(t.Context(), req)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	var got helperReport
	if err := json.Unmarshal([]byte(res.Raw), &got); err != nil {
		t.Fatalf("helper output %q: %v", res.Raw, err)
	}
	if got.Stdin != req.Prompt {
		t.Errorf("stdin = %q, want the prompt %q", got.Stdin, req.Prompt)
	}
	if strings.Join(got.Args, "\x00") != strings.Join(weird, "\x00") {
		t.Errorf("args = %q, want them verbatim: %q", got.Args, weird)
	}
	wantDir, _ := filepath.EvalSymlinks(dir)
	if gotDir, _ := filepath.EvalSymlinks(got.Cwd); gotDir != wantDir {
		t.Errorf("cwd = %q, want %q", got.Cwd, dir)
	}
	want := map[string]string{
		"UWF_THREAD": req.Thread, "UWF_ROLE": "developer", "UWF_HOME": req.Home, "UWF_STORE": req.Store,
		"UWF_WORKFLOW": "review-loop", "UWF_ATTEMPT": "2", "SPEC_VAR": "from the spec", "PARENT_VAR": "from the parent",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], v)
		}
	}
}

func TestCommandRelativePathFromCwd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"hello from $UWF_ROLE\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Cwd = dir
	res, err := agent.NewCommand("sh", agent.CommandSpec{Command: "./agent.sh"}).Run(t.Context(), req)
	if err != nil || res.Raw != "hello from developer\n" {
		t.Fatalf("Run(./agent.sh) = %+v, %v", res, err)
	}
	_, err = agent.NewCommand("txt", agent.CommandSpec{Command: "./plain.txt"}).Run(t.Context(), req)
	if code := agent.ExitCode(err); code != agent.ExitCannotRun {
		t.Errorf("Run(./plain.txt) exit code = %d (%v), want %d", code, err, agent.ExitCannotRun)
	}
	req.Cwd = filepath.Join(dir, "missing")
	_, err = agent.NewCommand("sh", agent.CommandSpec{Command: "/bin/sh", Args: []string{"-c", "true"}}).Run(t.Context(), req)
	if code := agent.ExitCode(err); code != agent.ExitCannotRun {
		t.Errorf("Run in a missing cwd: exit code = %d (%v), want %d", code, err, agent.ExitCannotRun)
	}
}

func TestCommandOutputLimits(t *testing.T) {
	t.Parallel()
	_, err := helper(t, agent.CommandSpec{MaxOutput: 1024}, "huge", "1000000").Run(t.Context(), request())
	re := runErr(t, err)
	if re.Reason != "output exceeds 1 KiB" || len(re.Result.Raw) != 1024 || !re.Result.RawCut || re.Result.StderrCut {
		t.Errorf("Reason = %q, len(Raw) = %d, RawCut %v, StderrCut %v; want the limit named, 1024 bytes kept and only RawCut",
			re.Reason, len(re.Result.Raw), re.Result.RawCut, re.Result.StderrCut)
	}

	res, err := helper(t, agent.CommandSpec{}, "huge", strconv.Itoa(1<<20)).Run(t.Context(), request())
	if err != nil || len(res.Raw) != 1<<20 || res.RawCut || res.StderrCut {
		t.Fatalf("1 MiB of output under the default limit: len = %d, RawCut %v, StderrCut %v, err = %v", len(res.Raw), res.RawCut, res.StderrCut, err)
	}

	res, err = helper(t, agent.CommandSpec{}, "stderr-huge", strconv.Itoa(3<<20)).Run(t.Context(), request())
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if len(res.Stderr) != agent.MaxStderr || !strings.HasSuffix(res.Stderr, "eeeEND\n") || !res.StderrCut || res.RawCut {
		t.Errorf("len(Stderr) = %d (ends %q), StderrCut %v, RawCut %v; want the last %d bytes, StderrCut only",
			len(res.Stderr), res.Stderr[len(res.Stderr)-10:], res.StderrCut, res.RawCut, agent.MaxStderr)
	}
}

func TestDescribeExit(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]string{
		0: "ok", 1: "exit status 1", 3: "exit status 3", 124: "timed out", 126: "cannot run",
		127: "command not found", 130: "interrupted", 137: "killed by signal 9 (killed)",
		143: "killed by signal 15 (terminated)", 255: "exit status 255",
	} {
		if got := agent.DescribeExit(code); got != want {
			t.Errorf("DescribeExit(%d) = %q, want %q", code, got, want)
		}
	}
	if got := agent.SignalExitCode(syscall.SIGKILL); got != 137 {
		t.Errorf("SignalExitCode(SIGKILL) = %d, want 137", got)
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{context.Canceled, 130},
		{context.DeadlineExceeded, 124},
		{errors.New("x"), 1},
		{&agent.RunError{Agent: "a", Reason: "r", Result: &agent.Result{ExitCode: 42}}, 42},
	} {
		if got := agent.ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
