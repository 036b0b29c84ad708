package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/uncaged/uwf/config"
)

// Defaults of a [CommandSpec].
const (
	// DefaultTimeout bounds one run of a command when its spec sets none.
	DefaultTimeout = 30 * time.Minute
	// DefaultMaxOutput bounds a command's stdout when its spec sets none:
	// 16 MiB, the default size limit of one node. More is a failure.
	DefaultMaxOutput = 16 << 20
	// DefaultKillGrace is how long a command's process group has between
	// SIGTERM and SIGKILL, when its spec sets none.
	DefaultKillGrace = 2 * time.Second
	// MaxStderr is how much of a command's stderr is kept: its last 1 MiB
	// (from a line start, when there is one).
	MaxStderr = 1 << 20
)

// CommandSpec configures a [Command]: the agents of config.yaml.
type CommandSpec struct {
	// Command is the program: a name looked up in PATH, or a path (a
	// relative path with a slash is taken from the run's working
	// directory). It is never given to a shell.
	Command string
	// Args are its arguments, passed verbatim.
	Args []string
	// Env holds variables added to the parent's environment (the UWF_
	// variables of the request override them).
	Env map[string]string
	// Timeout bounds one run; 0 means [DefaultTimeout].
	Timeout time.Duration
	// MaxOutput bounds stdout in bytes; 0 means [DefaultMaxOutput].
	MaxOutput int
	// KillGrace is the time between SIGTERM and SIGKILL when the run is
	// stopped; 0 means [DefaultKillGrace].
	KillGrace time.Duration
	// Prompt says how the prompt is passed: [config.PromptStdin] ("" too),
	// [config.PromptArg] (the last argument, at most [MaxPromptArg] bytes)
	// or [config.PromptFile] (a file only the user can read, removed when
	// the run ends, its path the last argument).
	Prompt string
	// PromptFlag, with an argument or a file, is the flag the prompt or
	// the path follows ("--message-file"); "" means none.
	PromptFlag string
	// Output says how stdout is read: [config.OutputText] ("" too) takes
	// it as the raw output; a structured format (claude-code, codex,
	// cursor, gemini, opencode, aider) takes the tool's final answer as
	// the raw output and what it reports of its session as
	// [Result.Session], and fails the run when the tool reports an error.
	Output string
}

// MaxPromptArg bounds a prompt passed as an argument: Linux refuses a
// longer single argument (MAX_ARG_STRLEN, 128 KiB with its NUL).
const MaxPromptArg = 128<<10 - 1

// Command is an agent that runs a program: the assembled prompt on its
// stdin, its stdout the raw output. The program runs without a shell, in
// the request's working directory, with the parent's environment plus the
// spec's Env plus UWF_THREAD, UWF_ROLE, UWF_HOME, UWF_STORE,
// UWF_DURABILITY, UWF_WORKFLOW and UWF_ATTEMPT, in a process group of its own.
//
// When the run times out or its context is cancelled, the whole group gets
// SIGTERM, then SIGKILL after the grace period. When the command exits,
// whatever it left running in its group is killed too: a run owns its
// process group. On Windows, which has neither process groups nor SIGTERM,
// the command alone is terminated at once and what it started may outlive
// it. A Command is safe for concurrent use.
type Command struct {
	name string
	spec CommandSpec
}

var _ Agent = (*Command)(nil)

// NewCommand returns an agent named name that runs spec. The spec's maps
// and slices are copied.
func NewCommand(name string, spec CommandSpec) *Command {
	spec.Args = slices.Clone(spec.Args)
	spec.Env = maps.Clone(spec.Env)
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.MaxOutput <= 0 {
		spec.MaxOutput = DefaultMaxOutput
	}
	if spec.KillGrace <= 0 {
		spec.KillGrace = DefaultKillGrace
	}
	return &Command{name: name, spec: spec}
}

