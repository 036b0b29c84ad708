package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/thread"
	"github.com/uncaged/uwf/worker"
)

// engineOn opens the env's disk store as a library user would, for a
// test that plays a worker next to the CLI.
func engineOn(t *testing.T, e *env) *thread.Engine {
	t.Helper()
	st, err := disk.Open(e.storeDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	repo, err := cas.Open(t.Context(), st, st.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return thread.New(repo, nil)
}

// TestQueueCLI: start --queue, run --detach, queue and resume --queue
// record runs; list, show and --json show status and run apart; --status
// matches either; a leased thread's manual step exits 4 naming the worker
// unless --force; kill drops the run; a store that never queues stays at
// version 1.
func TestQueueCLI(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	plain := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "not queued", "--cwd", "/"))
	e.ok("", "thread", "list")
	e.ok("", "thread", "show", plain)
	eng := engineOn(t, e)
	if v, _ := eng.Repo().FormatVersion(t.Context()); v != cas.FormatV1 {
		t.Fatalf("a store that never queued is at version %d", v)
	}
	if r := e.run("", "thread", "start", "review-loop", "-p", "x", "--agent", "synth"); r.code != exitUsage || !strings.Contains(r.stderr, "--agent needs --queue") {
		t.Errorf("start --agent without --queue: %v", r)
	}

	q1 := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "queued", "--cwd", "/", "--queue", "--agent", "synth"))
	q2 := strings.TrimSpace(e.ok("", "thread", "run", "review-loop", "-p", "detached", "--cwd", "/", "--detach"))
	if v, _ := eng.Repo().FormatVersion(t.Context()); v != cas.FormatV2 {
		t.Errorf("after queueing the store is at version %d, want 2", v)
	}
	list := e.ok("", "thread", "list")
	for _, want := range []string{q1 + " active    queued", q2 + " active    queued", plain + " active    none"} {
		if !strings.Contains(list, want) {
			t.Errorf("thread list lacks %q:\n%s", want, list)
		}
	}
	if got := e.ok("", "thread", "list", "--status", "queued"); strings.Count(got, "\n") != 2 || strings.Contains(got, plain) {
		t.Errorf("list --status queued:\n%s", got)
	}
	if got := e.ok("", "thread", "list", "--status", "none"); strings.TrimSpace(firstField(got)) != plain {
		t.Errorf("list --status none:\n%s", got)
	}
	if r := e.run("", "thread", "list", "--status", "busy"); r.code != exitUsage || !strings.Contains(r.stderr, "queued, running, retrying, failed, none") {
		t.Errorf("list --status busy: %v", r)
	}
	var show thread.ShowJSON
	if err := json.Unmarshal([]byte(e.ok("", "thread", "show", "--json", q1)), &show); err != nil {
		t.Fatal(err)
	}
	if show.Run != "queued" || show.RunRecord == nil || show.RunRecord.Agent != "synth" || show.RunRecord.Cwd != "/" || show.Status != "active" {
		t.Errorf("show --json = %+v, run record %+v", show, show.RunRecord)
	}

	// A worker leases q1: a manual step is refused, naming it.
	l, err := eng.Claim(t.Context(), q1, "w-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := e.ok("", "thread", "show", q1)
	if !strings.Contains(out, "run:      running (attempt 1, failures 0, agent synth") || !strings.Contains(out, "worker:   w-test, lease until") {
		t.Errorf("show of a leased thread:\n%s", out)
	}
	r := e.run("", "thread", "step", q1, "--agent", "synth")
	if r.code != exitConflict || !strings.Contains(r.stderr, "leased by worker w-test") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("step of a leased thread: %v", r)
	}
	// Queueing it is refused too, and --force (a step's flag) is not offered.
	if r := e.run("", "thread", "queue", q1, "--agent", "human"); r.code != exitConflict || !strings.Contains(r.stderr, "leased by worker w-test") || strings.Contains(r.stderr, "--force") {
		t.Errorf("queue of a leased thread: %v", r)
	}
	e.ok("", "thread", "step", q1, "--agent", "synth", "--force")
	// kill drops the run: the holder's lease is gone.
	e.ok("", "thread", "kill", q1)
	if r, _ := eng.RunOf(t.Context(), q1); r != nil {
		t.Errorf("run after kill = %+v", r)
	}
	if err := l.Renew(t.Context()); err == nil {
		t.Error("the holder renewed a lease whose run kill dropped")
	}
	// A failed run is queued again by thread queue.
	l2, err := eng.Claim(t.Context(), q2, "w-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Fail(t.Context(), errTest("agent exited 1: agent: run failed")); err != nil {
		t.Fatal(err)
	}
	if got := e.ok("", "thread", "list", "--status", "failed"); !strings.HasPrefix(got, q2) {
		t.Errorf("list --status failed:\n%s", got)
	}
	if got := e.ok("", "thread", "show", q2); !strings.Contains(got, "run error: agent exited 1: the agent failed\n") {
		t.Errorf("show of a failed run:\n%s", got)
	}
	if got := e.ok("", "thread", "queue", q2); got != q2+" queued\n" {
		t.Errorf("thread queue printed %q", got)
	}
	// Queued again with another agent: the run takes it.
	if got := e.ok("", "thread", "queue", q2, "--agent", "synth"); got != q2+" queued\n" {
		t.Errorf("thread queue --agent synth printed %q", got)
	}
	if r, err := eng.RunOf(t.Context(), q2); err != nil || r.Agent != "synth" || r.State != thread.RunQueued {
		t.Errorf("run after thread queue --agent synth = %+v, %v", r, err)
	}
	// rm drops the run too.
	e.ok("", "thread", "rm", q2)
	if r, _ := eng.RunOf(t.Context(), q2); r != nil {
		t.Errorf("run after rm = %+v", r)
	}
	// resume --queue: suspend, then resume into the queue.
	e.ok("", "thread", "suspend", plain)
	e.ok("", "thread", "resume", plain, "--queue")
	if got := e.ok("", "thread", "list", "--status", "queued"); !strings.HasPrefix(got, plain) {
		t.Errorf("after resume --queue:\n%s", got)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

// TestShowNotClaimedFix: when no worker could build a thread's agents,
// thread show suggests queueing it with another; for a reason an agent
// cannot fix (a missing folder) it suggests nothing.
func TestShowNotClaimedFix(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	eng := engineOn(t, e)
	tests := []struct {
		name, why string
		fix       bool
	}{
		{"agent", worker.WhyAgents + "unknown agent claude: cas: not found", true},
		{"folder", "the working folder /gone does not exist on this machine", false},
	}
	for _, tc := range tests { // e.ok fails the test it was made for: no subtests
		func() {
			id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "x", "--cwd", "/", "--queue", "--agent", "synth"))
			r, err := eng.RunOf(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := eng.NotClaimed(t.Context(), r, "w1", tc.why); !ok || err != nil {
				t.Fatalf("NotClaimed = %v, %v", ok, err)
			}
			out := e.ok("", "thread", "show", id)
			if !strings.Contains(out, "not claimed: worker w1: ") || strings.Contains(out, "cas:") {
				t.Errorf("%s: show:\n%s", tc.name, out)
			}
			fix := "fix:      uwf thread queue " + id + " --agent <a>, naming an agent the workers can build\n"
			if got := strings.Contains(out, fix); got != tc.fix {
				t.Errorf("%s: show has the fix %q: %v, want %v:\n%s", tc.name, fix, got, tc.fix, out)
			}
		}()
	}
	if r := e.run("", "worker", "--max-takeovers", "-1"); r.code != exitUsage || !strings.Contains(r.stderr, "invalid --max-takeovers -1") {
		t.Errorf("worker --max-takeovers -1: %v", r)
	}
}
