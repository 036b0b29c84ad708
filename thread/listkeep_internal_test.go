package thread

import (
	"testing"

	"github.com/uncaged/uwf/cas"
)

// TestListOptionsKeeps: --status matches the status or the run (a thread
// with no run record has run "none"), --workflow the name or the hash of
// the version; thread list and thread list --parent filter alike.
func TestListOptionsKeeps(t *testing.T) {
	wf := cas.Hash(0x1234)
	active := &Info{Status: StatusActive, WorkflowName: "review", Workflow: wf}
	running := &Info{Status: StatusActive, WorkflowName: "develop", Workflow: wf + 1, Run: &Run{State: RunRunning}}
	for _, tc := range []struct {
		opts ListOptions
		info *Info
		want bool
	}{
		{ListOptions{}, active, true},
		{ListOptions{Status: StatusActive}, running, true},
		{ListOptions{Status: RunRunning}, running, true},
		{ListOptions{Status: RunRunning}, active, false},
		{ListOptions{Status: RunNone}, active, true},
		{ListOptions{Status: RunNone}, running, false},
		{ListOptions{Status: StatusDone}, active, false},
		{ListOptions{Workflow: "review"}, active, true},
		{ListOptions{Workflow: wf.String()}, active, true},
		{ListOptions{Workflow: "review"}, running, false},
		{ListOptions{Status: RunRunning, Workflow: "develop"}, running, true},
		{ListOptions{Status: RunRunning, Workflow: "review"}, running, false},
	} {
		if got := tc.opts.keeps(tc.info); got != tc.want {
			t.Errorf("ListOptions%+v keeps %+v = %v, want %v", tc.opts, tc.info, got, tc.want)
		}
	}
}
