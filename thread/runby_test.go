package thread_test

import (
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// TestRunByInDetail: a step run under a lease records who ran it (worker,
// build, attempt) in a detail-run node, which step show's JSON carries; a
// step under no lease keeps a plain detail node.
func TestRunByInDetail(t *testing.T) {
	te := newTEnv(t)
	wf := te.reviewLoop()
	start := func() string {
		id, _, err := te.e.Start(te.ctx, wf, "Add a --json flag", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	plain := start()
	if _, err := te.e.Step(te.ctx, plain, &thread.RunOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	if n := te.detailOf(te.head(plain)); n.Type != cas.DetailSchema {
		t.Errorf("a step under no lease has a %s node, want a detail node", n.Type)
	}

	id := start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		l, err := te.e.Claim(te.ctx, id, "w1", &thread.LeaseOptions{Length: time.Minute, Build: "v1.2"})
		if err != nil {
			t.Fatal(err)
		}
		lctx, stop := l.Keep(te.ctx)
		_, err = te.e.Step(lctx, id, &thread.RunOptions{Agent: "synth"})
		stop()
		if err != nil {
			t.Fatal(err)
		}
		n := te.detailOf(te.head(id))
		if n.Type != cas.DetailRunSchema {
			t.Fatalf("attempt %d: a step under a lease has a %s node, want detail-run", attempt, n.Type)
		}
		d, err := thread.DecodeDetail(n)
		if err != nil {
			t.Fatal(err)
		}
		want := thread.RunBy{Worker: "w1", Build: "v1.2", Attempt: attempt}
		if d.RunBy == nil || *d.RunBy != want || d.Session != nil {
			t.Errorf("attempt %d: run by %+v, session %+v; want %+v and none", attempt, d.RunBy, d.Session, want)
		}
		if got := d.RunBy.String(); got != "worker w1 build v1.2 attempt "+string(rune('0'+attempt)) {
			t.Errorf("RunBy.String() = %q", got)
		}
		if err := l.Requeue(te.ctx, "next attempt"); err != nil {
			t.Fatal(err)
		}
	}
}

// detailOf returns the detail node of the step at h.
func (te *tenv) detailOf(h cas.Hash) cas.Node {
	te.t.Helper()
	n, err := te.e.Node(te.ctx, h)
	if err != nil || n.Step == nil {
		te.t.Fatalf("node %s: %v, not a step", h, err)
	}
	d, err := te.repo.Get(te.ctx, n.Step.Detail)
	if err != nil {
		te.t.Fatal(err)
	}
	return d
}
