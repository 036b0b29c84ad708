package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uncaged/uwf/agent"
)

func TestReplay(t *testing.T) {
	t.Parallel()
	const src = "01JCQ5S7Q7T7Y3V0Z3K5W8M9AB"
	steps := []agent.Recorded{
		{Role: "planner", Raw: "plan"},
		{Role: "developer", Raw: "code v1", Attempts: []string{"garbage 1", "garbage 2"}},
		{Role: "reviewer", Raw: "rejected"},
	}
	r := agent.NewReplay(src, steps)
	steps[0].Raw = "changed after NewReplay"
	if got, want := r.Name(), "replay:"+src; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	tests := []struct {
		name      string
		role      string
		step      int
		attempt   int
		want      string
		wantErr   string
		wantIs    error
		wantExits int
	}{
		{name: "first step", role: "planner", step: 0, want: "plan"},
		{name: "first attempt of a retried step", role: "developer", step: 1, attempt: 0, want: "garbage 1"},
		{name: "second attempt", role: "developer", step: 1, attempt: 1, want: "garbage 2"},
		{name: "the used output after the attempts", role: "developer", step: 1, attempt: 2, want: "code v1"},
		{name: "attempts past the recorded ones", role: "developer", step: 1, attempt: 5, want: "code v1"},
		{name: "role mismatch", role: "developer", step: 2, wantIs: agent.ErrDiverged,
			wantErr: "agent replay:" + src + ": replay: step 3 of thread " + src + " was role reviewer, this is role developer (routing diverged)"},
		{name: "past the end", role: "planner", step: 3, wantIs: agent.ErrExhausted,
			wantErr: "agent replay:" + src + ": replay: thread " + src + " has only 3 steps (asked for step 4)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := r.Run(t.Context(), &agent.Request{Role: tc.role, StepIndex: tc.step, Attempt: tc.attempt})
			if tc.wantErr != "" {
				re := runErr(t, err)
				if err.Error() != tc.wantErr || !errors.Is(err, tc.wantIs) || re.Result.ExitCode != agent.ExitFailure {
					t.Errorf("Run() error = %q (exit %d), want %q wrapping %v", err, re.Result.ExitCode, tc.wantErr, tc.wantIs)
				}
				return
			}
			if err != nil || res.Raw != tc.want || res.ExitCode != 0 {
				t.Errorf("Run() = %+v, %v; want Raw %q", res, err, tc.want)
			}
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Run(ctx, &agent.Request{Role: "planner"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled) error = %v, want context.Canceled", err)
	}
}
