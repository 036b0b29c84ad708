package thread_test

import (
	"errors"
	"testing"

	"github.com/uncaged/uwf/thread"
)

// TestEnqueueOtherAgent: queueing a queued thread again with another
// agent gives its run that agent and clears a worker's reason for not
// claiming it; the same agent, or none, leaves the record as it is.
func TestEnqueueOtherAgent(t *testing.T) {
	te := newTEnv(t)
	id := te.start()
	q, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := te.e.NotClaimed(te.ctx, q, "wA", "cannot run its agents: claude not found"); !ok || err != nil {
		t.Fatalf("NotClaimed = %v, %v", ok, err)
	}
	before := te.runOf(id)
	for _, agent := range []string{"", "claude"} {
		if r, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{Agent: agent}); err != nil || r.Hash != before.Hash {
			t.Errorf("Enqueue again with agent %q = %+v, %v; want the record %s unchanged", agent, r, err, before.Hash)
		}
	}
	r, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	got := te.runOf(id)
	if r.Hash != got.Hash || got.Agent != "synth" || got.State != thread.RunQueued || got.WhyNotClaimed != "" || got.Attempt != before.Attempt {
		t.Errorf("after Enqueue with synth: returned %+v, stored %+v", r, got)
	}
	log := te.runLog(id)
	if last := log[len(log)-1]; last.Message != "requeue with agent synth" || last.Old != before.Hash {
		t.Errorf("last log entry = %+v, want requeue with agent synth from %s", last, before.Hash)
	}
	// A claimed run is not changed: the lease holder keeps it.
	if _, err := te.e.Claim(te.ctx, id, "wB", nil); err != nil {
		t.Fatal(err)
	}
	var held *thread.LeaseHeldError
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{Agent: "human"}); !errors.As(err, &held) || held.Worker != "wB" {
		t.Errorf("Enqueue of a running thread with another agent: %v, want a LeaseHeldError naming wB", err)
	}
}
