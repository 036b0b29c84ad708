package thread_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/extract"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// putWorkflow registers a workflow from YAML text.
func (te *tenv) putWorkflow(text string) cas.Hash {
	te.t.Helper()
	wf, err := registry.Parse("wf.yaml", []byte(text))
	if err != nil {
		te.t.Fatal(err)
	}
	res, err := te.e.Registry().Put(te.ctx, wf)
	if err != nil {
		te.t.Fatal(err)
	}
	return res.Hash
}

func (te *tenv) reviewLoop() cas.Hash {
	te.t.Helper()
	data, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		te.t.Fatal(err)
	}
	return te.putWorkflow(string(data))
}

// roles returns the chain of a thread as "role:status" for steps and
// "mark:<kind>" for marks, oldest first (the start left out).
func (te *tenv) roles(id string) []string {
	te.t.Helper()
	var out []string
	for n, err := range te.e.OldestFirst(te.ctx, te.head(id)) {
		if err != nil {
			te.t.Fatal(err)
		}
		switch n.Kind {
		case thread.KindStep:
			o, err := te.repo.Get(te.ctx, n.Step.Output)
			if err != nil {
				te.t.Fatal(err)
			}
			out = append(out, n.Step.Role+":"+o.Payload.(map[string]any)["status"].(string))
		case thread.KindMark:
			out = append(out, "mark:"+n.Mark.Mark)
		}
	}
	return out
}

// outputs returns the output hashes of a thread's steps, oldest first.
func (te *tenv) outputs(id string) []cas.Hash {
	var out []cas.Hash
	for n, err := range te.e.OldestFirst(te.ctx, te.head(id)) {
		if err != nil {
			te.t.Fatal(err)
		}
		if n.Kind == thread.KindStep {
			out = append(out, n.Step.Output)
		}
	}
	return out
}

