package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/thread"
)

// stepsOf returns the chain of a thread as "thread steps" lists it: one
// [depth, hash, kind, rest...] per line.
func (e *env) stepsOf(id string) [][]string {
	e.t.Helper()
	var out [][]string
	for line := range strings.Lines(e.ok("", "thread", "steps", id)) {
		out = append(out, strings.Fields(line))
	}
	return out
}

// status returns a thread's status and head, as "thread show --json" says.
func (e *env) status(id string) (status, head string) {
	e.t.Helper()
	var info struct {
		Status string `json:"status"`
		Head   string `json:"head"`
	}
	e.okJSON(&info, "thread", "show", id)
	return info.Status, info.Head
}

// TestThreadGolden runs every thread command (and step show) with the
// synth agent, a fixed clock and thread IDs made in order, and compares
// everything printed with testdata/golden/thread.txt.
func TestThreadGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	e.write("review-loop.yaml", reviewLoop)

	// start: with a file (registered first), a name, a hash.
	t1 := strings.TrimSpace(tr.run("", "thread", "start", "review-loop.yaml", "-p", "Add a --verbose flag", "--cwd", "/").stdout)
	wf := strings.Fields(e.ok("", "workflow", "list"))[1]
	tr.run("", "thread", "start", "--json", "review-loop", "-p", "Same task, by name", "--cwd", "/")
	tr.run("Same task, by hash, from stdin\n", "thread", "start", wf, "-p", "-", "--cwd", "/")

	// run to the end: the reviewer rejects once, then approves.
	e.clock.Advance(time.Second)
	r := tr.run("", "thread", "run", "review-loop", "-p", "Add a --json flag", "--agent", "synth", "--cwd", "/")
	t4 := strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread ")
	tr.run("", "thread", "run", "--json", "review-loop", "-p", "Add a --json flag", "--agent", "synth", "--cwd", "/", "--seed", "7")

	tr.run("", "thread", "show", t4)
	tr.run("", "thread", "show", "--json", t4)
	tr.run("", "thread", "list")
	tr.run("", "thread", "list", "--status", "done")
	tr.run("", "thread", "list", "--limit", "2")
	tr.run("", "thread", "list", "--limit", "1", "--offset", "1", "--status", "active")
	tr.run("", "thread", "list", "--json", "--status", "active", "--offset", "2")
	tr.run("", "thread", "steps", t4)
	tr.run("", "thread", "steps", "--json", t4)
	steps := e.stepsOf(t4)
	if got := len(steps); got != 7 || steps[3][3] != "reviewer" || steps[3][5] != "rejected" || steps[5][5] != "approved" || steps[6][3] != "done" {
		t.Errorf("thread steps: %q\nwant start, planner, developer, reviewer rejected, developer, reviewer approved, done", steps)
	}

	// read: a quota that keeps the newest entries, then paging back.
	r = tr.run("", "thread", "read", t4, "--quota", "700")
	_, hint, _ := strings.Cut(r.stdout, "--before ")
	before := strings.TrimSuffix(strings.SplitN(hint, "\n", 2)[0], ")")
	r = tr.run("", "thread", "read", t4, "--quota", "700", "--before", before)
	tr.run("", "thread", "read", "--json", t4, "--quota", "300")

	// step show: the reviewer's rejection.
	tr.run("", "step", "show", steps[3][1])
	tr.run("", "step", "show", "--json", steps[3][1])

	// fork by hash and at a depth, then step the forks.
	f1 := strings.TrimSpace(tr.run("", "thread", "fork", steps[3][1]).stdout)
	var f3 struct{ Thread string }
	checkJSON(t, tr.run("", "thread", "fork", "--json", t4, "--at", "2").stdout, &f3)
	tr.run("", "thread", "show", "--json", f3.Thread)
	f2 := strings.TrimSpace(tr.run("", "thread", "fork", t4, "--at", "0").stdout)
	tr.run("", "thread", "show", f1)
	tr.run("", "thread", "step", f1, "--agent", "synth")
	tr.run("", "thread", "step", "--json", f1, "--agent", "synth")
	tr.run("", "thread", "step", f2, "-n", "0", "--agent", "synth", "--seed", "3")
	tr.run("", "thread", "steps", f2)

	// kill, resume with a note, step on.
	tr.run("", "thread", "kill", t1)
	tr.run("", "thread", "step", t1, "--agent", "synth")
	tr.run("", "thread", "resume", t1, "-p", "Carry on, but keep it small")
	tr.run("", "thread", "show", t1)
	tr.run("", "thread", "step", t1, "-n", "2", "--agent", "synth")
	tr.run("", "thread", "kill", "--json", t1, "--reason", "changed my mind")
	tr.run("", "thread", "resume", "--json", t1)
	tr.run("", "thread", "log", t1)
	tr.run("", "thread", "log", "--json", t1)
	tr.run("", "thread", "read", t1)

	// replay: unchanged, routed elsewhere, a schema the outputs no longer fit.
	tr.run("", "thread", "replay", t4)
	tr.run("", "thread", "replay", "--json", t4)
	e.write("replan.yaml", strings.NewReplacer(
		"name: review-loop", "name: review-replan",
		`rejected: { role: developer, prompt: "Fix what the review found: {{ comments }}" }`,
		`rejected: { role: planner, prompt: "Plan again: {{ comments }}" }`,
	).Replace(reviewLoop))
	r = tr.run("", "thread", "replay", t4, "--workflow", "replan.yaml")
	if r.code != 1 || r.stderr != "" {
		t.Errorf("replay with a changed graph: %v\nwant exit 1 and nothing on stderr", r)
	}
	tr.run("", "thread", "replay", "--json", t4, "--workflow", "replan.yaml")
	// A replay against a file is a what-if: it registers nothing.
	if r := e.run("", "workflow", "show", "review-replan"); r.code != 3 {
		t.Errorf("replay --workflow replan.yaml registered review-replan: %v", r)
	}
	e.write("strict.yaml", strings.NewReplacer(
		"name: review-loop", "name: review-strict",
		"comments: { type: string }", "comments: { type: string, maxLength: 10 }",
	).Replace(reviewLoop))
	tr.run("", "thread", "replay", t4, "--workflow", "strict.yaml")

	// rm: the thread goes, its log stays.
	tr.run("", "thread", "rm", f1)
	tr.run("", "thread", "rm", "--json", f2)
	tr.run("", "thread", "show", f1)
	tr.run("", "thread", "log", f1)
	tr.run("", "thread", "list")
	tr.run("", "cas", "ref", "list", "threads/")
	tr.run("", "cas", "fsck")
	golden(t, "thread.txt", e.masked(tr.b.String()))
}