// Name returns the name given to [NewCommand].
func (c *Command) Name() string { return c.name }

// Sentinel causes that end a run early, read back with context.Cause.
var (
	errTimeout  = errors.New("timeout")
	errOverflow = errors.New("output too large")
)

// Run runs the command once for req. A non-zero exit, a timeout, a missing
// command, a signal, too much output or an interruption is a *[RunError]
// with the exit code a shell would report ([ExitTimeout], [ExitNotFound],
// [ExitCannotRun], [ExitSignal]+N, [ExitInterrupted]) and what was
// captured. A non-zero exit that the tool's structured output or the last
// line of its stderr says was a rate or usage limit (429, quota, "rate
// limit", "too many requests", ...) also wraps [ErrRateLimited]. An
// interrupted run's error wraps [context.Canceled]; a timed out one's wraps
// [context.DeadlineExceeded]. With a structured Output, a run that exits 0
// but whose output is not in the format, or reports an error, fails with
// [ExitFailure].
func (c *Command) Run(ctx context.Context, req *Request) (*Result, error) {
	res := &Result{}
	fail := func(code int, reason string, err error) (*Result, error) {
		res.ExitCode = code
		return nil, &RunError{Agent: c.name, Reason: reason, Result: res, Err: err}
	}

	path, err := c.lookPath(req.Cwd)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return fail(ExitNotFound, "command not found: "+c.spec.Command, err)
		}
		return fail(ExitCannotRun, "cannot run "+c.spec.Command+": "+err.Error(), err)
	}
	args, stdin, cleanup, err := c.promptArgs(req.Prompt)
	if err != nil {
		return fail(ExitCannotRun, err.Error(), err)
	}
	defer cleanup()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, c.spec.Timeout, errTimeout)
	defer cancelTimeout()

	cmd := exec.CommandContext(runCtx, path, args...)
	cmd.Args[0] = c.spec.Command
	cmd.Dir = req.Cwd
	cmd.Env = c.environ(req)
	cmd.Stdin = strings.NewReader(stdin)
	stdout := &limitedBuffer{max: c.spec.MaxOutput, full: func() { cancel(errOverflow) }}
	stderr := &tailBuffer{max: MaxStderr}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	ownGroup(cmd)
	var stopped atomic.Bool
	cmd.Cancel = func() error {
		stopped.Store(true)
		return stopGroup(cmd.Process)
	}
	// After a cancel (or the leader's exit), wait this long for the group
	// to go and for the pipes to close, then kill the leader and close them.
	cmd.WaitDelay = c.spec.KillGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Duration = time.Since(start)
		switch {
		case errors.Is(context.Cause(runCtx), errTimeout):
			return fail(ExitTimeout, "timed out after "+config.FormatDuration(c.spec.Timeout), context.DeadlineExceeded)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return fail(ExitTimeout, "timed out: the caller's deadline passed", context.DeadlineExceeded)
		case ctx.Err() != nil:
			return fail(ExitInterrupted, "interrupted", context.Canceled)
		}
		return fail(ExitCannotRun, "cannot run "+c.spec.Command+": "+err.Error(), err)
	}
	waitErr := cmd.Wait()
	// The run owns its process group: nothing in it outlives the run.
	killGroup(cmd.Process)
	res.Duration = time.Since(start)
	res.Raw, res.RawCut = stdout.String(), stdout.overflowed()
	res.Stderr, res.StderrCut = stderr.String(), stderr.wasCut()

	if stdout.overflowed() {
		return fail(ExitFailure, "output exceeds "+formatSize(c.spec.MaxOutput), nil)
	}
	if stopped.Load() {
		switch {
		case errors.Is(context.Cause(runCtx), errTimeout):
			return fail(ExitTimeout, "timed out after "+config.FormatDuration(c.spec.Timeout), context.DeadlineExceeded)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return fail(ExitTimeout, "timed out: the caller's deadline passed", context.DeadlineExceeded)
		default:
			return fail(ExitInterrupted, "interrupted", context.Canceled)
		}
	}

	var exitErr *exec.ExitError
	switch {
	case waitErr == nil, errors.Is(waitErr, exec.ErrWaitDelay):
		// ErrWaitDelay: the command exited 0 but something it left behind
		// held its output open; that something is now killed.
		res.ExitCode = ExitOK
		return c.readOutput(res, fail)
	case errors.As(waitErr, &exitErr):
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			code := SignalExitCode(ws.Signal())
			return fail(code, DescribeExit(code), waitErr)
		}
		code := exitErr.ExitCode()
		reason := "exit status " + strconv.Itoa(code)
		// A tool with structured output says why it failed there.
		limited := false
		if read := outputReaders[c.spec.Output]; read != nil {
			if rep, err := read(res.Raw, res.Stderr); err == nil {
				res.Session = rep.session.orNil()
				if rep.failure != "" {
					reason += ": " + c.spec.Output + " reported: " + cut(oneLineText(rep.failure), 300)
				}
				limited = rep.rateLimited
			}
		}
		// A tool without an error object says so on stderr's last line.
		if limited || isRateLimit(lastLine(res.Stderr)) {
			return fail(code, "rate limited ("+reason+")", errors.Join(ErrRateLimited, waitErr))
		}
		return fail(code, reason, waitErr)
	}
	return fail(ExitFailure, "run "+c.spec.Command+": "+waitErr.Error(), waitErr)
}