func parseConfig(t *testing.T, text string) *config.Config {
	t.Helper()
	c, err := config.Parse("config.yaml", []byte(text), agent.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var reviewLoopPath = []string{"planner:done", "developer:done", "reviewer:rejected", "developer:done", "reviewer:approved", "mark:done"}

func TestRunSynthReviewLoop(t *testing.T) { testRunSynthReviewLoop(t, newTEnv(t)) }

func testRunSynthReviewLoop(t *testing.T, te *tenv) {
	wf := te.reviewLoop()
	var events []string
	id, rs, err := te.e.Run(te.ctx, wf, "Add a --json flag", t.TempDir(), &thread.RunOptions{Agent: "synth",
		Progress: func(ev thread.Event) { events = append(events, ev.Type+" "+ev.Role) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := te.roles(id); !slices.Equal(got, reviewLoopPath) {
		t.Errorf("roles = %q, want %q", got, reviewLoopPath)
	}
	if len(rs) != 6 || rs[5].Kind != thread.EventDone {
		t.Errorf("results = %+v", rs)
	}
	if !slices.Contains(events, "running reviewer") || !slices.Contains(events, "done ") {
		t.Errorf("events = %q", events)
	}
	info, _ := te.e.Show(te.ctx, id)
	if info.Status != thread.StatusDone {
		t.Errorf("status = %s", info.Status)
	}
	// Stepping a done thread is refused.
	if _, err := te.e.Step(te.ctx, id, &thread.RunOptions{Agent: "synth"}); !errors.Is(err, thread.ErrNotActive) {
		t.Errorf("Step(done) = %v, want ErrNotActive", err)
	}
	rep, err := te.repo.Fsck(te.ctx, thread.FsckOptions())
	if err != nil || !rep.OK() {
		t.Errorf("fsck: %v %v", err, rep.Problems)
	}
}

func TestReplayIntoFork(t *testing.T) { testReplayIntoFork(t, newTEnv(t)) }

func testReplayIntoFork(t *testing.T, te *tenv) {
	wf := te.reviewLoop()
	src, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	fork, _, err := te.e.ForkAt(te.ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, fork, 0, &thread.RunOptions{Agent: "replay:" + src}); err != nil {
		t.Fatal(err)
	}
	if got := te.roles(fork); !slices.Equal(got, reviewLoopPath) {
		t.Errorf("replayed roles = %q", got)
	}
	if a, b := te.outputs(src), te.outputs(fork); !slices.Equal(a, b) {
		t.Errorf("replayed outputs %v differ from %v", b, a)
	}
	// The same thread replayed under its own workflow does not diverge.
	rep, err := te.e.Replay(te.ctx, src, 0)
	if err != nil || rep.Divergence != nil || rep.Steps != 5 {
		t.Errorf("Replay(same workflow) = %+v, %v", rep, err)
	}
}

// reviewLoopWith returns the review loop with old replaced by new.
func reviewLoopWith(t *testing.T, old, new string) string {
	t.Helper()
	data, _ := examples.FS.ReadFile("review-loop.yaml")
	s := string(data)
	if !strings.Contains(s, old) {
		t.Fatalf("the review loop has no %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

func TestReplayUnderChangedWorkflow(t *testing.T) { testReplayUnderChangedWorkflow(t, newTEnv(t)) }

func testReplayUnderChangedWorkflow(t *testing.T, te *tenv) {
	wf := te.reviewLoop()
	src, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	// The reviewer's schema gains a required field: the replay agent's
	// recorded outputs fail extraction at the first reviewer step.
	stricter := te.putWorkflow(reviewLoopWith(t, "required: [status, comments]", "required: [status, comments, severity]"))
	id, _, err := te.e.Start(te.ctx, stricter, "task", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = te.e.StepN(te.ctx, id, 0, &thread.RunOptions{Agent: "replay:" + src})
	var se *thread.StepError
	if !errors.As(err, &se) || se.Role != "reviewer" || !errors.Is(err, extract.ErrInvalidOutput) || !strings.Contains(err.Error(), "severity") {
		t.Fatalf("replay under the stricter workflow = %v, want a reviewer StepError about severity", err)
	}
	if got := te.roles(id); !slices.Equal(got, []string{"planner:done", "developer:done"}) {
		t.Errorf("roles before the failure = %q", got)
	}
	rep, err := te.e.Replay(te.ctx, src, stricter)
	if err != nil || rep.Divergence == nil || !rep.Divergence.Invalid || rep.Divergence.Depth != 3 {
		t.Errorf("Replay report under the stricter schema = %+v, %v", rep, err)
	}
	// A changed graph: rejected now ends the thread.
	changed := te.putWorkflow(reviewLoopWith(t, `rejected: { role: developer, prompt: "Fix what the review found: {{ comments }}" }`,
		`rejected: { role: $END, prompt: "Rejected: {{ comments }}" }`))
	rep, err = te.e.Replay(te.ctx, src, changed)
	if err != nil || rep.Divergence == nil {
		t.Fatalf("Replay(changed graph) = %+v, %v", rep, err)
	}
	d := rep.Divergence
	if d.Depth != 4 || d.From != "reviewer" || d.Status != "rejected" || d.Old != "developer" || d.New != "$END" {
		t.Errorf("divergence = %+v", d)
	}
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExternalAgentEndToEnd(t *testing.T) { testExternalAgentEndToEnd(t, newTEnv(t)) }

func testExternalAgentEndToEnd(t *testing.T, te *tenv) {
	wf := te.reviewLoop()
	dir := t.TempDir()
	// The agent saves each prompt and its environment, and answers by role;
	// the reviewer rejects once.
	agentPath := script(t, dir, "agent.sh", `n=$(ls "$OUT" | wc -l)
cat > "$OUT/prompt-$n-$UWF_ROLE.txt"
echo "$UWF_THREAD $UWF_ROLE $UWF_HOME $UWF_STORE $(pwd)" > "$OUT/env-$n.txt"
case "$UWF_ROLE" in
planner) printf -- '---\nstatus: done\nsteps: [write code, test it]\n---\nThe plan.\n' ;;
developer) printf -- '---\nstatus: done\nsummary: wrote it\n---\n' ;;
reviewer) if [ -e "$OUT/rejected" ]; then printf -- '---\nstatus: approved\ncomments: fine\n---\n'; else touch "$OUT/rejected"; printf -- '---\nstatus: rejected\ncomments: add tests\n---\n'; fi ;;
esac
`)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	cfg := parseConfig(t, fmt.Sprintf("agents:\n  sh:\n    command: %s\n    env: {OUT: %s}\ndefaultAgent: sh\n", agentPath, out))
	cwd := t.TempDir()
	id, _, err := te.e.Run(te.ctx, wf, "Build the thing", cwd, &thread.RunOptions{Config: cfg, Home: "/h", Store: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := te.roles(id); !slices.Equal(got, reviewLoopPath) {
		t.Errorf("roles = %q", got)
	}
	prompt, err := os.ReadFile(filepath.Join(out, "prompt-4-reviewer.txt"))
	if err != nil {
		entries, _ := os.ReadDir(out)
		t.Fatalf("%v (files: %v)", err, entries)
	}
	for _, want := range []string{"reviewer", "You review the implementation.", "Review this change: wrote it",
		"`status`", "approved", "rejected", "$SUSPEND", "Build the thing"} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("the reviewer's prompt lacks %q:\n%s", want, prompt)
		}
	}
	env, _ := os.ReadFile(filepath.Join(out, "env-2.txt"))
	if want := id + " developer /h /s " + cwd + "\n"; string(env) != want {
		t.Errorf("agent environment %q, want %q", env, want)
	}
	// The planner's output is typed: steps is an array.
	for n, err := range te.e.OldestFirst(te.ctx, te.head(id)) {
		if err != nil {
			t.Fatal(err)
		}
		if n.Kind == thread.KindStep && n.Step.Role == "planner" {
			o, _ := te.repo.Get(te.ctx, n.Step.Output)
			if steps, ok := o.Payload.(map[string]any)["steps"].([]any); !ok || len(steps) != 2 || n.Step.Agent != "sh" {
				t.Errorf("planner output %v, agent %s", o.Payload, n.Step.Agent)
			}
		}
	}
}

func TestStepFailures(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		body    string // the agent script; "" for a missing command
		timeout string
		want    error
		msg     string
		raws    int // raw outputs the failure keeps (raw + attempts)
		exit    int
	}{
		{"exits non-zero", "echo partial; echo oops >&2; exit 3\n", "", agent.ErrFailed, "exit status 3", 1, 3},
		{"times out", "sleep 30\n", "1s", agent.ErrFailed, "timed out", 1, 124},
		{"command not found", "", "", agent.ErrFailed, "not found", 1, 127},
		{"no frontmatter", "echo just text\n", "", extract.ErrNoFrontmatter, "frontmatter", 3, 0},
		{"fails the schema", "printf -- '---\\nstatus: done\\n---\\n'\n", "", extract.ErrInvalidOutput, "steps", 3, 0},
		{"unknown status", "printf -- '---\\nstatus: maybe\\nsteps: []\\n---\\n'\n", "", extract.ErrInvalidOutput, "maybe", 3, 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			te := newTEnv(t)
			wf := te.reviewLoop()
			cmd := filepath.Join(dir, "missing-agent")
			if tc.body != "" {
				cmd = script(t, dir, fmt.Sprintf("a%d.sh", i), tc.body)
			}
			text := fmt.Sprintf("agents:\n  a:\n    command: %s\n", cmd)
			if tc.timeout != "" {
				text += "    timeout: " + tc.timeout + "\n"
			}
			cfg := parseConfig(t, text+"defaultAgent: a\n")
			id, head, err := te.e.Start(te.ctx, wf, "task", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = te.e.Step(te.ctx, id, &thread.RunOptions{Config: cfg})
			var se *thread.StepError
			if !errors.As(err, &se) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Step = %v, want a StepError wrapping %v mentioning %q", err, tc.want, tc.msg)
			}
			if te.head(id) != head {
				t.Error("the head moved")
			}
			fh, err := te.refs.Get(te.ctx, "failures/"+id)
			if err != nil || fh != se.Failure {
				t.Fatalf("failures/%s = %v, %v; want %v", id, fh, err, se.Failure)
			}
			info, _ := te.e.Show(te.ctx, id)
			f := info.LastFailure
			if f == nil || f.Role != "planner" || f.Agent != "a" || f.Head != head || !strings.Contains(f.Error, tc.msg) {
				t.Fatalf("last failure = %+v", f)
			}
			dn, _ := te.repo.Get(te.ctx, f.Detail)
			d, err := thread.DecodeDetail(dn)
			if err != nil {
				t.Fatal(err)
			}
			if got := 1 + len(d.Attempts); got != tc.raws || d.ExitCode != tc.exit {
				t.Errorf("detail keeps %d raw outputs with exit code %d, want %d and %d", got, d.ExitCode, tc.raws, tc.exit)
			}
			if tc.name == "exits non-zero" {
				raw, _ := te.repo.Get(te.ctx, d.Raw)
				stderr, _ := te.repo.Get(te.ctx, d.Stderr)
				if raw.Payload != "partial\n" || stderr.Payload != "oops\n" {
					t.Errorf("raw %q, stderr %q", raw.Payload, stderr.Payload)
				}
			}
		})
	}
}

func TestSuspendAndResume(t *testing.T) { testSuspendAndResume(t, newTEnv(t)) }

func testSuspendAndResume(t *testing.T, te *tenv) {
	wf := te.reviewLoop()
	dir := t.TempDir()
	// The developer asks for a human the first time, then works.
	agentPath := script(t, dir, "agent.sh", `cat > "$OUT/prompt-$UWF_ROLE-$(ls "$OUT" | wc -l).txt"
case "$UWF_ROLE" in
planner) printf -- '---\nstatus: done\nsteps: [a]\n---\n' ;;
developer) if [ -e "$OUT/asked" ]; then printf -- '---\nstatus: done\nsummary: did a\n---\n'; else touch "$OUT/asked"; printf -- '---\nstatus: $SUSPEND\nreason: which database?\n---\n'; fi ;;
reviewer) printf -- '---\nstatus: approved\ncomments: ok\n---\n' ;;
esac
`)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	cfg := parseConfig(t, fmt.Sprintf("agents:\n  sh:\n    command: %s\n    env: {OUT: %s}\ndefaultAgent: sh\n", agentPath, out))
	opts := &thread.RunOptions{Config: cfg}
	id, rs, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	last := rs[len(rs)-1]
	if last.Kind != thread.EventSuspended || last.Role != "developer" {
		t.Fatalf("last result %+v, want suspended by the developer", last)
	}
	hn, _ := te.e.Node(te.ctx, te.head(id))
	if hn.Mark == nil || hn.Mark.Mark != thread.MarkSuspended || hn.Mark.Reason != "which database?" || hn.Mark.Detail.IsZero() {
		t.Fatalf("head = %+v", hn.Mark)
	}
	if _, err := te.e.Step(te.ctx, id, opts); !errors.Is(err, thread.ErrNotActive) {
		t.Errorf("Step(suspended) = %v, want ErrNotActive", err)
	}
	if _, err := te.e.Resume(te.ctx, id, "use SQLite"); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, id, 0, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"planner:done", "mark:suspended", "mark:resumed", "developer:done", "reviewer:approved", "mark:done"}
	if got := te.roles(id); !slices.Equal(got, want) {
		t.Errorf("roles = %q, want %q", got, want)
	}
	// The developer's second prompt holds the human's note.
	matches, _ := filepath.Glob(filepath.Join(out, "prompt-developer-*.txt"))
	slices.Sort(matches)
	if len(matches) != 2 {
		t.Fatalf("developer prompts: %v", matches)
	}
	p, _ := os.ReadFile(matches[1])
	if !strings.Contains(string(p), "use SQLite") {
		t.Errorf("the resumed prompt lacks the human's note:\n%s", p)
	}
}

func TestMaxSteps(t *testing.T) { testMaxSteps(t, newTEnv(t)) }

func testMaxSteps(t *testing.T, te *tenv) {
	wf := te.putWorkflow(reviewLoopWith(t, "maxSteps: 20", "maxSteps: 3"))
	id, rs, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"planner:done", "developer:done", "reviewer:rejected", "mark:suspended"}
	if got := te.roles(id); !slices.Equal(got, want) || rs[len(rs)-1].Kind != thread.EventLimit {
		t.Fatalf("roles = %q, want %q", got, want)
	}
	// Resumed, routing continues from the last step, for 3 more steps.
	if _, err := te.e.Resume(te.ctx, id, "go on"); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, id, 0, &thread.RunOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "mark:resumed", "developer:done", "reviewer:approved", "mark:done")
	if got := te.roles(id); !slices.Equal(got, want) {
		t.Errorf("roles = %q, want %q", got, want)
	}
	// A fork counts from its fork point.
	f, _, err := te.e.ForkAt(te.ctx, id, 3)
	if err != nil {
		t.Fatal(err)
	}
	rs, err = te.e.StepN(te.ctx, f, 0, &thread.RunOptions{Agent: "synth"})
	if err != nil || len(rs) == 0 || rs[0].Kind != thread.EventStep {
		t.Errorf("first step of a fork at depth 3 = %+v, %v", rs, err)
	}
}

const loopWorkflow = `name: loop
maxSteps: 20
roles:
  worker:
    frontmatter:
      type: object
      properties: {status: {enum: [again, finished]}}
      required: [status]
graph:
  $START: {new: {role: worker, prompt: "Start."}}
  worker:
    again: {role: worker, prompt: "Again."}
    finished: {role: $END, prompt: "Finished."}
`

// loopAgent answers "again" forever.
func loopAgent(t *testing.T) *config.Config {
	t.Helper()
	p := script(t, t.TempDir(), "again.sh", "cat >/dev/null; printf -- '---\\nstatus: again\\n---\\n'\n")
	return parseConfig(t, "agents:\n  again:\n    command: "+p+"\ndefaultAgent: again\n")
}

func countSteps(roles []string) int {
	n := 0
	for _, r := range roles {
		if !strings.HasPrefix(r, "mark:") {
			n++
		}
	}
	return n
}

// TestMaxStepsLoop: a loop suspends at the limit; resume then run goes on
// for another maxSteps; a fork made at depth 15 still gets 20 steps.
func TestMaxStepsLoop(t *testing.T) { testMaxStepsLoop(t, newTEnv(t)) }

func testMaxStepsLoop(t *testing.T, te *tenv) {
	wf := te.putWorkflow(loopWorkflow)
	opts := &thread.RunOptions{Config: loopAgent(t)}
	id, rs, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	roles := te.roles(id)
	if countSteps(roles) != 20 || roles[len(roles)-1] != "mark:suspended" || rs[len(rs)-1].Kind != thread.EventLimit {
		t.Fatalf("first run: %d steps, last %q", countSteps(roles), roles[len(roles)-1])
	}
	if _, err := te.e.Resume(te.ctx, id, ""); err != nil { // a suspended thread resumes without a note
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, id, 0, opts); err != nil {
		t.Fatal(err)
	}
	roles = te.roles(id)
	if countSteps(roles) != 40 || roles[len(roles)-1] != "mark:suspended" {
		t.Errorf("after resume: %d steps, last %q; want 40 and suspended", countSteps(roles), roles[len(roles)-1])
	}
	f, _, err := te.e.ForkAt(te.ctx, id, 15)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, f, 0, opts); err != nil {
		t.Fatal(err)
	}
	if got := countSteps(te.roles(f)); got != 15+20 {
		t.Errorf("fork at depth 15: %d steps in all, want 35 (15 shared + 20 of its own)", got)
	}
}

// TestRemoveFailedThread: rm of a thread that has failed, then GC past the
// grace period and the log retention: its own nodes and its failure nodes
// are gone, nodes shared with other threads stay.
func TestRemoveFailedThread(t *testing.T) {
	te := newTEnv(t)
	wf := te.reviewLoop()
	keep, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	doomed, _, err := te.e.ForkAt(te.ctx, keep, 2)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := te.e.StepN(te.ctx, doomed, 1, &thread.RunOptions{Agent: "synth", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	own := rs[0].Head
	bad := parseConfig(t, "agents:\n  bad:\n    command: "+script(t, t.TempDir(), "bad.sh", "echo no frontmatter here\n")+"\ndefaultAgent: bad\n")
	_, err = te.e.Step(te.ctx, doomed, &thread.RunOptions{Config: bad, Agent: "bad"})
	var se *thread.StepError
	if !errors.As(err, &se) {
		t.Fatalf("Step with a bad agent = %v", err)
	}
	fn, _ := te.repo.Get(te.ctx, se.Failure)
	f, _ := thread.DecodeFailure(fn)
	// The failure's own nodes: the failure, its detail and the detail's
	// content nodes. Everything the kept thread reaches is shared.
	reach := func(root cas.Hash) []cas.Hash {
		var out []cas.Hash
		err := te.repo.Walk(te.ctx, []cas.Hash{root}, func(h cas.Hash, n cas.Node, _ []cas.Hash) error {
			if n.Type != cas.MetaSchema && !n.Type.IsZero() {
				out = append(out, h)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	failureNodes := append(reach(f.Detail), se.Failure)
	shared := reach(te.head(keep))
	if err := te.e.Remove(te.ctx, doomed); err != nil {
		t.Fatal(err)
	}
	if _, err := te.refs.Get(te.ctx, "failures/"+doomed); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("failures/%s after rm: %v", doomed, err)
	}
	te.clock.Advance(cas.DefaultLogRetention + 2*cas.DefaultGrace)
	if _, err := te.repo.GC(te.ctx, nil); err != nil {
		t.Fatal(err)
	}
	has := func(h cas.Hash) bool { ok, _ := te.st.Has(te.ctx, h); return ok }
	if has(own) {
		t.Error("the removed thread's own step survived")
	}
	for _, h := range failureNodes {
		if has(h) && !slices.Contains(shared, h) {
			t.Errorf("failure node %s survived", h)
		}
	}
	for _, h := range shared {
		if !has(h) {
			t.Errorf("shared node %s was deleted", h)
		}
	}
	if has(se.Failure) {
		t.Error("the failure node itself survived")
	}
}

// TestEndAtMaxSteps: reaching $END right at maxSteps is done, not
// suspended: the done mark is not a step.
func TestEndAtMaxSteps(t *testing.T) {
	te := newTEnv(t)
	wf := te.putWorkflow(`name: once
maxSteps: 1
roles:
  worker:
    frontmatter:
      type: object
      properties: {status: {const: finished}}
      required: [status]
graph:
  $START: {new: {role: worker, prompt: "Start."}}
  worker:
    finished: {role: $END, prompt: "Finished."}
`)
	p := script(t, t.TempDir(), "fin.sh", "cat >/dev/null; printf -- '---\\nstatus: finished\\n---\\n'\n")
	cfg := parseConfig(t, "agents:\n  fin:\n    command: "+p+"\ndefaultAgent: fin\n")
	id, rs, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := te.roles(id), []string{"worker:finished", "mark:done"}; !slices.Equal(got, want) || rs[len(rs)-1].Kind != thread.EventDone {
		t.Errorf("chain %q, want %q", got, want)
	}
}

// TestRouteMissingFieldHint: an edge's prompt naming a field the role's
// schema does not require fails at run time when the output leaves it
// out; the error says where the fix is.
func TestRouteMissingFieldHint(t *testing.T) {
	te := newTEnv(t)
	wf := te.putWorkflow(`name: triage
roles:
  triager:
    frontmatter:
      type: object
      properties:
        status: { const: bug }
        severity: { type: string }
      required: [status]
graph:
  $START: { new: { role: triager } }
  triager: { bug: { role: $END, prompt: "severity {{ severity }}" } }
`)
	_, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if !errors.Is(err, moderator.ErrMissingField) || !strings.Contains(err.Error(), `template field "severity" missing from output: the role's schema does not require it (require it, or leave it out of the edge's prompt)`) {
		t.Errorf("Run = %v, want the missing field and the hint", err)
	}
}