// TestThreadJSON checks that every thread command's --json output is valid
// JSON with the documented fields.
func TestThreadJSON(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	var start struct {
		Thread, Head, Workflow string
	}
	e.okJSON(&start, "thread", "start", "review-loop.yaml", "-p", "task")
	if len(start.Thread) != 26 || len(start.Head) != 13 || len(start.Workflow) != 13 {
		t.Errorf("start --json = %+v", start)
	}
	id := start.Thread
	// Each event of step --json is one JSON object per line.
	out := e.okJSON(nil, "thread", "step", id, "-n", "0", "--agent", "synth")
	var types []string
	for line := range strings.Lines(out) {
		var ev struct {
			Type, Thread string
			Depth        int
		}
		checkJSON(t, line, &ev)
		if ev.Thread != id {
			t.Errorf("step --json event %s: thread %q, want %s", line, ev.Thread, id)
		}
		types = append(types, ev.Type)
	}
	want := []string{"running", "step", "running", "step", "running", "step", "running", "step", "running", "step", "done"}
	if !slices.Equal(types, want) {
		t.Errorf("step --json events = %q, want %q", types, want)
	}
	var show struct {
		ID, Status, Head, Workflow, WorkflowName, Prompt string
		Depth                                            int
		Created                                          int64
		Origin                                           struct {
			Node   string
			Depth  int
			Forked bool
		}
	}
	e.okJSON(&show, "thread", "show", id)
	if show.ID != id || show.Status != "done" || show.Depth != 6 || show.Workflow != start.Workflow ||
		show.WorkflowName != "review-loop" || show.Prompt != "task" || show.Created != epoch.UnixMilli() ||
		show.Origin.Node != start.Head || show.Origin.Forked {
		t.Errorf("show --json = %+v", show)
	}
	var list []map[string]any
	e.okJSON(&list, "thread", "list")
	if len(list) != 1 || list[0]["id"] != id || list[0]["prompt"] != nil || list[0]["origin"] != nil {
		t.Errorf("list --json = %v (prompt and origin are show's only)", list)
	}
	var steps []struct {
		Depth                                 int
		Hash, Kind, Role, Agent, Status, Mark string
		Time                                  int64
	}
	e.okJSON(&steps, "thread", "steps", id)
	if len(steps) != 7 || steps[0].Kind != "start" || steps[1].Role != "planner" || steps[1].Agent != "synth" ||
		steps[3].Status != "rejected" || steps[6].Mark != "done" || steps[6].Time != epoch.UnixMilli() {
		t.Errorf("steps --json = %+v", steps)
	}
	var read struct {
		Text   string
		Shown  int
		More   bool
		Oldest *string
	}
	e.okJSON(&read, "thread", "read", id)
	if !strings.HasPrefix(read.Text, "# Thread "+id) || read.Shown != 7 || read.More || read.Oldest == nil || *read.Oldest != start.Head {
		t.Errorf("read --json = %+v", read)
	}
	var fork struct{ Thread, Head string }
	e.okJSON(&fork, "thread", "fork", id, "--at", "3")
	if fork.Head != steps[3].Hash || len(fork.Thread) != 26 {
		t.Errorf("fork --json = %+v", fork)
	}
	var mark struct{ Hash string }
	e.okJSON(&mark, "thread", "kill", fork.Thread)
	if len(mark.Hash) != 13 {
		t.Errorf("kill --json = %+v", mark)
	}
	var log []struct {
		Old, New, Message string
		Time              int64
	}
	e.okJSON(&log, "thread", "log", fork.Thread)
	if len(log) != 2 || log[0].New != fork.Head || log[1].New != mark.Hash || log[1].Message != "mark killed" {
		t.Errorf("log --json = %+v", log)
	}
	var replay struct {
		Thread, Workflow string
		Steps            int
		Divergence       *struct{ Depth int }
	}
	e.okJSON(&replay, "thread", "replay", id)
	if replay.Thread != id || replay.Workflow != start.Workflow || replay.Steps != 5 || replay.Divergence != nil {
		t.Errorf("replay --json = %+v", replay)
	}
	var ss struct {
		Hash, Role, Agent, Raw, Prompt, EdgePrompt string
		Prev                                       *string
		Skip, Attempts                             []string
		Value                                      map[string]any
		ExitCode                                   int
	}
	e.okJSON(&ss, "step", "show", steps[1].Hash)
	if ss.Hash != steps[1].Hash || ss.Role != "planner" || ss.Prev != nil || ss.Skip == nil || ss.Attempts == nil ||
		ss.Value["status"] != "done" || !strings.HasPrefix(ss.Raw, "---\n") || ss.EdgePrompt != "Plan this task." {
		t.Errorf("step show --json = %+v", ss)
	}
	var rm struct {
		Thread  string
		Removed bool
	}
	e.okJSON(&rm, "thread", "rm", fork.Thread)
	if rm.Thread != fork.Thread || !rm.Removed {
		t.Errorf("rm --json = %+v", rm)
	}
	// run --json: a start event first, then the events.
	out = e.okJSON(nil, "thread", "run", "review-loop", "-p", "again", "--agent", "synth")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], `{"type":"start","thread":"`) || !strings.HasPrefix(lines[len(lines)-1], `{"type":"done",`) {
		t.Errorf("run --json =\n%s", out)
	}
}

