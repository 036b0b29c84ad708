//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/internal/proctest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// The multi-process tests of composition (issue 16 item 3): a call's
// branches run by one uwf process are cancelled by another, through the
// branch's run record dropped and seen by the runner's lease (the one
// watch of SPEC §4). Each runs in a few seconds per backend.

// composeAgent is the agent of the tests: it logs each run; slow* roles
// write their pid and sleep (in a child, so the whole process group must
// end); win fails until the file win-ok exists.
const composeAgent = `#!/bin/sh
cat >/dev/null
echo "$UWF_THREAD $UWF_ROLE $$" >> "$LOG/runs"
case "$UWF_ROLE" in
slow*) echo $$ > "$LOG/pid.$UWF_ROLE.tmp"; mv "$LOG/pid.$UWF_ROLE.tmp" "$LOG/pid.$UWF_ROLE"; sleep 30 & wait ;;
win) if [ ! -e "$LOG/win-ok" ]; then echo "win: not yet" >&2; : > "$LOG/win-failed"; exit 3; fi ;;
esac
printf -- '---\nstatus: ok\nnote: "%s"\n---\nbody\n' "$UWF_ROLE"
`

const composeRole = "{ frontmatter: { type: object, properties: { status: { const: ok }, note: { type: string } }, required: [status, note] } }"

// composeFarm is a store (disk or PostgreSQL) with the agent in a home's
// config, a library engine on it for setup and checks, and uwf processes
// on it.
type composeFarm struct {
	t     *testing.T
	store string
	home  string
	log   string // the agent's log folder
	eng   *thread.Engine
}

