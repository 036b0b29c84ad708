//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/proctest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// The multi-process tests of `uwf worker` (issue "Scale out"): separate
// worker processes (this test binary run as uwf, see TestMain), each with
// its own home, sharing one store, disk or PostgreSQL. Their CI variants
// take well under 60 s per backend; UWF_WORKERS_FULL=1 runs the full
// campaign (200 threads).

// chainYAML is a workflow of three steps, r1 -> r2 -> r3 -> $END, whose
// roles the test agent completes: the role gives the step's depth.
const chainYAML = `name: chain
roles:
  r1: {frontmatter: {type: object, properties: {status: {const: done}}, required: [status]}}
  r2: {frontmatter: {type: object, properties: {status: {const: done}}, required: [status]}}
  r3: {frontmatter: {type: object, properties: {status: {const: done}}, required: [status]}}
graph:
  $START: {new: {role: r1, prompt: "go"}}
  r1: {done: {role: r2, prompt: "next"}}
  r2: {done: {role: r3, prompt: "next"}}
  r3: {done: {role: $END, prompt: "end"}}
`

// agentScript logs "<start|end> <thread> <depth> <worker> <pid>" for each
// run to $UWF_TEST_AGENT_LOG, sleeps (60 s for a worker whose id starts
// with "slow", else $UWF_TEST_AGENT_SLEEP), and answers status: done. For
// a worker whose id starts with "poison" it is a poison pill: it kills its
// worker (its parent) with SIGKILL and exits.
const agentScript = `#!/bin/sh
cat >/dev/null
case "$UWF_ROLE" in r1) d=1;; r2) d=2;; r3) d=3;; *) d=0;; esac
echo "start $UWF_THREAD $d $UWF_TEST_WORKER_ID $$" >> "$UWF_TEST_AGENT_LOG"
if [ -n "$UWF_TEST_AGENT_TIMES" ]; then echo "$UWF_THREAD $d $(date +%s%N)" >> "$UWF_TEST_AGENT_TIMES"; fi
case "$UWF_TEST_WORKER_ID" in poison*) kill -9 "$PPID"; exit 1;; slow*) sleep 60;; *) sleep "$UWF_TEST_AGENT_SLEEP";; esac
echo "end $UWF_THREAD $d $UWF_TEST_WORKER_ID $$" >> "$UWF_TEST_AGENT_LOG"
printf -- '---\nstatus: done\n---\nok\n'
`

// farm is a store with worker processes around it.
type farm struct {
	t        testing.TB
	dir      string
	store    string // a disk path or a PostgreSQL URL
	agentLog string
	sleep    string // the agent's sleep, in seconds
	lease    string
	times    string // where the agent logs "<thread> <depth> <unix ns>" at its start, if set
	eng      *thread.Engine
	wf       cas.Hash

	takeoverDelays []int64 // ms from a lease's expiry to its takeover, by the store's clock

	mu      sync.Mutex
	procs   map[string]*wproc
	stopped map[string]string // incarnation -> "killed" or "frozen"
	n       int
}

type wproc struct {
	id   string
	cmd  *exec.Cmd
	out  *proctest.SyncBuffer
	done chan struct{}
	err  error
}

