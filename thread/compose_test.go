package thread_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
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

func TestChildWorkflowRole(t *testing.T) {
	te := newTEnv(t)
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
	if _, err := te.e.Head(te.ctx, cid); err == nil {
		t.Error("the child's ref outlived the join")
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