// readOutput reads the stdout of a run that exited 0 in the spec's output
// format: the answer becomes Raw, the session Session. Output that is not
// in the format, or that reports an error, fails the run (Raw keeps what
// the tool printed).
func (c *Command) readOutput(res *Result, fail func(int, string, error) (*Result, error)) (*Result, error) {
	read := outputReaders[c.spec.Output]
	if read == nil {
		return res, nil
	}
	rep, err := read(res.Raw, res.Stderr)
	if err != nil {
		return fail(ExitFailure, "cannot read its output as "+c.spec.Output+" output: "+err.Error(), err)
	}
	res.Session = rep.session.orNil()
	if rep.failure != "" {
		reason := c.spec.Output + " reported an error: " + cut(oneLineText(rep.failure), 300)
		if rep.rateLimited {
			return fail(ExitFailure, "rate limited ("+reason+")", ErrRateLimited)
		}
		return fail(ExitFailure, reason, nil)
	}
	res.Raw, res.RawCut = rep.answer, false
	return res, nil
}

// oneLineText joins the lines of s with spaces.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// promptArgs returns the arguments and stdin of a run of prompt, as the
// spec passes it, and a cleanup that removes the prompt's file, if any.
func (c *Command) promptArgs(prompt string) (args []string, stdin string, cleanup func(), err error) {
	args = slices.Clone(c.spec.Args)
	cleanup = func() {}
	var value string
	switch c.spec.Prompt {
	case "", config.PromptStdin:
		return args, prompt, cleanup, nil
	case config.PromptArg:
		if len(prompt) > MaxPromptArg {
			return nil, "", cleanup, fmt.Errorf("the prompt (%s) is too long to pass as an argument (at most %s): set the agent's prompt to file or stdin",
				formatSize(len(prompt)), formatSize(MaxPromptArg+1))
		}
		if strings.IndexByte(prompt, 0) >= 0 {
			return nil, "", cleanup, errors.New("the prompt holds a NUL byte, which an argument cannot: set the agent's prompt to file or stdin")
		}
		value = prompt
	case config.PromptFile:
		f, err := os.CreateTemp("", "uwf-prompt-*.md") // mode 0600
		if err != nil {
			return nil, "", cleanup, fmt.Errorf("write the prompt file: %w", err)
		}
		cleanup = func() { _ = os.Remove(f.Name()) }
		_, err = f.WriteString(prompt)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			cleanup()
			return nil, "", func() {}, fmt.Errorf("write the prompt file: %w", err)
		}
		value = f.Name()
	default:
		return nil, "", cleanup, fmt.Errorf("unknown prompt passing %q (want stdin, arg or file)", c.spec.Prompt)
	}
	if c.spec.PromptFlag != "" {
		args = append(args, c.spec.PromptFlag)
	}
	return append(args, value), "", cleanup, nil
}