// linesAbout returns the lines of the worker's log that name thread id.
func (p *wproc) linesAbout(id string) string {
	var out []string
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(l, id) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func newFarm(t testing.TB, backend string) *farm {
	t.Helper()
	dir := t.TempDir()
	f := &farm{t: t, dir: dir, agentLog: filepath.Join(dir, "agent.log"), sleep: "0.05", lease: "4s",
		procs: map[string]*wproc{}, stopped: map[string]string{}}
	switch backend {
	case "disk":
		f.store = filepath.Join(dir, "store")
	case "postgres":
		f.store = freshSchema(postgresURL(t))
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	s := workerSession(filepath.Join(dir, "lib-home"), f.store)
	repo, closeStore, err := s.open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	f.eng = thread.New(repo, nil)
	w, err := registry.Parse("chain.yaml", []byte(chainYAML))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.eng.Registry().Put(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	f.wf = res.Hash
	t.Cleanup(f.stopAll)
	return f
}

// queue starts and queues n threads.
func (f *farm) queue(n int) []string {
	f.t.Helper()
	cwd := f.t.TempDir()
	var ids []string
	for i := range n {
		id, _, err := f.eng.Start(f.t.Context(), f.wf, fmt.Sprintf("task %d", i), cwd)
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.eng.Enqueue(f.t.Context(), id, thread.EnqueueOptions{Agent: "tester"}); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// start starts a worker process named id, with a home of its own.
func (f *farm) start(id string, args ...string) *wproc {
	f.t.Helper()
	home := f.home(id)
	all := append([]string{"worker", "--id", id, "--lease", f.lease, "--backoff", "100ms"}, args...)
	cmd := exec.Command(os.Args[0], all...)
	cmd.Env = f.env(home, id)
	p := &wproc{id: id, cmd: cmd, out: &proctest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	f.mu.Lock()
	f.procs[id] = p
	f.mu.Unlock()
	// Up once it says so (its signal handlers are set by then).
	waitUntil(f.t, 20*time.Second, "worker "+id+" to start", func() bool {
		if strings.Contains(p.out.String(), "worker started") {
			return true // even if it has ended since (a poison pill's agent kills it)
		}
		select {
		case <-p.done:
			f.t.Fatalf("worker %s exited at start: %v\n%s", id, p.err, p.out.String())
		default:
		}
		return strings.Contains(p.out.String(), "worker started")
	})
	return p
}

// env is the environment of a uwf process of the farm with home, named
// id for the test agent.
func (f *farm) env(home, id string) []string {
	return append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+home, "UWF_STORE="+f.store, "UWF_DURABILITY=none",
		"UWF_LOG_LEVEL=", "UWF_TEST_WORKER_ID="+id, "UWF_TEST_AGENT_LOG="+f.agentLog, "UWF_TEST_AGENT_SLEEP="+f.sleep,
		"UWF_TEST_AGENT_TIMES="+f.times)
}

// home makes a home named id with the test agent in its config.yaml.
func (f *farm) home(id string) string {
	f.t.Helper()
	home := filepath.Join(f.dir, "home-"+id)
	if err := os.MkdirAll(home, 0o755); err != nil {
		f.t.Fatal(err)
	}
	cfg := "agents:\n  tester: {command: " + filepath.Join(f.dir, "agent.sh") + "}\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return home
}

// signal sends sig to worker p.
func (f *farm) signal(p *wproc, sig syscall.Signal) {
	f.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		f.t.Fatal(err)
	}
}

// stopAll ends every worker still running (SIGKILL) when the test ends.
func (f *farm) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	if f.t.Failed() && os.Getenv("UWF_WORKERS_LOGS") == "1" {
		for _, p := range f.procs {
			f.t.Logf("worker %s log:\n%s", p.id, p.out.String())
		}
	}
}

// waitDone polls until every thread of ids is done and has no run record.
func (f *farm) waitDone(ids []string, d time.Duration) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for {
		done := 0
		for _, id := range ids {
			info, err := f.eng.Show(f.t.Context(), id)
			if err != nil {
				f.t.Fatal(err)
			}
			// Done, and its run given back (a worker killed after the
			// last commit leaves a lease that another takes over and
			// releases once it expires).
			if info.Status == thread.StatusDone && info.Run == nil {
				done++
			}
		}
		if done == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("after %s, %d of %d threads are done with their runs given back", d, done, len(ids))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// agentRun is one line pair of the agent log.
type agentRun struct {
	thread string
	depth  int
	worker string
	pid    int
	ended  bool
}

// agentRuns reads the agent log.
func (f *farm) agentRuns() []*agentRun {
	f.t.Helper()
	data, err := os.ReadFile(f.agentLog)
	if err != nil {
		f.t.Fatal(err)
	}
	byPid := map[int]*agentRun{}
	var out []*agentRun
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			f.t.Fatalf("agent log line %q", sc.Text())
		}
		depth, _ := strconv.Atoi(fs[2])
		pid, _ := strconv.Atoi(fs[4])
		switch fs[0] {
		case "start":
			r := &agentRun{thread: fs[1], depth: depth, worker: fs[3], pid: pid}
			byPid[pid] = r
			out = append(out, r)
		case "end":
			if r := byPid[pid]; r != nil {
				r.ended = true
			}
		}
	}
	return out
}

var commitLabel = regexp.MustCompile(`\(worker (\S+) build \S+ attempt (\d+)\)$`)

// checkHistory checks, from the runs/ and threads/ logs, that every
// thread is done with a linear chain, that no lease was taken over before
// its expiry by the store's clock, that no run committed outside its
// lease, and that an agent ran twice for one chain position only where a
// worker was killed or frozen; and that the store fscks clean. It returns
// the takeovers seen.
func (f *farm) checkHistory(ids []string) (takeovers int) {
	t, ctx := f.t, f.t.Context()
	refs := f.eng.Repo().Refs()
	for _, id := range ids {
		// The chain: linear, one commit per position.
		tlog, err := refs.Log(ctx, thread.ThreadPrefix+id)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(tlog); i++ {
			if tlog[i].Old != tlog[i-1].New {
				t.Errorf("thread %s: log entry %d moves from %s, not from %s: the chain is not linear", id, i, tlog[i].Old, tlog[i-1].New)
			}
		}
		if len(tlog) != 5 { // start, r1, r2, r3, done
			t.Errorf("thread %s: %d log entries, want 5", id, len(tlog))
		}
		info, err := f.eng.Show(ctx, id)
		if err != nil || info.Status != thread.StatusDone || info.Depth != 4 || info.Run != nil {
			t.Errorf("thread %s: %+v, %v; want done at depth 4 with no run left", id, info, err)
		}
		// The leases, by attempt.
		rlog, err := refs.Log(ctx, thread.RunPrefix+id)
		if err != nil {
			t.Fatal(err)
		}
		type lease struct {
			worker   string
			attempt  int
			from     int64
			end      int64 // when the record left this lease (1<<62: never)
			expiries [][2]int64
		}
		leases := map[int]*lease{}
		var cur *lease
		for _, e := range rlog {
			var next *thread.Run
			if !e.New.IsZero() {
				if next, err = f.eng.ReadRun(ctx, e.New); err != nil {
					t.Fatal(err)
				}
			}
			if strings.HasPrefix(e.Message, "takeover by") || strings.HasPrefix(e.Message, "claim by") && !e.Old.IsZero() {
				old, err := f.eng.ReadRun(ctx, e.Old)
				if err != nil {
					t.Fatal(err)
				}
				if (old.State == thread.RunRunning || old.State == thread.RunRetrying) && e.Time < old.Expiry {
					t.Errorf("thread %s: %q at %d, before the expiry %d of %s's record (store clock)", id, e.Message, e.Time, old.Expiry, old.Worker)
				}
				if old.State == thread.RunRunning {
					takeovers++
					f.takeoverDelays = append(f.takeoverDelays, e.Time-old.Expiry)
				}
			}
			mine := next != nil && next.State == thread.RunRunning && cur != nil && next.Worker == cur.worker && next.Attempt == cur.attempt
			if mine {
				cur.expiries = append(cur.expiries, [2]int64{e.Time, next.Expiry})
				continue
			}
			if cur != nil {
				cur.end = e.Time
				cur = nil
			}
			if next != nil && next.State == thread.RunRunning {
				cur = &lease{worker: next.Worker, attempt: next.Attempt, from: e.Time, end: 1 << 62, expiries: [][2]int64{{e.Time, next.Expiry}}}
				leases[next.Attempt] = cur
			}
		}
		// Every commit within its lease.
		for _, e := range tlog[1:] {
			m := commitLabel.FindStringSubmatch(e.Message)
			if m == nil {
				t.Errorf("thread %s: commit %q names no worker and attempt", id, e.Message)
				continue
			}
			n, _ := strconv.Atoi(m[2])
			l := leases[n]
			if l == nil || l.worker != m[1] {
				t.Errorf("thread %s: commit %q by a lease the runs/ log does not hold", id, e.Message)
				continue
			}
			expiry := int64(0)
			for _, x := range l.expiries {
				if x[0] <= e.Time {
					expiry = x[1]
				}
			}
			if e.Time < l.from || e.Time > l.end || e.Time > expiry {
				t.Errorf("thread %s: commit %q at %d outside its lease [%d, %d] (expiry %d)", id, e.Message, e.Time, l.from, l.end, expiry)
			}
		}
	}
	// Re-runs only where a worker was killed or frozen.
	f.mu.Lock()
	stopped := f.stopped
	f.mu.Unlock()
	pos := map[string][]*agentRun{}
	for _, r := range f.agentRuns() {
		k := fmt.Sprintf("%s %d", r.thread, r.depth)
		pos[k] = append(pos[k], r)
	}
	for k, rs := range pos {
		live := 0
		for _, r := range rs {
			if stopped[r.worker] == "" {
				live++
			}
		}
		if live > 1 {
			var ws []string
			var logs []string
			for _, r := range rs {
				ws = append(ws, r.worker)
				f.mu.Lock()
				if p := f.procs[r.worker]; p != nil {
					logs = append(logs, r.worker+":\n"+p.linesAbout(r.thread))
				}
				f.mu.Unlock()
			}
			t.Errorf("position %s ran %d times by workers never killed or frozen: %q\n%s", k, live, ws, strings.Join(logs, "\n"))
		}
	}
	rep, err := f.eng.Repo().Fsck(ctx, thread.FsckOptions())
	if err != nil || !rep.OK() {
		t.Errorf("fsck: %v %v", err, rep.Problems)
	}
	return takeovers
}

// TestWorkerCampaign: 4 worker processes on one store, killed with
// SIGKILL at random moments and restarted, run every queued thread to
// the end; the runs/ and threads/ logs show no takeover before expiry and
// no commit outside its lease.
func TestWorkerCampaign(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newFarm(t, backend)
			f.sleep = "0.3" // the work outlasts the kills
			n, kills := 40, 8
			if os.Getenv("UWF_WORKERS_FULL") == "1" {
				n, kills = 200, 40
			}
			ids := f.queue(n)
			// The takeover cap (a poison pill's: uwf worker --max-takeovers,
			// default 10) must stay out of the kills' reach. A killed
			// worker's threads wait out their lease (4 s) before another
			// takes them over, so one thread is taken over at most 1 +
			// span/lease times, the span being at most 1 s a kill: 3 times
			// for the CI's 8 kills, 11 in the (never seen) worst case of
			// the full 40, where the workers get a cap above it.
			args := []string{"--concurrency", "4"}
			lease, err := time.ParseDuration(f.lease)
			if err != nil {
				t.Fatal(err)
			}
			if worst := 1 + int(time.Duration(kills)*time.Second/lease); worst > thread.DefaultMaxTakeovers {
				args = append(args, "--max-takeovers", strconv.Itoa(worst))
			}
			live := []*wproc{}
			for i := range 4 {
				live = append(live, f.start(fmt.Sprintf("w%d.0", i), args...))
			}
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
			gen := map[int]int{}
			for range kills {
				time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
				i := rng.IntN(len(live))
				f.signal(live[i], syscall.SIGKILL)
				<-live[i].done
				f.mu.Lock()
				f.stopped[live[i].id] = "killed"
				f.mu.Unlock()
				gen[i]++
				live[i] = f.start(fmt.Sprintf("w%d.%d", i, gen[i]), args...)
			}
			f.waitDone(ids, 50*time.Second)
			for _, p := range live {
				f.signal(p, syscall.SIGTERM)
			}
			for _, p := range live {
				<-p.done
				if p.err != nil {
					t.Errorf("worker %s ended with %v after SIGTERM", p.id, p.err)
				}
			}
			takeovers := f.checkHistory(ids)
			if takeovers == 0 {
				t.Error("no kill hit a running thread: the campaign tested nothing")
			}
			slices.Sort(f.takeoverDelays)
			var med, top int64
			if n := len(f.takeoverDelays); n > 0 {
				med, top = f.takeoverDelays[n/2], f.takeoverDelays[n-1]
			}
			t.Logf("%s: %d threads, %d kills, %d takeovers, %d-%d ms after the expiry (median, max; lease %s)", backend, n, kills, takeovers, med, top, f.lease)
		})
	}
}

