package thread_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

func (te *tenv) example(name string) cas.Hash {
	te.t.Helper()
	data, err := examples.FS.ReadFile(name)
	if err != nil {
		te.t.Fatal(err)
	}
	return te.putWorkflow(string(data))
}

// chain returns a thread's chain nodes, oldest first (the start included).
func (te *tenv) nodes(head cas.Hash) []*thread.Node {
	te.t.Helper()
	var out []*thread.Node
	for n, err := range te.e.OldestFirst(te.ctx, head) {
		if err != nil {
			te.t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func kinds(ns []*thread.Node) []string {
	var out []string
	for _, n := range ns {
		k := n.Kind
		switch {
		case n.Step != nil:
			k += ":" + n.Step.Role
		case n.Mark != nil:
			k += ":" + n.Mark.Mark
		case n.Call != nil:
			k += ":" + n.Call.Role
		case n.Join != nil:
			k += ":" + n.Join.Role
		}
		out = append(out, k)
	}
	return out
}

func (te *tenv) fsckClean() {
	te.t.Helper()
	rep, err := te.repo.Fsck(te.ctx, thread.FsckOptions())
	if err != nil || !rep.OK() {
		te.t.Errorf("fsck: %v %v", err, rep.Problems)
	}
}

func TestChildWorkflowRole(t *testing.T) { testChildWorkflowRole(t, newTEnv(t)) }

func testChildWorkflowRole(t *testing.T, te *tenv) {
	te.example("develop.yaml")
	wf := te.example("solve-issue.yaml")
	if v, _ := te.repo.FormatVersion(te.ctx); v != 2 {
		t.Fatalf("format version %d after a composing workflow, want 2", v)
	}
	id, _, err := te.e.Run(te.ctx, wf, "The --json flag crashes", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	want := []string{"start", "step:triager", "call:developer", "join:developer", "step:reporter", "mark:done"}
	if got := kinds(ns); !slices.Equal(got, want) {
		t.Fatalf("parent chain = %q, want %q", got, want)
	}
	call, join := ns[2], ns[3]
	if call.Call.Mode != "child" || len(call.Call.Branches) != 1 || call.Call.Branches[0].Key != "developer" || call.Call.Workflow.IsZero() {
		t.Errorf("call = %+v", call.Call)
	}
	if join.Join.Call != call.Hash || len(join.Join.Branches) != 1 || join.Join.Branches[0].Status != "done" {
		t.Errorf("join = %+v", join.Join)
	}
	// The child's chain: its start names the call and the key; the join's
	// edge is its final head (a done mark).
	child := te.nodes(join.Join.Branches[0].Head)
	st := child[0].Start
	if st.Call != call.Hash || st.Key != "developer" || st.Workflow != call.Call.Workflow {
		t.Errorf("child start = %+v", st)
	}
	if !strings.Contains(st.Prompt, "") || child[len(child)-1].Mark == nil || child[len(child)-1].Mark.Mark != thread.MarkDone {
		t.Errorf("child chain = %q", kinds(child))
	}
	if got := kinds(child); got[1] != "step:planner" || got[len(got)-2] != "step:committer" {
		t.Errorf("child chain = %q", got)
	}
	// The child's id is derived from (parent, call, key); its ref went at
	// the join, its log says where it came from.
	cid := thread.ChildID(id, call.Hash, call.Call.At, "developer")
	if _, err := te.refs.Get(te.ctx, thread.ThreadPrefix+cid); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("the child's ref outlived the join: %v", err)
	}
	// It is still read by its id: its log names its final head.
	if h, err := te.e.Head(te.ctx, cid); err != nil || h != join.Join.Branches[0].Head {
		t.Errorf("Head(joined child) = %s, %v; want %s", h, err, join.Join.Branches[0].Head)
	}
	info, err := te.e.Show(te.ctx, cid)
	if err != nil || info.Parent == nil || info.Parent.Thread != id || info.Parent.Call != call.Hash || info.Parent.Key != "developer" || info.Status != thread.StatusDone {
		t.Errorf("Show(child) = %+v, %v", info, err)
	}
	log, err := te.refs.Log(te.ctx, thread.ThreadPrefix+cid)
	if err != nil || len(log) < 2 {
		t.Fatalf("child log = %v, %v", log, err)
	}
	if want := "child of " + id + "@" + call.Hash.String() + "/developer"; log[0].Message != want {
		t.Errorf("child creation entry = %q, want %q", log[0].Message, want)
	}
	if p, c, k, ok := thread.ParseChildMessage(log[0].Message); !ok || p != id || c != call.Hash || k != "developer" {
		t.Errorf("ParseChildMessage = %s %s %s %v", p, c, k, ok)
	}
	// The join's output is the child's final output, typed by the
	// parent role's schema.
	out, err := te.repo.Get(te.ctx, join.Join.Output)
	if err != nil {
		t.Fatal(err)
	}
	if m := out.Payload.(map[string]any); m["status"] != "committed" || m["commit"] == nil {
		t.Errorf("join output = %v", m)
	}
	calls, err := te.e.Calls(te.ctx, id)
	if err != nil || len(calls) != 1 || calls[0].Join != join.Hash || calls[0].Branches[0].Thread != cid || !calls[0].Branches[0].Joined {
		t.Errorf("Calls = %+v, %v", calls, err)
	}
	te.fsckClean()
}

// fakeAgent is a command agent for composition tests: it logs each run
// ("<thread> <role> <pid>") to $LOG/runs, and behaves by role: a role
// named boom* fails unless $LOG/fixed exists, slow* records its pid in
// $LOG/pid.<role> and sleeps 30 s, ask* asks for a human unless
// $LOG/answered exists; fast* sleeps 0.3 s, second* 1 s; every other
// answers at once.
// Its output is {status: ok, note: <role>}.
const fakeAgentBody = `cat >/dev/null
echo "$UWF_THREAD $UWF_ROLE $$" >> "$LOG/runs"
case "$UWF_ROLE" in
boom*) if [ ! -e "$LOG/fixed" ]; then echo "boom: the agent broke" >&2; exit 3; fi ;;
slow*) echo $$ > "$LOG/pid.$UWF_ROLE"; sleep 30 & wait ;;
ask*) if [ ! -e "$LOG/answered" ]; then printf -- '---\nstatus: $SUSPEND\nreason: which database?\n---\n'; exit 0; fi ;;
fast*) sleep 0.3 ;;
second*) sleep 1 ;;
esac
printf -- '---\nstatus: ok\nnote: "%s"\n---\nbody\n' "$UWF_ROLE"
`

// fakeOpts returns run options whose agent is the fake agent, logging to
// the returned folder.
func fakeOpts(t *testing.T) (*thread.RunOptions, string) {
	t.Helper()
	log := t.TempDir()
	path := script(t, t.TempDir(), "fake.sh", fakeAgentBody)
	cfg := parseConfig(t, fmt.Sprintf("agents:\n  fake:\n    command: %s\n    env: {LOG: %s}\ndefaultAgent: fake\n", path, log))
	return &thread.RunOptions{Config: cfg}, log
}

// runs returns the fake agent's runs of role.
func runsOf(t *testing.T, log, role string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(log, "runs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == role {
			n++
		}
	}
	return n
}

const okRole = "{ frontmatter: { type: object, properties: { status: { const: ok }, note: { type: string } }, required: [status, note] } }"

// stageWorkflow returns a workflow whose start runs a stage of members.
func stageWorkflow(kind string, members ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s-stage\nroles:\n  stage: { %s: [%s], join: [{ status: ok, all: ok }, { status: mixed }] }\n", kind, kind, strings.Join(members, ", "))
	if kind == "race" {
		b.Reset()
		fmt.Fprintf(&b, "name: %s-stage\nroles:\n  stage: { %s: [%s] }\n", kind, kind, strings.Join(members, ", "))
	}
	for _, m := range members {
		fmt.Fprintf(&b, "  %s: %s\n", m, okRole)
	}
	b.WriteString("graph:\n  $START: { new: { role: stage, prompt: Do it. } }\n")
	if kind == "race" {
		b.WriteString("  stage: { ok: { role: $END } }\n")
	} else {
		b.WriteString("  stage: { ok: { role: $END }, mixed: { role: $END } }\n")
	}
	return b.String()
}

func (te *tenv) refNames(prefix string) []string {
	te.t.Helper()
	var out []string
	for r, err := range te.refs.List(te.ctx, prefix) {
		if err != nil {
			te.t.Fatal(err)
		}
		out = append(out, r.Name)
	}
	return out
}

func TestParallelReviewExample(t *testing.T) { testParallelReviewExample(t, newTEnv(t)) }

func testParallelReviewExample(t *testing.T, te *tenv) {
	wf := te.example("parallel-review.yaml")
	id, _, err := te.e.Run(te.ctx, wf, "Add a --json flag", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	want := []string{"start", "call:plan", "join:plan", "step:developer", "call:review", "join:review", "mark:done"}
	if got := kinds(ns); !slices.Equal(got, want) {
		t.Fatalf("chain = %q, want %q", got, want)
	}
	out, err := te.repo.Get(te.ctx, ns[5].Join.Output)
	if err != nil {
		t.Fatal(err)
	}
	m := out.Payload.(map[string]any)
	br, _ := m["branches"].(map[string]any)
	if m["status"] != "approved" || br["security-reviewer"] == nil || br["style-reviewer"] == nil {
		t.Errorf("review join output = %v", m)
	}
	// The race's join holds only the winner's output.
	out, _ = te.repo.Get(te.ctx, ns[2].Join.Output)
	if br, _ := out.Payload.(map[string]any)["branches"].(map[string]any); len(br) != 1 {
		t.Errorf("race join branches = %v, want the winner's only", br)
	}
	// Only the parent's ref is left: branch refs went at the joins, the
	// branches' leases were released.
	if got := te.refNames(thread.ThreadPrefix); !slices.Equal(got, []string{thread.ThreadPrefix + id}) {
		t.Errorf("thread refs = %q", got)
	}
	if got := te.refNames("runs/"); len(got) != 0 {
		t.Errorf("run records left: %q", got)
	}
	te.fsckClean()
}

func TestParallelFailureCollected(t *testing.T) { testParallelFailureCollected(t, newTEnv(t)) }

func testParallelFailureCollected(t *testing.T, te *tenv) {
	opts, log := fakeOpts(t)
	wf := te.putWorkflow(stageWorkflow("parallel", "a", "boom1", "b", "boom2"))
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	var se *thread.StepError
	if !errors.As(err, &se) || !errors.Is(err, thread.ErrBranchFailed) {
		t.Fatalf("Run = %v, want a StepError for the failed branches", err)
	}
	for _, k := range []string{"branch boom1", "branch boom2", "boom: the agent broke"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error %q does not name %q", err, k)
		}
	}
	// The head stays on the call; the other branches finished.
	hn, err := te.e.Node(te.ctx, te.head(id))
	if err != nil || hn.Kind != thread.KindCall {
		t.Fatalf("head = %+v, %v; want the call", hn, err)
	}
	calls, err := te.e.Calls(te.ctx, id)
	if err != nil || len(calls) != 1 {
		t.Fatalf("Calls = %+v, %v", calls, err)
	}
	got := map[string]string{}
	for _, b := range calls[0].Branches {
		got[b.Key] = b.Status
	}
	if got["a"] != "done" || got["b"] != "done" || got["boom1"] != "active" || got["boom2"] != "active" {
		t.Errorf("branch statuses = %v", got)
	}
	info, err := te.e.Show(te.ctx, id)
	if err != nil || info.LastFailure == nil || !strings.Contains(info.LastFailure.Error, "boom2") || info.LastFailure.Head != hn.Hash {
		t.Errorf("last failure = %+v, %v", info.LastFailure, err)
	}
	// Fixed: resuming (no text needed in a call) and stepping again runs
	// only the failed branches, then joins.
	if err := os.WriteFile(filepath.Join(log, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.Resume(te.ctx, id, ""); err != nil {
		t.Fatalf("resume of a thread whose branches failed: %v", err)
	}
	if _, err := te.e.StepN(te.ctx, id, 0, opts); err != nil {
		t.Fatal(err)
	}
	for role, n := range map[string]int{"a": 1, "b": 1, "boom1": 2, "boom2": 2} {
		if got := runsOf(t, log, role); got != n {
			t.Errorf("role %s ran %d times, want %d", role, got, n)
		}
	}
	if got := kinds(te.nodes(te.head(id))); !slices.Equal(got, []string{"start", "call:stage", "mark:resumed", "join:stage", "mark:done"}) {
		t.Errorf("chain = %q", got)
	}
	// The branches' failure records went with their refs at the join, and
	// the parent's, the failure of the call it joined, with them: logged,
	// from the record it was.
	if got := te.refNames(thread.FailurePrefix); len(got) != 0 {
		t.Errorf("failure refs after the join = %q, want none", got)
	}
	fname := thread.FailurePrefix + id
	flog, err := te.repo.Refs().Log(te.ctx, fname)
	if err != nil || len(flog) == 0 {
		t.Fatalf("log of %s: %v, %v", fname, flog, err)
	}
	last := flog[len(flog)-1]
	if last.Old != info.FailureHash || !last.New.IsZero() || !strings.HasPrefix(last.Message, "settled by join stage@") {
		t.Errorf("last entry of %s's log = %+v, want the failure %s removed by the join", fname, last, info.FailureHash)
	}
	info, err = te.e.Show(te.ctx, id)
	if err != nil || info.LastFailure != nil {
		t.Errorf("Show after the join: last failure %+v, %v; want none", info.LastFailure, err)
	}
	// A record the join could not remove (or an older build left) is
	// stale: Show does not report it.
	if err := te.repo.Refs().CompareAndSwap(te.ctx, fname, 0, last.Old, "an older build's record"); err != nil {
		t.Fatal(err)
	}
	info, err = te.e.Show(te.ctx, id)
	if err != nil || info.LastFailure != nil {
		t.Errorf("Show with the joined call's failure record back: last failure %+v, %v; want none", info.LastFailure, err)
	}
	te.fsckClean()
}

func TestRaceCancelsLosers(t *testing.T) { testRaceCancelsLosers(t, newTEnv(t)) }

func testRaceCancelsLosers(t *testing.T, te *tenv) {
	opts, log := fakeOpts(t)
	wf := te.putWorkflow(stageWorkflow("race", "fast", "slow"))
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	if got := kinds(ns); !slices.Equal(got, []string{"start", "call:stage", "join:stage", "mark:done"}) {
		t.Fatalf("chain = %q", got)
	}
	j := ns[2].Join
	if j.Branches[0].Status != "done" || j.Branches[1].Status != "cancelled" {
		t.Errorf("join branches = %+v", j.Branches)
	}
	loser, err := te.e.Node(te.ctx, j.Branches[1].Head)
	if err != nil || loser.Mark == nil || loser.Mark.Mark != thread.MarkCancelled || !strings.Contains(loser.Mark.Reason, "lost the race to fast") {
		t.Errorf("loser head = %+v, %v", loser, err)
	}
	out, _ := te.repo.Get(te.ctx, j.Output)
	if m := out.Payload.(map[string]any); m["status"] != "ok" || m["branches"].(map[string]any)["fast"] == nil {
		t.Errorf("race output = %v", m)
	}
	// The loser's agent process is gone.
	data, err := os.ReadFile(filepath.Join(log, "pid.slow"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid <= 0 || processAlive(pid) {
		t.Errorf("the race loser's process %d is still running", pid)
	}
	te.fsckClean()
}

func TestReadShowsBranches(t *testing.T) {
	te := newTEnv(t)
	id := te.runSolveIssue()
	r, err := te.e.Read(te.ctx, id, thread.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	cid := thread.ChildID(id, ns[2].Hash, ns[2].Call.At, "developer")
	for _, want := range []string{
		"· developer · call (child) ·",
		"- branch developer: thread " + cid,
		"· developer · join of 1 branch(es) (child) ·",
		"- branch developer (done): thread " + cid,
		"read it whole: uwf thread read " + cid,
		"earlier entries: read it whole)", // bounded: the newest 12 entries of a branch
		"· committer · agent synth · committed",
	} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("read lacks %q:\n%s", want, r.Text)
		}
	}
	// The child reads whole by its id.
	cr, err := te.e.Read(te.ctx, cid, thread.ReadOptions{})
	if err != nil || !strings.Contains(cr.Text, "workflow: develop · status: done") {
		t.Errorf("read child: %v\n%v", err, cr)
	}
}

// TestReadForkNamesItsBranches: a fork's reading names, on its call's
// line, the branch threads that exist: the source's when the fork shares
// the join, the fork's own (not started until it is stepped) when it was
// taken before the join.
func TestReadForkNamesItsBranches(t *testing.T) {
	te := newTEnv(t)
	src := te.runSolveIssue()
	ns := te.nodes(te.head(src))
	call := ns[2]
	srcChild := thread.ChildID(src, call.Hash, call.Call.At, "developer")
	read := func(id string) string {
		t.Helper()
		r, err := te.e.Read(te.ctx, id, thread.ReadOptions{Quota: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return r.Text
	}
	for _, at := range []int{3, 4} { // at the join, after it
		fork, err := te.e.Fork(te.ctx, ns[at].Hash, src)
		if err != nil {
			t.Fatal(err)
		}
		text := read(fork)
		if !strings.Contains(text, "- branch developer: thread "+srcChild+"\n") || !strings.Contains(text, "- branch developer (done): thread "+srcChild) {
			t.Errorf("read of a fork at depth %d does not name the source's branch %s:\n%s", at, srcChild, text)
		}
	}
	// A fork at the call, before the join: its own branch, not started
	// until it is stepped; then started, and joined by the fork.
	fork, err := te.e.Fork(te.ctx, call.Hash, src)
	if err != nil {
		t.Fatal(err)
	}
	own := thread.ChildID(fork, call.Hash, call.Call.At, "developer")
	if text := read(fork); !strings.Contains(text, "- branch developer: thread "+own+" (not started: stepping "+fork+" starts it)\n") {
		t.Errorf("read of a fork at the call:\n%s", text)
	}
	if _, err := te.e.Step(te.ctx, fork, &thread.RunOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	if text := read(fork); !strings.Contains(text, "- branch developer: thread "+own+"\n") || !strings.Contains(text, "- branch developer (done): thread "+own) {
		t.Errorf("read of the fork after its own join:\n%s", text)
	}
	te.fsckClean()
}

func TestForkAndReplayParent(t *testing.T) {
	te := newTEnv(t)
	src := te.runSolveIssue()
	srcNodes := te.nodes(te.head(src))
	// Replay from the start: the child replays from its own recorded
	// outputs, so the same outputs come out.
	fork, _, err := te.e.ForkAt(te.ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, fork, 0, &thread.RunOptions{Agent: "replay:" + src}); err != nil {
		t.Fatal(err)
	}
	got := te.nodes(te.head(fork))
	if !slices.Equal(kinds(got), kinds(srcNodes)) {
		t.Fatalf("replayed chain = %q, want %q", kinds(got), kinds(srcNodes))
	}
	if got[3].Join.Output != srcNodes[3].Join.Output || got[4].Step.Output != srcNodes[4].Step.Output {
		t.Error("the replay's outputs differ from the source's")
	}
	childSrc, childFork := te.nodes(srcNodes[3].Join.Branches[0].Head), te.nodes(got[3].Join.Branches[0].Head)
	if !slices.Equal(kinds(childSrc), kinds(childFork)) {
		t.Errorf("replayed child = %q, want %q", kinds(childFork), kinds(childSrc))
	}
	// A fork at the call, before its join, starts its own branch with an
	// id derived from the fork; the source's child is not touched.
	atCall, err := te.e.Fork(te.ctx, srcNodes[2].Hash, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.Step(te.ctx, atCall, &thread.RunOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	fn := te.nodes(te.head(atCall))
	if k := kinds(fn); k[len(k)-1] != "join:developer" || fn[3].Join.Call != srcNodes[2].Hash {
		t.Fatalf("fork at the call = %q", k)
	}
	// A fork of a branch is a thread of its own: listed, no parent.
	bfork, err := te.e.Fork(te.ctx, srcNodes[3].Join.Branches[0].Head, "")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := te.e.Show(te.ctx, bfork); err != nil || info.Parent != nil {
		t.Errorf("fork of a branch: %+v, %v; want no parent", info, err)
	}
	listed, err := te.e.List(te.ctx, thread.ListOptions{})
	if err != nil || !slices.ContainsFunc(listed, func(i *thread.Info) bool { return i.ID == bfork }) {
		t.Errorf("the fork of a branch is not listed: %v", err)
	}
	want := thread.ChildID(atCall, srcNodes[2].Hash, srcNodes[2].Call.At, "developer")
	if c, err := te.e.Show(te.ctx, want); err != nil || c.Parent == nil || c.Parent.Thread != atCall {
		t.Errorf("the fork's own branch %s: %+v, %v", want, c, err)
	}
	te.fsckClean()
}

// childWorkflows registers "inner" (one role, run by the fake agent) and
// "outer", whose role "work" runs inner as a child thread.
func (te *tenv) childWorkflows(innerRole string) cas.Hash {
	te.t.Helper()
	te.putWorkflow(fmt.Sprintf("name: inner\nroles:\n  %s: %s\ngraph:\n  $START: { new: { role: %s, prompt: Go. } }\n  %s: { ok: { role: $END } }\n", innerRole, okRole, innerRole, innerRole))
	return te.putWorkflow("name: outer\nroles:\n  work: { workflow: inner, frontmatter: { type: object, properties: { status: { const: ok } }, required: [status] } }\n" +
		"graph:\n  $START: { new: { role: work, prompt: Do the work. } }\n  work: { ok: { role: $END } }\n")
}

func TestChildSuspendsParent(t *testing.T) {
	te := newTEnv(t)
	opts, log := fakeOpts(t)
	wf := te.childWorkflows("asker")
	id, rs, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if last := rs[len(rs)-1]; last.Kind != thread.EventSuspended || !strings.Contains(last.Reason, "which database?") || !strings.Contains(last.Reason, "branch work") {
		t.Fatalf("last result = %+v", last)
	}
	info, _ := te.e.Show(te.ctx, id)
	if info.Status != thread.StatusSuspended || len(info.Branches) != 1 || info.Branches[0].Status != thread.StatusSuspended {
		t.Fatalf("parent = %+v", info)
	}
	// Resuming the parent resumes the child; stepping goes on from the
	// call, the child runs its role again and the parent joins.
	if err := os.WriteFile(filepath.Join(log, "answered"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.Resume(te.ctx, id, "use PostgreSQL"); err != nil {
		t.Fatal(err)
	}
	if st, _ := te.e.Show(te.ctx, info.Branches[0].Thread); st.Status != thread.StatusActive {
		t.Errorf("child after the parent's resume: %s", st.Status)
	}
	if _, err := te.e.StepN(te.ctx, id, 0, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"start", "call:work", "mark:suspended", "mark:resumed", "join:work", "mark:done"}
	if got := kinds(te.nodes(te.head(id))); !slices.Equal(got, want) {
		t.Errorf("parent chain = %q, want %q", got, want)
	}
	if n := runsOf(t, log, "asker"); n != 2 {
		t.Errorf("asker ran %d times, want 2", n)
	}
	te.fsckClean()
}

func TestKillParentEndsBranches(t *testing.T) {
	te := newTEnv(t)
	opts, log := fakeOpts(t)
	wf := te.putWorkflow(stageWorkflow("parallel", "slow1", "slow2"))
	id, _, err := te.e.Start(te.ctx, wf, "task", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := te.e.Step(te.ctx, id, opts)
		done <- err
	}()
	// Wait for both agents to run and record their pids (the fake agent
	// logs its run first, then its pid: a kill between would leave none).
	hasPid := func(role string) bool {
		data, _ := os.ReadFile(filepath.Join(log, "pid."+role))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return pid > 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for runsOf(t, log, "slow1")+runsOf(t, log, "slow2") < 2 || !hasPid("slow1") || !hasPid("slow2") {
		if time.Now().After(deadline) {
			t.Fatal("the branches never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, err := te.e.Show(te.ctx, id)
	if err != nil || len(info.Branches) != 2 {
		t.Fatalf("show = %+v, %v", info, err)
	}
	if _, err := te.e.Kill(te.ctx, id, "enough"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, thread.ErrNotActive) {
			t.Errorf("the step of the killed parent = %v, want ErrNotActive", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parent's step did not end after the kill")
	}
	for _, b := range info.Branches {
		st, err := te.e.Show(te.ctx, b.Thread)
		if err != nil || st.Status != thread.StatusKilled {
			t.Errorf("branch %s after the parent's kill: %+v, %v", b.Key, st, err)
		}
		data, _ := os.ReadFile(filepath.Join(log, "pid."+b.Key))
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid <= 0 || processAlive(pid) {
			t.Errorf("branch %s's agent (pid %d) still runs", b.Key, pid)
		}
	}
	// rm of the parent removes its branches' refs too.
	if err := te.e.Remove(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := te.refNames(thread.ThreadPrefix); len(got) != 0 {
		t.Errorf("thread refs after rm = %q", got)
	}
}

func TestTwoSteppersMakeOneCall(t *testing.T) {
	te := newTEnv(t)
	opts, _ := fakeOpts(t)
	wf := te.putWorkflow(stageWorkflow("parallel", "fast1", "fast2"))
	id, _, err := te.e.Start(te.ctx, wf, "task", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other := thread.New(te.repo, &thread.Options{Now: te.clock.Now})
	errs := make(chan error, 2)
	for _, e := range []*thread.Engine{te.e, other} {
		go func() {
			_, err := e.StepN(te.ctx, id, 0, opts)
			errs <- err
		}()
	}
	var failed int
	for range 2 {
		if err := <-errs; err != nil {
			var ce *thread.ConflictError
			if !errors.As(err, &ce) && !errors.Is(err, thread.ErrNotActive) {
				t.Errorf("a stepper failed: %v", err)
			}
			failed++
		}
	}
	got := kinds(te.nodes(te.head(id)))
	if !slices.Equal(got, []string{"start", "call:stage", "join:stage", "mark:done"}) {
		t.Errorf("chain = %q: want one call", got)
	}
	te.fsckClean()
}

func TestNestingLimit(t *testing.T) {
	te := newTEnv(t)
	// A workflow whose role runs itself.
	te.putWorkflow("name: loop\nroles:\n  a: " + okRole + "\ngraph:\n  $START: { new: { role: a } }\n  a: { ok: { role: $END } }\n")
	wf := te.putWorkflow("name: loop\nroles:\n  self: { workflow: loop, frontmatter: { properties: { status: { const: ok } } } }\ngraph:\n  $START: { new: { role: self } }\n  self: { ok: { role: $END } }\n")
	_, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if !errors.Is(err, thread.ErrBranchFailed) || !strings.Contains(err.Error(), "child threads nest too deep: this thread is a branch 8 calls deep, the limit is 8") {
		t.Errorf("Run = %v, want the nesting limit", err)
	}
}

func TestGCAfterRemovingParent(t *testing.T) {
	te := newTEnv(t)
	id := te.runSolveIssue()
	ns := te.nodes(te.head(id))
	// A fork at the triager's step shares the start and that step.
	keep, err := te.e.Fork(te.ctx, ns[1].Hash, id)
	if err != nil {
		t.Fatal(err)
	}
	child := te.nodes(ns[3].Join.Branches[0].Head)
	// Before rm, GC keeps the child through the join's edges (its ref
	// went at the join).
	gc := &cas.GCOptions{Grace: -1, LogRetention: -1}
	if _, err := te.repo.GC(te.ctx, gc); err != nil {
		t.Fatal(err)
	}
	for _, n := range child {
		if ok, _ := te.st.Has(te.ctx, n.Hash); !ok {
			t.Fatalf("GC removed the child's node %s while its parent lives", n.Hash)
		}
	}
	if err := te.e.Remove(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Hour) // the removed refs' log entries are past the (zero) retention
	if _, err := te.repo.GC(te.ctx, gc); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(child, ns[2], ns[3]) {
		if ok, _ := te.st.Has(te.ctx, n.Hash); ok {
			t.Errorf("node %s (%s) outlived its parent's rm and GC", n.Hash, n.Kind)
		}
	}
	for _, n := range ns[:2] {
		if ok, _ := te.st.Has(te.ctx, n.Hash); !ok {
			t.Errorf("GC removed %s (%s), which fork %s shares", n.Hash, n.Kind, keep)
		}
	}
	te.fsckClean()
}

func TestReplayReportsDivergenceInBranch(t *testing.T) {
	te := newTEnv(t)
	text := stageWorkflow("parallel", "a", "b")
	wf := te.putWorkflow(text)
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := te.e.Replay(te.ctx, id, 0)
	if err != nil || rep.Divergence != nil || rep.Steps != 3 {
		t.Fatalf("replay under its own workflow = %+v, %v; want 3 steps (the join, a, b), no divergence", rep, err)
	}
	// A version whose member b needs a field b's recorded output lacks.
	changed := strings.Replace(text, "  b: "+okRole, "  b: { frontmatter: { type: object, properties: { status: { const: ok }, note: { type: string }, extra: { type: string } }, required: [status, note, extra] } }", 1)
	wf2 := te.putWorkflow(changed)
	rep, err = te.e.Replay(te.ctx, id, wf2)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Divergence
	if d == nil || d.Branch != "b" || !d.Invalid || !strings.Contains(d.Error, "extra") || d.Depth != 1 {
		t.Fatalf("replay under the changed version: divergence %+v", d)
	}
	ns := te.nodes(te.head(id))
	if want := thread.ChildID(id, ns[1].Hash, ns[1].Call.At, "b"); d.Thread != want {
		t.Errorf("divergence thread = %s, want %s", d.Thread, want)
	}
}

func TestStageTimeoutCancelsBranches(t *testing.T) {
	te := newTEnv(t)
	opts, log := fakeOpts(t)
	w, err := registry.Parse("w.yaml", []byte(stageWorkflow("parallel", "quick", "slow")))
	if err != nil {
		t.Fatal(err)
	}
	w.Roles["stage"].Timeout = 700 * time.Millisecond
	res, err := te.e.Registry().Put(te.ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	id, _, err := te.e.Run(te.ctx, res.Hash, "task", t.TempDir(), opts)
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("the stage took %s: the timeout did not end the slow branch", took)
	}
	// quick finished ok, slow was cancelled: the rule "all ok" fails, the
	// otherwise rule gives mixed.
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	j := ns[2].Join
	if j == nil || j.Branches[0].Status != "done" || j.Branches[1].Status != "cancelled" {
		t.Fatalf("chain %q, join %+v", kinds(ns), j)
	}
	out, _ := te.repo.Get(te.ctx, j.Output)
	if m := out.Payload.(map[string]any); m["status"] != "mixed" {
		t.Errorf("join output = %v, want status mixed", m)
	}
	slow, _ := te.e.Node(te.ctx, j.Branches[1].Head)
	if slow.Mark == nil || slow.Mark.Mark != thread.MarkCancelled || slow.Mark.Reason != "the stage timed out" {
		t.Errorf("slow branch head = %+v", slow)
	}
	data, _ := os.ReadFile(filepath.Join(log, "pid.slow"))
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid <= 0 || processAlive(pid) {
		t.Errorf("the timed-out agent (pid %d) still runs", pid)
	}
}

func TestChildOutputMisfit(t *testing.T) {
	te := newTEnv(t)
	opts, _ := fakeOpts(t)
	te.putWorkflow("name: inner\nroles:\n  a: " + okRole + "\ngraph:\n  $START: { new: { role: a, prompt: Go. } }\n  a: { ok: { role: $END } }\n")
	wf := te.putWorkflow("name: outer\nroles:\n  work: { workflow: inner, frontmatter: { type: object, properties: { status: { const: ok }, commit: { type: string } }, required: [status, commit] } }\n" +
		"graph:\n  $START: { new: { role: work, prompt: Do the work. } }\n  work: { ok: { role: $END } }\n")
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	var se *thread.StepError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "the child's final output does not fit role work's schema") || !strings.Contains(err.Error(), "commit") {
		t.Fatalf("Run = %v, want a failed step naming the missing field", err)
	}
	if hn, _ := te.e.Node(te.ctx, te.head(id)); hn.Kind != thread.KindCall {
		t.Errorf("head = %s, want the call", hn.Kind)
	}
}

func TestRaceWithConcurrencyLimit(t *testing.T) {
	te := newTEnv(t)
	opts, log := fakeOpts(t)
	w, err := registry.Parse("w.yaml", []byte(stageWorkflow("race", "fast", "slow", "boom")))
	if err != nil {
		t.Fatal(err)
	}
	w.Roles["stage"].Concurrency = 1 // only the first runs: it wins, the others never start
	res, err := te.e.Registry().Put(te.ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := te.e.Run(te.ctx, res.Hash, "task", t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	j := ns[2].Join
	if j == nil || len(j.Branches) != 3 || j.Branches[0].Status != "done" || j.Branches[1].Status != "cancelled" || j.Branches[2].Status != "cancelled" {
		t.Fatalf("chain %q, join %+v", kinds(ns), j)
	}
	if runsOf(t, log, "slow")+runsOf(t, log, "boom") != 0 {
		t.Error("a branch past the concurrency limit ran after the race was won")
	}
	te.fsckClean()
}

func TestEachFansOut(t *testing.T) {
	te := newTEnv(t)
	wf := te.putWorkflow(`name: fan
roles:
  lister: { frontmatter: { type: object, properties: { status: { const: listed }, files: { type: array, minItems: 3, maxItems: 3, items: { type: string } } }, required: [status, files] } }
  review: { each: { role: reviewer, over: files }, concurrency: 2, join: [{ status: clean, all: ok }, { status: dirty }] }
  reviewer: { frontmatter: { type: object, properties: { status: { const: ok }, note: { type: string } }, required: [status, note] } }
graph:
  $START: { new: { role: lister, prompt: List the files. } }
  lister: { listed: { role: review, prompt: "Review this file." } }
  review: { clean: { role: $END, prompt: "{{ branches }}" }, dirty: { role: $END } }
`)
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	ns := te.nodes(te.head(id))
	if got := kinds(ns); !slices.Equal(got, []string{"start", "step:lister", "call:review", "join:review", "mark:done"}) {
		t.Fatalf("chain = %q", got)
	}
	call := ns[2].Call
	lo, _ := te.repo.Get(te.ctx, ns[1].Step.Output)
	files := lo.Payload.(map[string]any)["files"].([]any)
	if call.Mode != "parallel" || len(call.Branches) != 3 || call.Concurrency != 2 {
		t.Fatalf("call = %+v", call)
	}
	for i, b := range call.Branches {
		if b.Key != strconv.Itoa(i) || b.Role != "reviewer" || !strings.Contains(b.Prompt, fmt.Sprintf("Item %d of 3:\n%s", i+1, files[i])) {
			t.Errorf("branch %d = %+v", i, b)
		}
	}
	out, _ := te.repo.Get(te.ctx, ns[3].Join.Output)
	m := out.Payload.(map[string]any)
	if br := m["branches"].(map[string]any); m["status"] != "clean" || len(br) != 3 || br["2"] == nil {
		t.Errorf("join output = %v", m)
	}
	te.fsckClean()
	// An empty list fails the step clearly and moves nothing.
	wf2 := te.putWorkflow(strings.Replace(`name: fan0
roles:
  lister: { frontmatter: { type: object, properties: { status: { const: listed }, files: { type: array, maxItems: 0 } }, required: [status, files] } }
  review: { each: { role: reviewer, over: files } }
  reviewer: { frontmatter: { type: object, properties: { status: { const: ok } }, required: [status] } }
graph:
  $START: { new: { role: lister } }
  lister: { listed: { role: review } }
  review: { ok: { role: $END } }
`, "\t", "  ", -1))
	id2, _, err := te.e.Run(te.ctx, wf2, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if !errors.Is(err, thread.ErrNothingToFanOut) || !strings.Contains(err.Error(), `the list "files" is empty`) {
		t.Errorf("Run over an empty list = %v", err)
	}
	if got := kinds(te.nodes(te.head(id2))); !slices.Equal(got, []string{"start", "step:lister"}) {
		t.Errorf("chain after the empty fan-out = %q", got)
	}
}

// runSolveIssue registers develop.yaml and runs solve-issue.yaml to its
// end with the synth agent, returning the parent thread.
func (te *tenv) runSolveIssue() string {
	te.t.Helper()
	te.example("develop.yaml")
	wf := te.example("solve-issue.yaml")
	id, _, err := te.e.Run(te.ctx, wf, "The --json flag crashes", te.t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		te.t.Fatal(err)
	}
	return id
}
