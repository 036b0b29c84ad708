package agent

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Request is what one run of an agent is asked. The thread package fills it
// in for each step; agents never read the store themselves.
type Request struct {
	Thread    string   // the thread's ULID, given to commands as UWF_THREAD
	Workflow  string   // the workflow's name, UWF_WORKFLOW
	Role      string   // the role to run, UWF_ROLE
	Prompt    string   // the assembled prompt (see [Assemble]), on a command's stdin
	Cwd       string   // working directory: the start node's cwd ("" = the current one)
	Home      string   // uwf's home directory, UWF_HOME
	Store     string   // the store URL, UWF_STORE
	Schema    any      // the role's output JSON Schema as plain JSON values, for synth and llm
	Statuses  []string // the role's statuses, in the order [Synth] walks them
	RoleRuns  int      // how many times this role already ran in this thread
	StepIndex int      // how many steps (not marks) the thread has before this one
	Attempt   int      // 0 for the first try, 1.. for retries after an extraction failure, UWF_ATTEMPT

	// Durability, UWF_DURABILITY, overrides the disk store URL's
	// ?durability= ("" keeps it): with Store it opens the store with
	// store.Open as uwf did.
	Durability string
}

// Result is what a run produced. A [RunError] carries one too, with what
// was captured before the run failed.
type Result struct {
	Raw      string        // stdout (or the model's answer): the raw output
	Stderr   string        // diagnostics: a command's stderr (its last [MaxStderr] bytes), an LLM's retries
	ExitCode int           // as a shell reports it: see [ExitOK] and the other Exit constants
	Duration time.Duration // wall-clock time of the run
	// RawCut says Raw is only the start of the output: what followed was
	// dropped (a command's output over its MaxOutput). Raw ends at the cut,
	// or at the last line break before it when there is one.
	RawCut bool
	// StderrCut says Stderr is only the end of what was written: what came
	// before was dropped ([MaxStderr]). Stderr starts at the cut, or after
	// the first line break past it when there is one. A secret can straddle
	// either cut, leaving a part of it that masking does not find: the
	// masking drops such a part (thread does so).
	StderrCut bool
	// Session is what the agent reported of its run in its structured
	// output (a command whose spec reads one): session id, model, token
	// counts, cost. Nil if it reported none.
	Session *Session
}

// Agent runs one role. Implementations are safe for concurrent use.
type Agent interface {
	// Name is how the agent is recorded in step nodes ("claude", "llm",
	// "synth", "replay:<thread>", "human").
	Name() string
	// Run runs req once. A failed run returns a *[RunError] (wrapping
	// [ErrFailed]) and no Result; a successful one a Result with ExitCode 0.
	Run(ctx context.Context, req *Request) (*Result, error)
}

// ErrFailed is wrapped by every [RunError]: the agent ran, or tried to, and
// produced no usable raw output.
var ErrFailed = errors.New("agent: run failed")

// These errors are wrapped by a [RunError] from a [Replay] agent, so that
// thread can tell a diverged replay from other failures.
var (
	// ErrDiverged is returned when the recorded step at this index was run
	// by another role: routing diverged from the source thread.
	ErrDiverged = errors.New("agent: replay diverged")
	// ErrExhausted is returned when the source thread has no recorded step
	// at this index.
	ErrExhausted = errors.New("agent: replay exhausted")
)

// RunError is a failed run: a non-zero exit, a timeout, a missing command,
// an HTTP error, a diverged replay... Result holds what was captured and is
// never nil. It wraps [ErrFailed] and Err, which is [context.Canceled] when
// the run was interrupted and [context.DeadlineExceeded] when it timed out.
type RunError struct {
	Agent  string  // the agent's name
	Reason string  // what went wrong, such as "exit status 3" or "timed out after 10m"
	Result *Result // what was captured; never nil
	Err    error   // the underlying cause, or nil
}

// Error returns "agent <name>: <reason>", followed by the last line of the
// captured stderr when the command failed on its own (not when it timed out
// or was interrupted).
func (e *RunError) Error() string {
	msg := "agent " + e.Agent + ": " + e.Reason
	if e.Result != nil && e.Result.ExitCode != ExitTimeout && e.Result.ExitCode != ExitInterrupted {
		if line := lastLine(e.Result.Stderr); line != "" {
			msg += " (stderr: " + line + ")"
		}
	}
	return msg
}

// Unwrap returns [ErrFailed] and Err.
func (e *RunError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrFailed}
	}
	return []error{ErrFailed, e.Err}
}

// lastLine returns the last non-blank line of s, cut to 200 bytes.
func lastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return cut(strings.TrimSpace(s), 200)
}

// cut shortens s to at most n bytes (n > 3), ending in "..." when cut,
// without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - 3
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// Exit codes, as a shell reports them. A [Result]'s ExitCode is one of
// these, an exit status 1..125 the command chose, or [ExitSignal]+N.
const (
	ExitOK          = 0   // the run succeeded
	ExitFailure     = 1   // a failure without an exit status of its own (HTTP error, replay divergence)
	ExitTimeout     = 124 // the run timed out, as timeout(1) reports it
	ExitCannotRun   = 126 // the command exists but could not be started (not executable, bad cwd)
	ExitNotFound    = 127 // the command was not found
	ExitSignal      = 128 // killed by signal N: ExitSignal + N
	ExitInterrupted = 130 // the run was interrupted (its context cancelled): 128 + SIGINT
)

// ExitCode returns the exit code that stands for err: [ExitOK] for nil, the
// captured code of a *[RunError], [ExitInterrupted] for an error wrapping
// [context.Canceled], [ExitTimeout] for one wrapping
// [context.DeadlineExceeded], and [ExitFailure] for anything else.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var re *RunError
	if errors.As(err, &re) && re.Result != nil {
		return re.Result.ExitCode
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		return ExitTimeout
	}
	return ExitFailure
}

// SignalExitCode returns the exit code of a process killed by sig:
// [ExitSignal] + sig.
func SignalExitCode(sig syscall.Signal) int { return ExitSignal + int(sig) }

// DescribeExit says what an exit code means, for people: "ok", "exit
// status 3", "timed out", "cannot run", "command not found", "interrupted",
// "killed by signal 9 (killed)".
func DescribeExit(code int) string {
	switch {
	case code == ExitOK:
		return "ok"
	case code == ExitTimeout:
		return "timed out"
	case code == ExitCannotRun:
		return "cannot run"
	case code == ExitNotFound:
		return "command not found"
	case code == ExitInterrupted:
		return "interrupted"
	case code > ExitSignal && code < ExitSignal+65:
		sig := syscall.Signal(code - ExitSignal)
		return "killed by signal " + strconv.Itoa(int(sig)) + " (" + sig.String() + ")"
	}
	return "exit status " + strconv.Itoa(code)
}