// TestWorkerFrozen: a worker frozen with SIGSTOP past its lease's expiry,
// then resumed, commits nothing and ends its agent's process group;
// another worker has continued the thread.
func TestWorkerFrozen(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newFarm(t, backend)
			ids := f.queue(1)
			slow := f.start("slow-frozen")
			// Wait until its agent (60 s long) runs.
			var run *agentRun
			waitUntil(t, 20*time.Second, "the frozen worker's agent to start", func() bool {
				if _, err := os.Stat(f.agentLog); err != nil {
					return false
				}
				rs := f.agentRuns()
				if len(rs) > 0 {
					run = rs[0]
				}
				return run != nil
			})
			f.signal(slow, syscall.SIGSTOP)
			f.mu.Lock()
			f.stopped[slow.id] = "frozen"
			f.mu.Unlock()
			other := f.start("w-other")
			f.waitDone(ids, 40*time.Second)
			f.signal(slow, syscall.SIGCONT)
			// It ends its agent's process group (the 60 s sleep).
			waitUntil(t, 15*time.Second, "the frozen worker's agent to be ended", func() bool {
				return syscall.Kill(run.pid, 0) != nil
			})
			if run.ended {
				t.Error("the frozen worker's agent ran to its end")
			}
			f.signal(slow, syscall.SIGTERM)
			f.signal(other, syscall.SIGTERM)
			<-slow.done
			<-other.done
			f.checkHistory(ids)
			tlog, err := f.eng.Repo().Refs().Log(t.Context(), thread.ThreadPrefix+ids[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tlog {
				if strings.Contains(e.Message, "worker slow-frozen") {
					t.Errorf("the frozen worker committed %q", e.Message)
				}
			}
			if !strings.Contains(slow.out.String(), "lease lost") {
				t.Errorf("the frozen worker did not log its lost lease:\n%s", slow.out.String())
			}
		})
	}
}