// TestThreadStartCwd checks that a thread's agents run in the folder the
// thread was started in, unless --cwd says otherwise.
func TestThreadStartCwd(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, e.dir},
		{[]string{"--cwd", "sub/.."}, e.dir},
		{[]string{"--cwd", "/"}, "/"},
	} {
		var start struct{ Head string }
		e.okJSON(&start, append([]string{"thread", "start", "review-loop.yaml", "-p", "x"}, tc.args...)...)
		node := e.ok("", "cas", "get", start.Head)
		if !strings.Contains(node, fmt.Sprintf(`"cwd":%q`, tc.want)) {
			t.Errorf("thread start %q: start node %s, want cwd %s", tc.args, node, tc.want)
		}
	}
	if r := e.run("", "thread", "start", "review-loop.yaml", "-p", "x", "--cwd", filepath.Join(e.dir, "nope")); r.code != 1 || !strings.Contains(r.stderr, "not a folder") {
		t.Errorf("thread start --cwd nope: %v", r)
	}
}

// TestThreadNotFoundAndState checks exit statuses of thread commands on
// threads that do not exist or are in the wrong state.
func TestThreadNotFoundAndState(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "x"))
	e.ok("", "thread", "step", id, "-n", "0", "--agent", "synth")
	const absent = "01JGKZZZZZZZZZZZZZZZZZZZZZ"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"thread", "show", absent}, 3, "thread " + absent},
		{[]string{"thread", "step", absent, "--agent", "synth"}, 3, "thread " + absent},
		{[]string{"thread", "steps", absent}, 3, "thread " + absent},
		{[]string{"thread", "read", absent}, 3, "thread " + absent},
		{[]string{"thread", "fork", absent, "--at", "0"}, 3, "thread " + absent},
		{[]string{"thread", "kill", absent}, 3, "thread " + absent},
		{[]string{"thread", "resume", absent, "-p", "x"}, 3, "thread " + absent},
		{[]string{"thread", "rm", absent}, 3, "thread " + absent},
		{[]string{"thread", "replay", absent}, 3, "thread " + absent},
		{[]string{"thread", "log", absent}, 3, "threads/" + absent},
		{[]string{"thread", "fork", "0000000000001"}, 3, "0000000000001"},
		{[]string{"step", "show", "0000000000001"}, 3, "0000000000001"},
		{[]string{"thread", "fork", id, "--at", "99"}, 3, "99"},
		{[]string{"thread", "step", id, "--agent", "synth"}, 1, "it is done"},
		{[]string{"thread", "kill", id}, 1, "it is done"},
		{[]string{"thread", "resume", id, "-p", "more"}, 1, "fork it to go on"},
		{[]string{"thread", "step", id, "--agent", "replay:" + absent}, 3, "agent replay:" + absent}, // checked first
		{[]string{"thread", "step", id, "--agent", "nope"}, 3, `agent "nope" (from --agent): unknown agent`},
		{[]string{"thread", "replay", id, "--workflow", "nope"}, 3, `workflow "nope"`},
	} {
		r := e.run("", tc.args...)
		if r.code != tc.code || !strings.HasPrefix(r.stderr, "uwf: ") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("uwf %q: %v\nwant exit %d and a message containing %q", tc.args, r, tc.code, tc.want)
		}
	}
	// step show on a node that is not a step; read --before a node of
	// another thread.
	steps := e.stepsOf(id)
	if r := e.run("", "step", "show", steps[0][1]); r.code != 1 || !strings.Contains(r.stderr, "a start node, not a step") {
		t.Errorf("step show <start>: %v", r)
	}
	other := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "other"))
	if r := e.run("", "thread", "read", other, "--before", steps[2][1]); r.code != 1 || !strings.Contains(r.stderr, "not a node of this thread") {
		t.Errorf("read --before <a node of another thread>: %v", r)
	}
	// A replay agent replays another thread's raw outputs.
	fork := strings.TrimSpace(e.ok("", "thread", "fork", id, "--at", "0"))
	e.ok("", "thread", "step", fork, "-n", "0", "--agent", "replay:"+id)
	got, want := e.stepsOf(fork), e.stepsOf(id)
	strip := func(rows [][]string) string { // without the hashes and agents, which differ
		var b strings.Builder
		for _, f := range rows {
			f = slices.Clone(f)
			f[1] = ""
			if f[2] == "step" {
				f[4] = ""
			}
			fmt.Fprintln(&b, f)
		}
		return b.String()
	}
	if strip(got) != strip(want) {
		t.Fatalf("a fork stepped with replay:%s has chain\n%q\nwant the same roles and statuses as\n%q", id, got, want)
	}
	if st, _ := e.status(fork); st != "done" {
		t.Errorf("replayed fork: status %s", st)
	}
}

