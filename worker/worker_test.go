package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/internal/proctest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
	"github.com/uncaged/uwf/worker"
)

type fixture struct {
	t    *testing.T
	ctx  context.Context
	eng  *thread.Engine
	wf   cas.Hash // review-loop
	solo cas.Hash // two roles, a and b, each answering status: done
}

// soloYAML is a workflow of two steps whose roles any command agent
// answering "status: done" completes.
const soloYAML = `name: solo
roles:
  a: {frontmatter: {type: object, properties: {status: {const: done}}, required: [status]}}
  b: {frontmatter: {type: object, properties: {status: {const: done}}, required: [status]}}
graph:
  $START: {new: {role: a, prompt: "go"}}
  a: {done: {role: b, prompt: "next"}}
  b: {done: {role: $END, prompt: "end"}}
`

func backendsOf(t *testing.T) map[string]func(t *testing.T) *cas.Repo {
	return map[string]func(t *testing.T) *cas.Repo{
		"memory": func(t *testing.T) *cas.Repo {
			mem := cas.NewMemStore(nil)
			return openRepo(t, mem, mem.Refs())
		},
		"disk": func(t *testing.T) *cas.Repo {
			st, err := disk.Create(filepath.Join(t.TempDir(), "store"), &disk.Options{Durability: disk.DurabilityNone})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return openRepo(t, st, st.Refs())
		},
		"postgres": func(t *testing.T) *cas.Repo {
			url := pgtest.URL(t)
			sep := "?"
			if strings.Contains(url, "?") {
				sep = "&"
			}
			st, err := postgres.Open(t.Context(), fmt.Sprintf("%s%sschema=%s", url, sep, pgtest.Schema(t, "worker")), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			return openRepo(t, st, st.Refs())
		},
	}
}

func openRepo(t *testing.T, st cas.Store, refs cas.Refs) *cas.Repo {
	t.Helper()
	repo, err := cas.Open(t.Context(), st, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func newFixture(t *testing.T, repo *cas.Repo) *fixture {
	t.Helper()
	data, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	eng := thread.New(repo, nil)
	res, err := eng.Registry().Put(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := registry.Parse("solo.yaml", []byte(soloYAML))
	if err != nil {
		t.Fatal(err)
	}
	solo, err := eng.Registry().Put(t.Context(), sw)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: t.Context(), eng: eng, wf: res.Hash, solo: solo.Hash}
}

// queue starts and queues n review-loop threads.
func (f *fixture) queue(n int, cwd, agent string) []string {
	f.t.Helper()
	return f.queueOf(f.wf, n, cwd, agent)
}

// queueOf starts and queues n threads of workflow wf.
func (f *fixture) queueOf(wf cas.Hash, n int, cwd, agent string) []string {
	f.t.Helper()
	var ids []string
	for i := range n {
		id, _, err := f.eng.Start(f.ctx, wf, fmt.Sprintf("task %d", i), cwd)
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.eng.Enqueue(f.ctx, id, thread.EnqueueOptions{Agent: agent}); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// waitFor polls cond (the test's own check, not the worker's) until it
// holds or the deadline passes.
func (f *fixture) waitFor(what string, d time.Duration, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fixture) status(id string) (string, *thread.Run) {
	f.t.Helper()
	info, err := f.eng.Show(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return info.Status, info.Run
}

// start runs a worker until the test ends (or stop is called); stop
// waits for it to return.
func startWorker(t *testing.T, eng *thread.Engine, opts worker.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	w := worker.New(eng, opts)
	go func() { done <- w.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker %s: %v", w.ID(), err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestWorker(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*testing.T, *fixture)
	}{
		{"RunsQueuedThreadsToTheEnd", testRunsQueuedThreads},
		{"AlwaysFailingStep", testAlwaysFailingStep},
		{"LeavesWhatItCannotRun", testLeavesWhatItCannotRun},
		{"KillStopsTheRun", testKillStopsTheRun},
		{"KillEndsTheAgentGroup", testKillEndsTheAgentGroup},
		{"SecretsNotInTheRunRecord", testSecretsNotInTheRunRecord},
		{"SecretsNotInWhyNotClaimed", testSecretsNotInWhyNotClaimed},
		{"MaxRunning", testMaxRunning},
		{"MaxRunningNested", testMaxRunningNested},
	}
	bs := backendsOf(t)
	for _, backend := range []string{"memory", "disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.fn(t, newFixture(t, bs[backend](t)))
				})
			}
		})
	}
}

func testRunsQueuedThreads(t *testing.T, f *fixture) {
	ids := f.queue(6, t.TempDir(), "synth")
	startWorker(t, f.eng, worker.Options{ID: "w1", Build: "test", Concurrency: 2, Lease: 10 * time.Second})
	startWorker(t, f.eng, worker.Options{ID: "w2", Build: "test", Concurrency: 2, Lease: 10 * time.Second})
	f.waitFor("every thread done", 60*time.Second, func() bool {
		for _, id := range ids {
			if st, _ := f.status(id); st != thread.StatusDone {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		// The worker gave the lease back: no run record is left.
		f.waitFor("the run released", 10*time.Second, func() bool { _, r := f.status(id); return r == nil })
		log, err := f.eng.Log(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log[1:] {
			if !strings.Contains(e.Message, " (worker w") || !strings.Contains(e.Message, " build test attempt 1)") {
				t.Errorf("thread %s: commit %q does not name its worker, build and attempt", id, e.Message)
			}
		}
	}
}

// failConfig is a config whose agent "broken" always exits 1.
func failConfig(t *testing.T) *config.Config {
	t.Helper()
	script := filepath.Join(t.TempDir(), "broken.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho broken >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  broken: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testAlwaysFailingStep(t *testing.T, f *fixture) {
	ids := f.queue(1, t.TempDir(), "broken")
	startWorker(t, f.eng, worker.Options{ID: "w1", Retries: 2, Backoff: 50 * time.Millisecond, Lease: 10 * time.Second,
		Run: thread.RunOptions{Config: failConfig(t)}})
	f.waitFor("the run failed", 30*time.Second, func() bool {
		_, r := f.status(ids[0])
		return r != nil && r.State == thread.RunFailed
	})
	_, r := f.status(ids[0])
	if r.Failures != 3 || r.Attempt != 3 || !strings.Contains(r.Error, "broken") {
		t.Errorf("failed run = %+v, want 3 failures (1 + 2 retries) over 3 claims", r)
	}
	// Not claimed again.
	time.Sleep(500 * time.Millisecond)
	if _, r2 := f.status(ids[0]); r2.Hash != r.Hash {
		t.Errorf("a failed run changed: %+v", r2)
	}
	log, err := f.eng.Repo().Refs().Log(f.ctx, thread.RunPrefix+ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range log {
		if !strings.HasPrefix(e.Message, "renew") {
			msgs = append(msgs, e.Message)
		}
		if strings.HasPrefix(e.Message, "retry") {
			// The backoff doubles: 50 ms, then 100 ms, by the store's clock.
			r, err := f.eng.ReadRun(f.ctx, e.New)
			if err != nil {
				t.Fatal(err)
			}
			want := (50 * time.Millisecond << (r.Failures - 1)).Milliseconds()
			if r.State != thread.RunRetrying || r.Expiry-r.At != want {
				t.Errorf("retry %d: state %s, claimable %d ms after, want retrying after %d ms", r.Failures, r.State, r.Expiry-r.At, want)
			}
		}
	}
	want := "enqueue|claim by w1 attempt 1|retry by w1 after failure 1|claim by w1 attempt 2|retry by w1 after failure 2|claim by w1 attempt 3|fail by w1 after failure 3"
	if got := strings.Join(msgs, "|"); got != want {
		t.Errorf("runs/ log:\n%s\nwant\n%s", got, want)
	}
}

func testLeavesWhatItCannotRun(t *testing.T, f *fixture) {
	missing := filepath.Join(t.TempDir(), "gone")
	ids := f.queue(1, missing, "synth")
	unknown := f.queue(1, t.TempDir(), "broken") // no such agent in this worker's config
	startWorker(t, f.eng, worker.Options{ID: "w1", Lease: 10 * time.Second})
	f.waitFor("why-not-claimed recorded", 20*time.Second, func() bool {
		_, a := f.status(ids[0])
		_, b := f.status(unknown[0])
		return a.WhyNotClaimed != "" && b.WhyNotClaimed != ""
	})
	_, a := f.status(ids[0])
	if a.State != thread.RunQueued || !strings.Contains(a.WhyNotClaimed, "worker w1: the working folder "+missing+" does not exist") {
		t.Errorf("run = %+v", a)
	}
	_, b := f.status(unknown[0])
	if b.State != thread.RunQueued || !strings.Contains(b.WhyNotClaimed, "worker w1: cannot run its agents") || !strings.Contains(b.WhyNotClaimed, "broken") {
		t.Errorf("run = %+v", b)
	}
}

func testKillStopsTheRun(t *testing.T, f *fixture) {
	// An agent that sleeps until it is ended: the kill must end it.
	script := filepath.Join(t.TempDir(), "slow.sh")
	marker := filepath.Join(t.TempDir(), "started")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  slow: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queue(1, t.TempDir(), "slow")
	stop := startWorker(t, f.eng, worker.Options{ID: "w1", Lease: 30 * time.Second, Run: thread.RunOptions{Config: cfg}})
	f.waitFor("the agent started", 20*time.Second, func() bool { _, err := os.Stat(marker); return err == nil })
	t0 := time.Now()
	if _, err := f.eng.Kill(f.ctx, ids[0], ""); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not end the killed thread's agent (a 60 s sleep) within 20 s")
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Errorf("the worker took %s to stop after the kill", d)
	}
	if st, r := f.status(ids[0]); st != thread.StatusKilled || r != nil {
		t.Errorf("after kill: status %s, run %+v", st, r)
	}
}

func testMaxRunning(t *testing.T, f *fixture) {
	if err := f.eng.SetMaxRunning(f.ctx, "solo", 2); err != nil {
		t.Fatal(err)
	}
	if n, err := f.eng.MaxRunning(f.ctx, "solo"); n != 2 || err != nil {
		t.Fatalf("MaxRunning = %d, %v", n, err)
	}
	// An agent slow enough that the runs overlap.
	script := filepath.Join(t.TempDir(), "slow.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\nsleep 0.2\nprintf -- '---\\nstatus: done\\n---\\nok\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  slowok: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queueOf(f.solo, 6, t.TempDir(), "slowok")
	for i := range 3 {
		startWorker(t, f.eng, worker.Options{ID: fmt.Sprintf("w%d", i), Concurrency: 3, Lease: 10 * time.Second, Run: thread.RunOptions{Config: cfg}})
	}
	f.waitFor("every thread done", 90*time.Second, func() bool {
		for _, id := range ids {
			if st, _ := f.status(id); st != thread.StatusDone {
				return false
			}
		}
		return true
	})
	if peak, err := proctest.PeakRunning(t.Context(), f.eng, ids); err != nil || peak != 2 {
		t.Errorf("peak running = %d, %v; want 2 (maxRunning 2, 9 workers' room)", peak, err)
	}
}

// testMaxRunningNested: with maxRunning 1, a parent whose role runs a
// child thread of its own workflow finishes: the parent gives its slot
// back while the child runs, the child takes it (its own workflow's cap),
// and the parent takes it again to join, as the slot's log shows.
func testMaxRunningNested(t *testing.T, f *fixture) {
	var wf cas.Hash
	const decide = "decide: { frontmatter: { type: object, properties: { status: { enum: [deep, leaf] } }, required: [status] } }\n"
	for _, text := range []string{
		// The first version names no child: a workflow can only name a
		// registered one, here its own name.
		"name: nest\nroles:\n  " + decide + "graph:\n  $START: { new: { role: decide, prompt: Decide. } }\n  decide: { deep: { role: $END }, leaf: { role: $END } }\n",
		"name: nest\nroles:\n  " + decide +
			"  work: { workflow: nest, frontmatter: { type: object, properties: { status: { const: leaf } }, required: [status] } }\n" +
			"graph:\n  $START: { new: { role: decide, prompt: Decide. } }\n  decide: { deep: { role: work, prompt: Run as a child. }, leaf: { role: $END } }\n  work: { leaf: { role: $END } }\n",
	} {
		w, err := registry.Parse("nest.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.eng.Registry().Put(f.ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		wf = res.Hash
	}
	if err := f.eng.SetMaxRunning(f.ctx, "nest", 1); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "nester.sh")
	body := "#!/bin/sh\nif grep -q 'Run as a child' ; then s=leaf; else s=deep; fi\nprintf -- '---\\nstatus: %s\\n---\\nok\\n' \"$s\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  nester: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queueOf(wf, 2, t.TempDir(), "nester")
	startWorker(t, f.eng, worker.Options{ID: "w0", Concurrency: 2, Lease: 10 * time.Second, Run: thread.RunOptions{Config: cfg}})
	f.waitFor("both parents done", 60*time.Second, func() bool {
		for _, id := range ids {
			if st, _ := f.status(id); st != thread.StatusDone {
				return false
			}
		}
		return true
	})
	log, err := f.eng.Repo().Refs().Log(f.ctx, thread.SlotPrefix+"nest/0")
	if err != nil {
		t.Fatal(err)
	}
	var takes []string
	for _, e := range log {
		if strings.HasPrefix(e.Message, "take ") {
			takes = append(takes, e.Message[strings.LastIndex(e.Message, " for ")+5:])
		}
	}
	for _, id := range ids {
		page, err := f.eng.Children(f.ctx, id, thread.ChildrenOptions{})
		if err != nil || len(page.Children) != 1 {
			t.Fatalf("children of %s: %+v, %v", id, page, err)
		}
		kid := page.Children[0].Thread
		// The parent's take, the child's, the parent's again to join (the
		// other parent may take the slot between them).
		first, k, last := slices.Index(takes, id), slices.Index(takes, kid), -1
		for j, who := range takes {
			if who == id {
				last = j
			}
		}
		if first < 0 || k < first || last < k || first == last {
			t.Errorf("slot takes %q: want %s, its child %s, %s again", takes, id, kid, id)
		}
	}
}

// alive reports whether the process whose pid is in file runs.
func alive(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil // signal 0: only whether it exists
}

// testKillEndsTheAgentGroup: killing a leased thread ends its agent's
// whole process group (a child it left in the background too) through
// the watch, while the worker goes on running.
func testKillEndsTheAgentGroup(t *testing.T, f *fixture) {
	dir := t.TempDir()
	script := filepath.Join(dir, "forks.sh")
	agentPid, childPid := filepath.Join(dir, "agent.pid"), filepath.Join(dir, "child.pid")
	body := "#!/bin/sh\ncat >/dev/null\nsleep 120 &\necho $! > " + childPid + ".tmp\nmv " + childPid + ".tmp " + childPid +
		"\necho $$ > " + agentPid + "\nwait\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  forks: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queue(1, t.TempDir(), "forks")
	startWorker(t, f.eng, worker.Options{ID: "w1", Lease: 30 * time.Second, Run: thread.RunOptions{Config: cfg}})
	f.waitFor("the agent started", 20*time.Second, func() bool {
		_, a := os.Stat(agentPid)
		_, c := os.Stat(childPid)
		return a == nil && c == nil
	})
	if !alive(t, childPid) {
		t.Fatal("the agent's child is not running")
	}
	if _, err := f.eng.Kill(f.ctx, ids[0], ""); err != nil {
		t.Fatal(err)
	}
	// Well within the lease (30 s) and its renewals (every 10 s): the
	// watch, not a renewal, ends it.
	f.waitFor("the agent and its child ended", 5*time.Second, func() bool {
		return !alive(t, agentPid) && !alive(t, childPid)
	})
	if st, _ := f.status(ids[0]); st != thread.StatusKilled {
		t.Errorf("status %s after kill", st)
	}
}

// testSecretsNotInTheRunRecord: a failing agent that prints a secret
// (the worker's, and the store URL's password) leaves it out of the
// failed run's error.
func testSecretsNotInTheRunRecord(t *testing.T, f *fixture) {
	const key, pass = "sk-test-VerySecretKey-0123456789", "hunter2-the-password"
	script := filepath.Join(t.TempDir(), "leaks.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho \"key="+key+" pass="+pass+"\" >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  leaks: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queue(1, t.TempDir(), "leaks")
	startWorker(t, f.eng, worker.Options{ID: "w1", Retries: -1, Lease: 10 * time.Second,
		Run: thread.RunOptions{Config: cfg, Secrets: []string{key}, Store: "postgres://u:" + pass + "@db.invalid/uwf"}})
	f.waitFor("the run failed", 30*time.Second, func() bool {
		_, r := f.status(ids[0])
		return r != nil && r.State == thread.RunFailed
	})
	_, r := f.status(ids[0])
	if r.Error == "" || !strings.Contains(r.Error, "********") {
		t.Errorf("failed run's error %q: want the agent's masked output", r.Error)
	}
	if strings.Contains(r.Error, key) || strings.Contains(r.Error, pass) {
		t.Errorf("a secret reached the run record: %q", r.Error)
	}
}

// testSecretsNotInWhyNotClaimed: an agent the worker cannot build, whose
// error names a secret (here in the program's path), is recorded as the
// reason it was not claimed with the secret masked.
func testSecretsNotInWhyNotClaimed(t *testing.T, f *fixture) {
	const key = "sk-test-VerySecretKey-0123456789"
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  gone: {command: /nonexistent/"+key+"/agent}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queue(1, t.TempDir(), "gone")
	startWorker(t, f.eng, worker.Options{ID: "w1", Lease: 10 * time.Second,
		Run: thread.RunOptions{Config: cfg, Secrets: []string{key}}})
	f.waitFor("why-not-claimed recorded", 20*time.Second, func() bool {
		_, r := f.status(ids[0])
		return r.WhyNotClaimed != ""
	})
	_, r := f.status(ids[0])
	if !strings.Contains(r.WhyNotClaimed, "cannot run its agents") || !strings.Contains(r.WhyNotClaimed, "********") {
		t.Errorf("why not claimed = %q, want the agent's error, masked", r.WhyNotClaimed)
	}
	if strings.Contains(r.WhyNotClaimed, key) {
		t.Errorf("a secret reached the run record: %q", r.WhyNotClaimed)
	}
}

// hangingRefs wraps a memory store's refs: once hang is set, every
// compare-and-swap of a run record blocks until its context ends.
type hangingRefs struct {
	*cas.MemRefs
	hang atomic.Bool
}

func (r *hangingRefs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if r.hang.Load() && strings.HasPrefix(name, thread.RunPrefix) {
		<-ctx.Done()
		return ctx.Err()
	}
	return r.MemRefs.CompareAndSwap(ctx, name, old, new, message)
}

// TestDrainWithAHungStore: a worker drained while the store stops
// answering its give-back still returns, a lease length after its drain
// deadline at most, rather than waiting on the store forever.
func TestDrainWithAHungStore(t *testing.T) {
	mem := cas.NewMemStore(nil)
	hr := &hangingRefs{MemRefs: mem.Refs()}
	f := newFixture(t, openRepo(t, mem, hr))
	script := filepath.Join(t.TempDir(), "slow.sh")
	marker := filepath.Join(t.TempDir(), "started")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  slow: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.queue(1, t.TempDir(), "slow")
	const lease = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := worker.New(f.eng, worker.Options{ID: "w1", Lease: lease, Drain: 100 * time.Millisecond, Run: thread.RunOptions{Config: cfg}})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	f.waitFor("the agent started", 20*time.Second, func() bool { _, err := os.Stat(marker); return err == nil })
	hr.hang.Store(true)
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
		if took := time.Since(t0); took > 2*lease {
			t.Errorf("the drain took %v with a lease of %v", took, lease)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the draining worker waited on a store that does not answer for 20 s")
	}
}

// TestLogsSayFailuresInTheUsersWords: a thread's failure in the worker's
// log reads as `uwf thread show` says it, without the library's internal
// words ("extract:", "moderator:", "cas: not found"); the raw text is
// on a debug line of its own.
func TestLogsSayFailuresInTheUsersWords(t *testing.T) {
	f := newFixture(t, backendsOf(t)["memory"](t))
	script := filepath.Join(t.TempDir(), "chatty.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho 'no frontmatter here'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("agents:\n  chatty: {command: "+script+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := f.queueOf(f.solo, 1, t.TempDir(), "chatty")
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	startWorker(t, f.eng, worker.Options{ID: "w1", Retries: -1, Lease: 10 * time.Second,
		Run: thread.RunOptions{Config: cfg}, Logger: log})
	f.waitFor("the run failed", 30*time.Second, func() bool {
		_, r := f.status(ids[0])
		return r != nil && r.State == thread.RunFailed
	})
	f.waitFor("the failure logged", 10*time.Second, func() bool { return strings.Contains(buf.String(), "out of retries") })
	var failure, raw string
	for line := range strings.SplitSeq(buf.String(), "\n") {
		switch {
		case strings.Contains(line, `msg="run failed: out of retries"`):
			failure = line
		case strings.Contains(line, `msg="raw error"`) && strings.Contains(line, "out of retries"):
			raw = line
		}
	}
	if failure == "" || !strings.Contains(failure, "level=ERROR") || !strings.Contains(failure, "thread="+ids[0]) {
		t.Fatalf("no failure line for thread %s in the log:\n%s", ids[0], buf.String())
	}
	for _, word := range []string{"extract:", "moderator:", "cas:", "agent:"} {
		if strings.Contains(failure, word) {
			t.Errorf("the failure line names the internal word %q:\n%s", word, failure)
		}
	}
	if raw == "" || !strings.Contains(raw, "level=DEBUG") || !strings.Contains(raw, "extract:") {
		t.Errorf("no debug line with the raw error:\n%s", buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