// TestWorkerSIGTERM: a worker stopped with SIGTERM mid-step hands the
// thread back within its drain deadline (its agent ended); another worker
// continues it.
func TestWorkerSIGTERM(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newFarm(t, backend)
			ids := f.queue(1)
			slow := f.start("slow-term", "--drain", "1s")
			waitUntil(t, 20*time.Second, "the agent to start", func() bool {
				_, err := os.Stat(f.agentLog)
				return err == nil && len(f.agentRuns()) > 0
			})
			t0 := time.Now()
			f.signal(slow, syscall.SIGTERM)
			<-slow.done
			if took := time.Since(t0); took > 6*time.Second {
				t.Errorf("the worker took %s to stop with --drain 1s", took)
			}
			if slow.err != nil {
				t.Errorf("the worker exited with %v after SIGTERM, want 0", slow.err)
			}
			if !strings.Contains(slow.out.String(), "handed back to the queue") {
				t.Errorf("the worker did not hand the thread back:\n%s", slow.out.String())
			}
			r, err := f.eng.RunOf(t.Context(), ids[0])
			if err != nil || r == nil || r.State != thread.RunQueued {
				t.Fatalf("run after the drain = %+v, %v; want queued", r, err)
			}
			other := f.start("w-other")
			f.waitDone(ids, 30*time.Second)
			f.signal(other, syscall.SIGTERM)
			<-other.done
			f.mu.Lock()
			f.stopped[slow.id] = "stopped"
			f.mu.Unlock()
			f.checkHistory(ids)
		})
	}
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkerMaxRunning: `uwf worker max-running chain 2`, then 3 worker
// processes of concurrency 3: never more than 2 chain threads run at once,
// checked from the leases' history in the runs/ logs.
func TestWorkerMaxRunning(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newFarm(t, backend)
			f.sleep = "0.2"
			cmd := exec.Command(os.Args[0], "worker", "max-running", "chain", "2")
			cmd.Env = f.env(f.home("admin"), "admin")
			if out, err := cmd.CombinedOutput(); err != nil || string(out) != "chain maxRunning 2\n" {
				t.Fatalf("worker max-running: %v %q", err, out)
			}
			ids := f.queue(8)
			var ws []*wproc
			for i := range 3 {
				ws = append(ws, f.start(fmt.Sprintf("cap%d", i), "--concurrency", "3"))
			}
			f.waitDone(ids, 50*time.Second)
			for _, w := range ws {
				f.signal(w, syscall.SIGTERM)
				<-w.done
			}
			if peak := f.peakRunning(ids); peak != 2 {
				t.Errorf("at most %d threads ran at once, want 2 (maxRunning 2; 9 workers' room)", peak)
			}
			f.checkHistory(ids)
		})
	}
}