// TestMaxSteps runs a workflow whose maxSteps stops the review loop: the
// thread is suspended, uwf says so and exits 1, and resume lets it go on
// from the last step.
func TestMaxSteps(t *testing.T) {
	e := newEnv(t)
	e.write("short.yaml", strings.NewReplacer("name: review-loop", "name: short", "maxSteps: 20", "maxSteps: 2").Replace(reviewLoop))
	r := e.run("", "thread", "run", "short.yaml", "-p", "x", "--agent", "synth")
	id := strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread ")
	if r.code != 1 || !strings.HasSuffix(r.stdout, "\n2 developer (synth) done -> "+e.stepsOf(id)[2][1]+" 0s\n3 limit: maxSteps (2) reached; suspended\n") ||
		r.stderr != "uwf: thread "+id+" stopped: maxSteps (2) reached; it is suspended (uwf thread resume "+id+" to go on)\n" {
		t.Errorf("thread run with maxSteps 2: %v", r)
	}
	if st, _ := e.status(id); st != "suspended" {
		t.Errorf("status %s, want suspended", st)
	}
	if r := e.run("", "thread", "step", id, "--agent", "synth"); r.code != 1 || !strings.Contains(r.stderr, "resume it first") {
		t.Errorf("thread step on a suspended thread: %v", r)
	}
	e.okHash("", "thread", "resume", id)
	r = e.run("", "thread", "step", id, "-n", "0", "--agent", "synth")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "5 reviewer (synth) rejected -> ") || !strings.HasSuffix(r.stdout, "7 limit: maxSteps (2) reached; suspended\n") ||
		!strings.Contains(r.stderr, "stopped: maxSteps (2) reached; it is suspended") {
		t.Errorf("thread step -n 0 after resume: %v", r)
	}
}