func newComposeFarm(t *testing.T, backend string) *composeFarm {
	t.Helper()
	dir := t.TempDir()
	f := &composeFarm{t: t, home: filepath.Join(dir, "home"), log: filepath.Join(dir, "log")}
	switch backend {
	case "disk":
		f.store = filepath.Join(dir, "store")
	case "postgres":
		f.store = freshSchema(postgresURL(t))
	}
	for _, d := range []string{f.home, f.log} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(composeAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "agents:\n  fake:\n    command: " + agent + "\n    env: {LOG: " + f.log + "}\ndefaultAgent: fake\n"
	if err := os.WriteFile(filepath.Join(f.home, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, closeStore, err := workerSession(filepath.Join(dir, "lib-home"), f.store).open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	f.eng = thread.New(repo, nil)
	return f
}

// start puts workflow text and starts a thread of it.
func (f *composeFarm) start(text string) string {
	f.t.Helper()
	w, err := registry.Parse("w.yaml", []byte(text))
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.eng.Registry().Put(f.t.Context(), w)
	if err != nil {
		f.t.Fatal(err)
	}
	id, _, err := f.eng.Start(f.t.Context(), res.Hash, "task", f.t.TempDir())
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// uwfProc is a uwf process started in the background.
type uwfProc struct {
	cmd  *exec.Cmd
	out  *proctest.SyncBuffer
	done chan struct{}
	err  error
}

// spawn starts uwf args in another process; it is killed (SIGKILL) if it
// still runs when the test ends.
func (f *composeFarm) spawn(args ...string) *uwfProc {
	f.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+f.home, "UWF_STORE="+f.store, "UWF_DURABILITY=none", "UWF_LOG_LEVEL=")
	p := &uwfProc{cmd: cmd, out: &proctest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	f.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits d at most for p to exit and returns its exit code.
func (p *uwfProc) wait(t *testing.T, d time.Duration, what string) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s still runs %s on:\n%s", what, d, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", what, p.err)
	}
	return 0
}

// pid returns the pid the agent of role wrote, or 0.
func (f *composeFarm) pid(role string) int {
	data, _ := os.ReadFile(filepath.Join(f.log, "pid."+role))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// runs returns how many times the agent ran role.
func (f *composeFarm) runs(role string) int {
	data, _ := os.ReadFile(filepath.Join(f.log, "runs"))
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if fl := strings.Fields(line); len(fl) == 3 && fl[1] == role {
			n++
		}
	}
	return n
}

func (f *composeFarm) fsckClean() {
	f.t.Helper()
	rep, err := f.eng.Repo().Fsck(f.t.Context(), thread.FsckOptions())
	if err != nil || !rep.OK() {
		f.t.Errorf("fsck: %v %v", err, rep.Problems)
	}
}

// TestKillParentAcrossProcesses: process A steps a thread into a parallel
// stage of two slow branches; process B kills the thread (uwf thread
// kill). A's branch agents end, process groups and all, within seconds,
// A's step ends, the branches are killed, fsck is clean.
func TestKillParentAcrossProcesses(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newComposeFarm(t, backend)
			id := f.start("name: fan\nroles:\n  stage: { parallel: [slow1, slow2] }\n  slow1: " + composeRole + "\n  slow2: " + composeRole +
				"\ngraph:\n  $START: { new: { role: stage, prompt: Go. } }\n  stage: { ok: { role: $END } }\n")
			a := f.spawn("thread", "step", id)
			waitUntil(t, 20*time.Second, "both branch agents to start in process A", func() bool {
				return f.pid("slow1") > 0 && f.pid("slow2") > 0
			})
			info, err := f.eng.Show(t.Context(), id)
			if err != nil || len(info.Branches) != 2 {
				t.Fatalf("show = %+v, %v", info, err)
			}
			b := f.spawn("thread", "kill", id, "--reason", "enough")
			if code := b.wait(t, 20*time.Second, "uwf thread kill"); code != 0 {
				t.Fatalf("uwf thread kill: exit %d\n%s", code, b.out.String())
			}
			killed := time.Now()
			for _, role := range []string{"slow1", "slow2"} {
				if pid := f.pid(role); !proctest.GroupGone(pid, 5*time.Second) {
					t.Errorf("branch %s's agent (pid %d, run by process A) still runs 5 s after the kill", role, pid)
				}
			}
			t.Logf("agents ended %s after the kill", time.Since(killed).Round(10*time.Millisecond))
			code := a.wait(t, 10*time.Second, "process A's step")
			if code == 0 || !strings.Contains(a.out.String(), id) {
				t.Errorf("process A's step of the killed thread: exit %d\n%s", code, a.out.String())
			}
			if st, err := f.eng.Show(t.Context(), id); err != nil || st.Status != thread.StatusKilled {
				t.Errorf("parent after the kill: %+v, %v", st, err)
			}
			for _, br := range info.Branches {
				st, err := f.eng.Show(t.Context(), br.Thread)
				if err != nil || st.Status != thread.StatusKilled {
					t.Errorf("branch %s after the parent's kill: %+v, %v", br.Key, st, err)
				}
				if run, err := f.eng.RunOf(t.Context(), br.Thread); err != nil || run != nil {
					t.Errorf("branch %s's run record after the kill: %+v, %v", br.Key, run, err)
				}
			}
			if n := f.runs("slow1") + f.runs("slow2"); n != 2 {
				t.Errorf("the slow agents ran %d times, want 2", n)
			}
			f.fsckClean()
		})
	}
}

