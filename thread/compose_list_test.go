package thread_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// suspendedParents runs n parents of te.childWorkflows("asker"), a second
// apart: each ends suspended in its call, its branch thread's ref in
// place (a listed branch would sort among the parents).
func (te *tenv) suspendedParents(n int) []string {
	te.t.Helper()
	opts, _ := fakeOpts(te.t)
	wf := te.childWorkflows("asker")
	var ids []string
	for range n {
		te.clock.Advance(time.Second)
		id, _, err := te.e.Run(te.ctx, wf, "task", te.t.TempDir(), opts)
		if err != nil {
			te.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func listIDs(infos []*thread.Info) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.ID)
	}
	return out
}

// TestListOffsetSkipsNoBranch: without a filter, --offset counts only the
// threads listed, not the branch threads left out, so every page is the
// slice of the whole listing it names.
func TestListOffsetSkipsNoBranch(t *testing.T) {
	te := newTEnv(t)
	parents := te.suspendedParents(6)
	if n := len(te.threadRefs()); n != 12 {
		t.Fatalf("%d thread refs, want 6 parents and 6 branches", n)
	}
	all, err := te.e.List(te.ctx, thread.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(parents)
	slices.Reverse(want)
	if got := listIDs(all); !slices.Equal(got, want) {
		t.Fatalf("List = %q, want the parents newest first %q", got, want)
	}
	for off := range len(want) + 1 {
		for _, limit := range []int{1, 2, 4} {
			page, err := te.e.List(te.ctx, thread.ListOptions{Offset: off, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			exp := want[off:min(off+limit, len(want))]
			if got := listIDs(page); !slices.Equal(got, exp) {
				t.Errorf("List(offset %d, limit %d) = %q, want %q", off, limit, got, exp)
			}
		}
	}
	// With Children the branches are listed and counted.
	withKids, err := te.e.List(te.ctx, thread.ListOptions{Children: true, Offset: 2})
	if err != nil || len(withKids) != 10 {
		t.Errorf("List(children, offset 2) = %d threads, %v; want 10", len(withKids), err)
	}
}

// callingParent returns a thread of a workflow whose one role runs a
// one-role child workflow again and again, stepped n times (n calls, each
// with its join: n children).
func (te *tenv) callingParent(n int) string {
	te.t.Helper()
	te.putWorkflow("name: inner\nroles:\n  a: " + okRole + "\ngraph:\n  $START: { new: { role: a, prompt: Go. } }\n  a: { ok: { role: $END } }\n")
	wf := te.putWorkflow("name: outer\nmaxSteps: 100000\nroles:\n  work: { workflow: inner, frontmatter: { properties: { status: { enum: [ok, stop] } } } }\n" +
		"graph:\n  $START: { new: { role: work, prompt: Again. } }\n  work: { ok: { role: work, prompt: Again. }, stop: { role: $END } }\n")
	id, _, err := te.e.Start(te.ctx, wf, "task", te.t.TempDir())
	if err != nil {
		te.t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, id, n, &thread.RunOptions{Agent: "synth"}); err != nil {
		te.t.Fatal(err)
	}
	return id
}

// TestShowChildrenCost: `thread show` of a parent lists its children
// (joined ones too) newest first, the newest ShowChildren of them, and
// reads as many nodes for a parent of 1,000 children as for one of 10;
// List with Parent pages through all of them.
func TestShowChildrenCost(t *testing.T) {
	const maxReads = 60
	var costs []cost
	for _, n := range []int{10, 1000} {
		c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
		mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
		cr := &countingRefs{MemRefs: mem.Refs()}
		te := newTEnvOn(t, c, mem, cr)
		id := te.callingParent(n)
		var info *thread.Info
		costs = append(costs, te.measure(cr, func(e *thread.Engine) error {
			var err error
			info, err = e.Show(te.ctx, id)
			return err
		}))
		if info.ChildCount != n || len(info.Children) != thread.ShowChildren {
			t.Fatalf("%d calls: ChildCount %d, %d children shown; want %d, %d", n, info.ChildCount, len(info.Children), n, thread.ShowChildren)
		}
		calls, err := te.e.Calls(te.ctx, id)
		if err != nil || len(calls) != n {
			t.Fatalf("Calls = %d, %v", len(calls), err)
		}
		// Newest first, each the call's branch, joined, with its head.
		for i, ch := range info.Children {
			want := calls[n-1-i]
			if ch.Call != want.Call || ch.Thread != want.Branches[0].Thread || ch.Head != want.Branches[0].Head || !ch.Joined || ch.Status != thread.StatusDone || ch.Depth != want.Depth {
				t.Errorf("%d calls: child %d = %+v, want the branch of %+v", n, i, ch, want)
			}
		}
		// List --parent pages through every child, in the same order.
		var got []string
		for off := 0; ; off += 7 {
			page, err := te.e.List(te.ctx, thread.ListOptions{Parent: id, Offset: off, Limit: 7})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, p := range page {
				if p.Parent == nil || p.Parent.Thread != id || p.Status != thread.StatusDone {
					t.Fatalf("listed child %s: parent %+v, status %s", p.ID, p.Parent, p.Status)
				}
				got = append(got, p.ID)
			}
		}
		if len(got) != n || got[0] != calls[n-1].Branches[0].Thread || got[n-1] != calls[0].Branches[0].Thread {
			t.Errorf("%d calls: List --parent gave %d children", n, len(got))
		}
	}
	t.Logf("show: %d nodes with 10 children, %d with 1,000", costs[0].nodes, costs[1].nodes)
	if costs[1].nodes > maxReads || costs[1].nodes > costs[0].nodes+4 || costs[1].logEntries > costs[0].logEntries {
		t.Errorf("show of a parent of 1,000 children read %+v, of 10 %+v: want flat, at most %d nodes", costs[1], costs[0], maxReads)
	}
}

// TestForkAfterJoinNamesSourceChildren: a fork of a parent taken after a
// join shares the join, and with it the branches the source ran: Show,
// Calls and Read name the source's branch threads (whose ids derive from
// the source), not ids derived from the fork, which name no thread.
func TestForkAfterJoinNamesSourceChildren(t *testing.T) {
	te := newTEnv(t)
	te.example("develop.yaml")
	wf := te.example("solve-issue.yaml")
	id, _, err := te.e.Run(te.ctx, wf, "The --json flag crashes", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := te.e.Children(te.ctx, id, thread.ChildrenOptions{})
	if err != nil || len(src.Children) != 1 {
		t.Fatalf("Children(parent) = %+v, %v", src, err)
	}
	kid := src.Children[0]
	fork, _, err := te.e.ForkAt(te.ctx, id, kid.Depth+1) // at the join
	if err != nil {
		t.Fatal(err)
	}
	info, err := te.e.Show(te.ctx, fork)
	if err != nil || info.ChildCount != 1 || info.Children[0].Thread != kid.Thread {
		t.Fatalf("Show(fork) children = %+v, %v; want the source's %s", info.Children, err, kid.Thread)
	}
	calls, err := te.e.Calls(te.ctx, fork)
	if err != nil || len(calls) != 1 || calls[0].Branches[0].Thread != kid.Thread {
		t.Errorf("Calls(fork) = %+v, %v", calls, err)
	}
	r, err := te.e.Read(te.ctx, fork, thread.ReadOptions{})
	if err != nil || !strings.Contains(r.Text, "uwf thread read "+kid.Thread) {
		t.Errorf("Read(fork) does not name %s: %v\n%s", kid.Thread, err, r.Text)
	}
	if _, err := te.e.Head(te.ctx, kid.Thread); err != nil {
		t.Errorf("the named child does not read: %v", err)
	}
}
