package thread_test

import (
	"slices"
	"testing"
	"time"

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