// TestRaceLoserInOtherProcess: a race between win and slow1. Process B
// steps the thread: it makes the call, its run of win fails (the agent is
// not ready yet) and gives the branch back, its run of slow1 goes on.
// Process A then steps the thread: slow1's lease is B's, so A leaves it;
// A runs win, which wins. B's agent of slow1 ends (A's cancelled mark
// drops the branch's run record; B's lease sees it) and slow1 is recorded
// cancelled, not failed; A joins, the thread ends done, fsck is clean.
func TestRaceLoserInOtherProcess(t *testing.T) {
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newComposeFarm(t, backend)
			id := f.start("name: first\nroles:\n  stage: { race: [win, slow1] }\n  win: " + composeRole + "\n  slow1: " + composeRole +
				"\ngraph:\n  $START: { new: { role: stage, prompt: Go. } }\n  stage: { ok: { role: $END } }\n")
			b := f.spawn("thread", "step", id)
			waitUntil(t, 20*time.Second, "process B to run slow1 and fail win", func() bool {
				_, err := os.Stat(filepath.Join(f.log, "win-failed"))
				return err == nil && f.pid("slow1") > 0
			})
			info, err := f.eng.Show(t.Context(), id)
			if err != nil || len(info.Branches) != 2 || info.Branches[1].Key != "slow1" {
				t.Fatalf("show = %+v, %v", info, err)
			}
			loser := info.Branches[1].Thread
			run, err := f.eng.RunOf(t.Context(), loser)
			if err != nil || run == nil || !strings.Contains(run.Worker, "pid "+strconv.Itoa(b.cmd.Process.Pid)) {
				t.Fatalf("slow1's run record = %+v, %v; want process B's lease (pid %d)", run, err, b.cmd.Process.Pid)
			}
			if err := os.WriteFile(filepath.Join(f.log, "win-ok"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			// A runs the thread to its end; B, whose win failed, settles
			// the call too: one of them joins, the other finds the thread
			// moved (exit 4). Neither reports the race lost.
			a := f.spawn("thread", "step", id, "-n", "0")
			codeA := a.wait(t, 30*time.Second, "process A's step")
			pid := f.pid("slow1")
			if !proctest.GroupGone(pid, 5*time.Second) {
				t.Errorf("the loser's agent (pid %d, run by process B) still runs 5 s after the race was won", pid)
			}
			codeB := b.wait(t, 10*time.Second, "process B's step")
			t.Logf("process A: exit %d\n%s\nprocess B: exit %d\n%s", codeA, a.out.String(), codeB, b.out.String())
			for _, p := range []struct {
				name string
				code int
				out  string
			}{{"A", codeA, a.out.String()}, {"B", codeB, b.out.String()}} {
				if (p.code != 0 && p.code != 4) || strings.Contains(p.out, "no branch of the race succeeded") {
					t.Errorf("process %s: exit %d, want 0 or 4 (the race was won)\n%s", p.name, p.code, p.out)
				}
			}
			if codeA != 0 { // B joined first: A goes on from the join
				if r := f.spawn("thread", "step", id, "-n", "0"); r.wait(t, 20*time.Second, "the last step") != 0 {
					t.Errorf("stepping the joined thread:\n%s", r.out.String())
				}
			}
			if st, err := f.eng.Show(t.Context(), id); err != nil || !st.FailureHash.IsZero() {
				t.Errorf("the thread has a failure recorded after a won race: %+v, %v", st, err)
			}
			if st, err := f.eng.Show(t.Context(), id); err != nil || st.Status != thread.StatusDone {
				t.Errorf("the thread after the race: %+v, %v", st, err)
			}
			hn, err := f.eng.Head(t.Context(), loser)
			if err != nil {
				t.Fatal(err)
			}
			n, err := f.eng.Node(t.Context(), hn)
			if err != nil || n.Status() != thread.StatusCancelled || n.Mark == nil || n.Mark.Reason != "lost the race to win" {
				t.Errorf("the loser's head = %+v, %v; want a cancelled mark, lost the race to win", n, err)
			}
			// The join records the winner done and the loser cancelled.
			calls, err := f.eng.Calls(t.Context(), id)
			if err != nil || len(calls) != 1 || len(calls[0].Branches) != 2 {
				t.Fatalf("calls = %+v, %v", calls, err)
			}
			for _, br := range calls[0].Branches {
				want := map[string]string{"win": "done", "slow1": "cancelled"}[br.Key]
				if br.Status != want {
					t.Errorf("branch %s in the join: %s, want %s", br.Key, br.Status, want)
				}
			}
			if got := f.runs("slow1"); got != 1 {
				t.Errorf("slow1 ran %d times, want 1 (process B's)", got)
			}
			if got := f.runs("win"); got != 2 {
				t.Errorf("win ran %d times, want 2 (B's failure, A's win)", got)
			}
			f.fsckClean()
		})
	}
}