// peakRunning returns the most leases held at once on ids.
func (f *farm) peakRunning(ids []string) int {
	peak, err := proctest.PeakRunning(f.t.Context(), f.eng, ids)
	if err != nil {
		f.t.Fatal(err)
	}
	return peak
}

// TestWorkerPoisonPill: a thread whose agent kills every worker that runs
// it is taken over up to --max-takeovers times, then the next worker's
// claim fails it, visibly (thread show, the worker's log); thread queue
// queues it again with the count reset, and a worker it does not kill
// runs it to the end.
func TestWorkerPoisonPill(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newFarm(t, backend)
			f.lease = "1s"
			ids := f.queue(1)
			id := ids[0]
			var last *wproc
			for i := 0; ; i++ {
				if i > 3 {
					t.Fatalf("the run is not failed after %d claims", i)
				}
				p := f.start(fmt.Sprintf("poison-%d", i), "--max-takeovers", "2")
				var r *thread.Run
				waitUntil(t, 20*time.Second, "the worker killed or the run failed", func() bool {
					select {
					case <-p.done:
						return true
					default:
					}
					var err error
					if r, err = f.eng.RunOf(t.Context(), id); err != nil {
						t.Fatal(err)
					}
					return r != nil && r.State == thread.RunFailed
				})
				if r != nil && r.State == thread.RunFailed {
					if i != 3 {
						t.Fatalf("the run failed at claim %d, want 4 (1 claim + 2 takeovers, then the cap)", i+1)
					}
					last = p
					break
				}
				f.mu.Lock()
				f.stopped[p.id] = "killed"
				f.mu.Unlock()
			}
			r, err := f.eng.RunOf(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Attempt != 3 || r.Failures != 0 || !strings.Contains(r.Error, "taken over 3 times (more than the limit of 2)") {
				t.Errorf("failed run = %+v", r)
			}
			waitUntil(t, 10*time.Second, "the failure logged", func() bool {
				return strings.Contains(last.out.String(), "run failed: taken over too many times")
			})
			f.signal(last, syscall.SIGTERM)
			<-last.done
			if runs := f.agentRuns(); len(runs) != 3 {
				t.Errorf("the poison pill's agent ran %d times, want 3", len(runs))
			}
			uwf := func(args ...string) string {
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = f.env(f.home("cli"), "cli")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("uwf %q: %v\n%s", args, err, out)
				}
				return string(out)
			}
			if out := uwf("thread", "show", id); !strings.Contains(out, "run:      failed (attempt 3, failures 0") ||
				!strings.Contains(out, "run error: taken over 3 times") {
				t.Errorf("thread show of the poison pill:\n%s", out)
			}
			// Queued again: the count starts afresh, and a worker its agent
			// does not kill runs it to the end.
			uwf("thread", "queue", id)
			if r, err := f.eng.RunOf(t.Context(), id); err != nil || r.State != thread.RunQueued || r.Attempt != 0 {
				t.Fatalf("after thread queue: %+v, %v", r, err)
			}
			ok := f.start("w-ok")
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("w-ok:\n%s", ok.out.String())
				}
			})
			f.waitDone(ids, 30*time.Second)
			f.signal(ok, syscall.SIGTERM)
			<-ok.done
		})
	}
}