// forever is a workflow without maxSteps; its agent "again" never ends it.
const forever = `name: forever
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

// TestDefaultStepLimit: a workflow without maxSteps stops at 100 steps in
// thread run and in thread step -n 0 alike: the thread suspended with the
// reason, a limit line (a limit event with --json), a message, exit 1.
func TestDefaultStepLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("100 steps")
	}
	e := newEnv(t)
	e.write("forever.yaml", forever)
	again := e.script("again.sh", "cat >/dev/null; printf -- '---\\nstatus: again\\n---\\n'\n")
	e.writeConfig("agents:\n  again: {command: " + again + "}\ndefaultAgent: again\n")
	const reason = "step limit reached: 100 steps, the default for a workflow without maxSteps"
	r := e.run("", "thread", "run", "forever.yaml", "-p", "x", "--json")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var first, last map[string]any
	checkJSON(t, lines[0]+"\n", &first)
	checkJSON(t, lines[len(lines)-1]+"\n", &last)
	id, _ := first["thread"].(string)
	if r.code != 1 || last["type"] != "limit" || last["limit"] != float64(100) || last["reason"] != reason || last["depth"] != float64(101) ||
		r.stderr != "uwf: thread "+id+" stopped: "+reason+"; it is suspended (uwf thread resume "+id+" to go on)\n" {
		t.Fatalf("thread run of a workflow without maxSteps: exit %d, last event %v, stderr %q", r.code, last, r.stderr)
	}
	var show struct{ Status string }
	e.okJSON(&show, "thread", "show", id)
	if show.Status != "suspended" {
		t.Errorf("status %s, want suspended", show.Status)
	}
	if out := e.ok("", "thread", "show", id); !strings.Contains(out, "reason:   "+reason+"\n") {
		t.Errorf("thread show lacks the reason:\n%s", out)
	}
	// thread step -n 0 of a fresh thread is bounded the same way.
	id = strings.TrimSpace(e.ok("", "thread", "start", "forever", "-p", "y"))
	r = e.run("", "thread", "step", id, "-n", "0")
	if r.code != 1 || !strings.HasSuffix(r.stdout, "\n101 limit: "+reason+"; suspended\n") || !strings.Contains(r.stderr, "it is suspended") {
		t.Errorf("thread step -n 0: exit %d, stdout ends %q, stderr %q", r.code, r.stdout[max(0, len(r.stdout)-200):], r.stderr)
	}
	if n := len(e.stepsOf(id)); n != 102 { // start, 100 steps, the mark
		t.Errorf("thread step -n 0: %d chain nodes, want 102", n)
	}
}

// TestUnknownAgentRefused: thread run with an agent that cannot run
// leaves no thread behind; the exit status says why.
func TestUnknownAgentRefused(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "workflow", "put", "review-loop.yaml")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--agent", "nope"}, 3, `uwf: agent "nope" (from --agent): unknown agent: it is neither configured nor built in (configured: none; built-in: human, llm, replay:<thread>, synth)`},
		{[]string{"--agent", "replay:01JGKZZZZZZZZZZZZZZZZZZZZZ"}, 3, "uwf: agent replay:01JGKZZZZZZZZZZZZZZZZZZZZZ: thread 01JGKZZZZZZZZZZZZZZZZZZZZZ"},
		{[]string{"--agent", "llm"}, 1, "no model configured"},
		{nil, 1, "no agent configured for role"},
	} {
		r := e.run("", append([]string{"thread", "run", "review-loop", "-p", "x"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("thread run %q: %v\nwant exit %d and %q", tc.args, r, tc.code, tc.want)
		}
		if out := e.ok("", "thread", "list"); out != "" {
			t.Fatalf("thread run %q left threads:\n%s", tc.args, out)
		}
	}
}

// TestHumanAgent answers a role as the human agent: from stdin (the prompt
// goes to stderr) or from a file given with --input.
func TestHumanAgent(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "Add a flag"))
	r := e.run("---\nstatus: done\nsteps: [add it]\n---\nMy plan.\n.\n", "thread", "step", id, "--agent", "human")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "1 planner (human) done -> ") ||
		!strings.Contains(r.stderr, "# Role: planner (workflow review-loop)") || !strings.Contains(r.stderr, "\nAdd a flag\n") {
		t.Errorf("thread step --agent human: %v", r)
	}
	e.write("answer.md", "---\nstatus: done\nsummary: added it\n---\n")
	if out := e.ok("", "thread", "step", id, "--agent", "human", "--input", "answer.md"); !strings.HasPrefix(out, "2 developer (human) done -> ") {
		t.Errorf("thread step --agent human --input answer.md: %q", out)
	}
	var st stepJSON
	e.okJSON(&st, "step", "show", e.stepsOf(id)[1][1])
	if st.Raw != "---\nstatus: done\nsteps: [add it]\n---\nMy plan.\n" || st.Agent != "human" {
		t.Errorf("the human's step: %+v", st)
	}
}

// TestLimitsGolden records the step limit and a refused agent in
// testdata/golden/limits.txt (docs/CLI.md quotes it).
func TestLimitsGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	e.write("short.yaml", strings.NewReplacer("name: review-loop", "name: short", "maxSteps: 20", "maxSteps: 2").Replace(reviewLoop))
	r := tr.run("", "thread", "run", "short.yaml", "-p", "Add a --json flag", "--agent", "synth", "--cwd", "/")
	id := strings.TrimPrefix(strings.SplitN(r.stdout, "\n", 2)[0], "thread ")
	tr.run("", "thread", "show", id)
	tr.run("", "thread", "resume", id)
	tr.run("", "thread", "step", id, "-n", "0", "--agent", "synth")
	tr.run("", "thread", "run", "--json", "short", "-p", "Add a --json flag", "--agent", "synth", "--cwd", "/")
	tr.run("", "thread", "run", "short", "-p", "Add a --json flag", "--agent", "nope", "--cwd", "/")
	tr.run("", "thread", "list")
	golden(t, "limits.txt", tr.b.String())
}

// TestThreadStartKey: thread start --key starts one thread per key, prints
// the existing one when the key is taken (saying so on stderr), and rm
// frees the key; a store never given a key stays at format version 1.
func TestThreadStartKey(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.ok("", "thread", "start", "review-loop.yaml", "-p", "no key")
	formatFile := filepath.Join(e.home, "store", "FORMAT")
	if b, err := os.ReadFile(formatFile); err != nil || !strings.HasPrefix(string(b), "uwf store 1\n") {
		t.Fatalf("FORMAT before any key = %q, %v; want version 1", b, err)
	}
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "nightly", "--key", "nightly/2026-11-25"))
	if b, err := os.ReadFile(formatFile); err != nil || !strings.HasPrefix(string(b), "uwf store 2\n") {
		t.Errorf("FORMAT after a key = %q, %v; want version 2", b, err)
	}
	r := e.run("", "thread", "start", "review-loop", "-p", "nightly again", "--key", "nightly/2026-11-25")
	if r.code != 0 || strings.TrimSpace(r.stdout) != id || !strings.Contains(r.stderr, "uwf: key nightly/2026-11-25 is taken: thread "+id+" was started under it at ") {
		t.Errorf("thread start with a taken key: %v\nwant %s on stdout and a note on stderr", r, id)
	}
	var js struct {
		Thread, Head, Workflow, Key string
		Existing                    bool
	}
	e.okJSON(&js, "thread", "start", "review-loop", "-p", "x", "--key", "nightly/2026-11-25")
	if js.Thread != id || !js.Existing || js.Key != "nightly/2026-11-25" || js.Workflow == "" {
		t.Errorf("thread start --json with a taken key = %+v", js)
	}
	var list []struct{ ID string }
	e.okJSON(&list, "thread", "list")
	if len(list) != 2 {
		t.Errorf("thread list: %d threads, want 2", len(list))
	}
	if refs := e.ok("", "cas", "ref", "list", "keys/"); !strings.HasSuffix(refs, " keys/nightly/2026-11-25\n") {
		t.Errorf("cas ref list keys/ = %q", refs)
	}
	e.ok("", "thread", "rm", id)
	if refs := e.ok("", "cas", "ref", "list", "keys/"); refs != "" {
		t.Errorf("after rm, cas ref list keys/ = %q, want nothing", refs)
	}
	if id2 := strings.TrimSpace(e.ok("", "thread", "start", "review-loop", "-p", "n", "--key", "nightly/2026-11-25")); id2 == id {
		t.Errorf("after rm the key still gives %s", id)
	}
	for _, bad := range []string{"", "a b", "/x", "x/", "-x"} {
		if r := e.run("", "thread", "start", "review-loop", "-p", "n", "--key", bad); r.code != 2 || !strings.Contains(r.stderr, "invalid --key") {
			t.Errorf("--key %q: %v, want a usage error", bad, r)
		}
	}
	if out := e.ok("", "cas", "fsck"); !strings.HasSuffix(out, ": 0 problems\n") {
		t.Errorf("fsck: %q", out)
	}
}

// TestThreadListFilters: --workflow (a name or a hash, any case) and
// --since (a duration, a date, a time) keep the threads they name; bad
// values are usage errors.
func TestThreadListFilters(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	e.write("other.yaml", strings.Replace(reviewLoop, "name: review-loop", "name: other", 1))
	a := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "a"))
	b := strings.TrimSpace(e.ok("", "thread", "start", "other.yaml", "-p", "b"))
	var sb struct{ Workflow string }
	e.okJSON(&sb, "thread", "show", b)
	ids := func(args ...string) []string {
		var list []struct{ ID string }
		e.okJSON(&list, append([]string{"thread", "list"}, args...)...)
		var out []string
		for _, l := range list {
			out = append(out, l.ID)
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{b, a}},
		{[]string{"--workflow", "review-loop"}, []string{a}},
		{[]string{"--workflow", strings.ToLower(sb.Workflow)}, []string{b}},
		{[]string{"--workflow", "nothing-by-that-name"}, nil},
		{[]string{"--since", "1h"}, []string{b, a}},
		{[]string{"--since", "0s"}, []string{b, a}}, // the clock is fixed: both were made now
		{[]string{"--since", "2025-01-02T03:04:06Z"}, nil},
		{[]string{"--since", "2025-01-02"}, []string{b, a}}, // the test clock's day
		{[]string{"--since", "2025-01-03"}, nil},
		{[]string{"--since", "2025-01-02T03:04:05Z", "--workflow", "other"}, []string{b}},
	} {
		if got := ids(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("thread list %q = %v, want %v", tc.args, got, tc.want)
		}
	}
	for _, args := range [][]string{
		{"--since", "yesterday"}, {"--since", "-1h"}, {"--since", ""}, {"--workflow", "a b"},
	} {
		if r := e.run("", append([]string{"thread", "list"}, args...)...); r.code != 2 || !strings.Contains(r.stderr, "invalid "+args[0]) {
			t.Errorf("thread list %q: %v, want a usage error naming %s", args, r, args[0])
		}
	}
}

// TestThreadTable checks thread list's table for a terminal: a header,
// aligned columns, ages, prompts cut to one line, and a note when more
// threads were left out.
func TestThreadTable(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	infos := []*thread.Info{
		{ID: "01JGJFGR4E0000000000000002", Status: "active", Depth: 3, WorkflowName: "review-loop", Created: now.Add(-90 * time.Second), Prompt: "\n  Add a --json flag\nto the report\n"},
		{ID: "01JGJFGR4E0000000000000001", Status: "done", Depth: 12, WorkflowName: "develop", Created: now.Add(-40 * 24 * time.Hour), Prompt: strings.Repeat("long prompt ", 10)},
	}
	var b strings.Builder
	if err := printThreadTable(&b, infos, true, now); err != nil {
		t.Fatal(err)
	}
	want := `THREAD                      STATUS  RUN   DEPTH  WORKFLOW     AGE         PROMPT