// Check reports whether the program can be found from working directory
// cwd, as Run would look it up, without running it: an error naming the
// command, wrapping [exec.ErrNotFound] or the [fs] error, if not.
func (c *Command) Check(cwd string) error {
	if _, err := c.lookPath(cwd); err != nil {
		return fmt.Errorf("agent %s: command %s: %w", c.name, c.spec.Command, err)
	}
	return nil
}

// lookPath finds the program as a shell would from cwd: a name without a
// slash in PATH, a relative path with one from cwd.
func (c *Command) lookPath(cwd string) (string, error) {
	name := c.spec.Command
	if name == "" {
		return "", exec.ErrNotFound
	}
	if strings.Contains(name, "/") && !filepath.IsAbs(name) && cwd != "" {
		name = filepath.Join(cwd, name)
	}
	return exec.LookPath(name)
}

// environ returns the parent's environment plus the spec's Env plus the
// request's UWF_ variables; later entries win.
func (c *Command) environ(req *Request) []string {
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(c.spec.Env)) {
		env = append(env, k+"="+c.spec.Env[k])
	}
	return append(env,
		"UWF_THREAD="+req.Thread,
		"UWF_ROLE="+req.Role,
		"UWF_HOME="+req.Home,
		"UWF_STORE="+req.Store,
		"UWF_DURABILITY="+req.Durability,
		"UWF_WORKFLOW="+req.Workflow,
		"UWF_ATTEMPT="+strconv.Itoa(req.Attempt),
	)
}

// limitedBuffer keeps up to max bytes and calls full once when more come.
// Writes past the limit are accepted and dropped, so the command is stopped
// by the kill, not by a broken pipe.
type limitedBuffer struct {
	mu   sync.Mutex
	b    []byte
	max  int
	over bool
	full func()
}

func (w *limitedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return len(p), nil
	}
	if len(w.b)+len(p) > w.max {
		w.over = true
		w.b = append(w.b, p[:w.max-len(w.b)]...)
		w.full()
		return len(p), nil
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *limitedBuffer) overflowed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.over
}

// String returns what was kept; after an overflow, up to the last line
// break, if there is one, so no line is kept in part. Without one the text
// ends at the cut, where a secret may have been cut in two:
// [Result.RawCut] says so, for the masking to drop what is left of it.
func (w *limitedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := bytes.LastIndexByte(w.b, '\n'); w.over && i >= 0 {
		return string(w.b[:i+1])
	}
	return string(w.b)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
	cut bool // bytes were dropped from the front
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if len(p) >= w.max {
		w.b = append(w.b[:0], p[len(p)-w.max:]...)
		w.cut = true
		return n, nil
	}
	if over := len(w.b) + len(p) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
		w.cut = true
	}
	w.b = append(w.b, p...)
	return n, nil
}

// wasCut reports whether bytes were dropped from the front.
func (w *tailBuffer) wasCut() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cut
}

// String returns what was kept; when the front was dropped, from the
// first line start, if there is one, so no line is kept in part. Without
// one the text starts at the cut, where a secret may have been cut in two:
// [Result.StderrCut] says so, for the masking to drop what is left of it.
func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := bytes.IndexByte(w.b, '\n'); w.cut && i >= 0 && i+1 < len(w.b) {
		return string(w.b[i+1:])
	}
	return string(w.b)
}

// formatSize prints a byte count for people: 16 MiB, 1 KiB, 100 bytes.
func formatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
