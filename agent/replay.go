package agent

import (
	"context"
	"fmt"
	"slices"
)

// Recorded is one step of a source thread, as a [Replay] returns it.
type Recorded struct {
	Role     string   // the role that ran the step
	Raw      string   // the raw output that was used (the detail node's raw)
	Attempts []string // the raw outputs that failed extraction before Raw, in order (the detail node's attempts)
}

// Replay is an agent that returns a source thread's recorded raw outputs
// instead of running anything, so that a thread can be re-run through
// extraction and routing deterministically, with no LLM (SPEC §5). It is
// safe for concurrent use.
type Replay struct {
	source string
	steps  []Recorded
}

var _ StepCounter = (*Replay)(nil)

// NewReplay returns a replay of the thread source, whose steps (not marks)
// are steps, oldest first. The slice is copied; the strings are shared.
func NewReplay(source string, steps []Recorded) *Replay {
	steps = slices.Clone(steps)
	for i := range steps {
		steps[i].Attempts = slices.Clone(steps[i].Attempts)
	}
	return &Replay{source: source, steps: steps}
}

// CountsSteps marks Replay as a [StepCounter]: it reads the request's
// step index.
func (r *Replay) CountsSteps() {}

// Name returns "replay:<source>".
func (r *Replay) Name() string { return "replay:" + r.source }

// Run returns the recorded step at index req.StepIndex: its
// Attempts[req.Attempt] while req.Attempt is below len(Attempts), then its
// Raw, so a replay reproduces the retries of the source. Errors are
// *[RunError]s with [ExitFailure]: one wrapping [ErrDiverged] when the
// recorded step was run by another role than req.Role, one wrapping
// [ErrExhausted] past the last recorded step. Messages number steps from 1.
func (r *Replay) Run(ctx context.Context, req *Request) (*Result, error) {
	fail := func(err error, format string, args ...any) (*Result, error) {
		return nil, &RunError{Agent: r.Name(), Reason: fmt.Sprintf(format, args...), Result: &Result{ExitCode: ExitFailure}, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &RunError{Agent: r.Name(), Reason: "interrupted", Result: &Result{ExitCode: ExitInterrupted}, Err: err}
	}
	i := req.StepIndex
	if i < 0 || i >= len(r.steps) {
		return fail(ErrExhausted, "replay: thread %s has only %d steps (asked for step %d)", r.source, len(r.steps), i+1)
	}
	step := r.steps[i]
	if step.Role != req.Role {
		return fail(ErrDiverged, "replay: step %d of thread %s was role %s, this is role %s (routing diverged)", i+1, r.source, step.Role, req.Role)
	}
	raw := step.Raw
	if req.Attempt >= 0 && req.Attempt < len(step.Attempts) {
		raw = step.Attempts[req.Attempt]
	}
	return &Result{Raw: raw, ExitCode: ExitOK}, nil
}