01JGJFGR4E0000000000000002  active  none  3      review-loop  1m ago      Add a --json flag
01JGJFGR4E0000000000000001  done    none  12     develop      2026-10-16  long prompt long prompt long prompt long prompt…
(the newest 20; --limit 0 lists all, --json or a pipe gives one line per thread)
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	printThreadTable(&b, nil, false, now)
	if !strings.HasSuffix(b.String(), "(no threads)\n") {
		t.Errorf("empty table: %q", b.String())
	}
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{0, "just now"}, {59 * time.Second, "just now"}, {time.Minute, "1m ago"}, {59 * time.Minute, "59m ago"},
		{time.Hour, "1h ago"}, {47 * time.Hour, "47h ago"}, {48 * time.Hour, "2d ago"}, {31 * 24 * time.Hour, "2026-10-25"},
	} {
		if got := age(now, now.Add(-tc.ago)); got != tc.want {
			t.Errorf("age(%v) = %q, want %q", tc.ago, got, tc.want)
		}
	}
}

// TestParseSince is thread list --since's reading of durations, dates and
// times.
func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"90m", now.Add(-90 * time.Minute), true},
		{"24h", now.Add(-24 * time.Hour), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"0d", now, true},
		{"2026-11-20", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), true},
		{"2026-11-20T06:30:00+01:00", time.Date(2026, 11, 20, 5, 30, 0, 0, time.UTC), true},
		{"-1h", time.Time{}, false},
		{"-1d", time.Time{}, false},
		{"100000d", now.Add(-100_000 * 24 * time.Hour), true},
		{"100001d", time.Time{}, false},
		{"9999999999d", time.Time{}, false},
		{"d", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-13-01", time.Time{}, false},
	} {
		got, err := parseSince(tc.in, now)
		if (err == nil) != tc.ok || tc.ok && !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
