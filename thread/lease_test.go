package thread_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// TestLeases runs the lease primitive's tests on the memory, disk and
// PostgreSQL stores (the last when UWF_TEST_POSTGRES is set). Every store
// runs on real time here: expiries are read from the store's clock and
// validity from the monotonic one, so the tests wait for short leases to
// run out rather than moving a fake clock.
func TestLeases(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*testing.T, *tenv)
	}{
		{"EnqueueClaimRelease", testEnqueueClaimRelease},
		{"TakeoverOnlyAfterExpiry", testTakeoverOnlyAfterExpiry},
		{"KeepRenews", testKeepRenews},
		{"KillDropsTheLease", testKillDropsTheLease},
		{"FenceRefusesLateCommit", testFenceRefusesLateCommit},
		{"RetryThenFail", testRetryThenFail},
		{"TakeoverLimitFails", testTakeoverLimitFails},
		{"ConcurrentClaims", testConcurrentClaims},
		{"NeverQueuedStaysVersion1", testNeverQueuedStaysVersion1},
		{"NotClaimed", testNotClaimed},
	}
	for _, backend := range []string{"memory", "disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					st, refs := openBackend(t, backend, "lease")
					tc.fn(t, newTEnvOn(t, &clock{t: time.Now().UTC()}, st, refs))
				})
			}
		})
	}
}

func (te *tenv) runOf(id string) *thread.Run {
	te.t.Helper()
	r, err := te.e.RunOf(te.ctx, id)
	if err != nil {
		te.t.Fatal(err)
	}
	return r
}

func (te *tenv) runLog(id string) []cas.LogEntry {
	te.t.Helper()
	log, err := te.refs.Log(te.ctx, thread.RunPrefix+id)
	if err != nil {
		te.t.Fatal(err)
	}
	return log
}

func testEnqueueClaimRelease(t *testing.T, te *tenv) {
	id := te.start()
	if v := te.formatVersion(); v != cas.FormatV1 {
		t.Fatalf("a new store is at version %d", v)
	}
	if r := te.runOf(id); r != nil || thread.RunState(r) != thread.RunNone {
		t.Fatalf("run of a new thread = %+v", r)
	}
	q, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	if q.State != thread.RunQueued || q.Thread != id || q.Workflow != "test" || q.Agent != "synth" || q.Cwd != "/tmp" || q.Attempt != 0 {
		t.Errorf("queued run = %+v", q)
	}
	if v := te.formatVersion(); v != cas.FormatV2 {
		t.Errorf("after the first run node the store is at version %d, want 2", v)
	}
	// Queueing again changes nothing.
	if q2, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil || q2.Hash != q.Hash {
		t.Errorf("Enqueue again = %+v, %v; want the same record %s", q2, err, q.Hash)
	}
	l, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := te.runOf(id)
	if r.State != thread.RunRunning || r.Worker != "wA" || r.Attempt != 1 || l.Attempt() != 1 || r.Agent != "synth" {
		t.Errorf("claimed run = %+v", r)
	}
	now, _ := te.st.Now(te.ctx)
	if exp := r.ExpiryTime(); exp.Before(now.Add(4*time.Second)) || exp.After(now.Add(5*time.Second)) {
		t.Errorf("expiry %v, want about the store's now %v + 5s", exp, now)
	}
	var held *thread.LeaseHeldError
	if _, err := te.e.Claim(te.ctx, id, "wB", nil); !errors.As(err, &held) || held.Worker != "wA" || !errors.Is(err, cas.ErrConflict) {
		t.Errorf("Claim of a held lease = %v, want a LeaseHeldError naming wA", err)
	}
	if err := te.e.CheckUnleased(te.ctx, id); !errors.As(err, &held) || !strings.Contains(err.Error(), "wA") {
		t.Errorf("CheckUnleased = %v, want a LeaseHeldError naming wA", err)
	}
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); !errors.As(err, &held) {
		t.Errorf("Enqueue of a running thread = %v, want a LeaseHeldError", err)
	}
	if err := l.Check(); err != nil {
		t.Errorf("Check of a fresh lease = %v", err)
	}
	if err := l.Release(te.ctx, "done"); err != nil {
		t.Fatal(err)
	}
	if r := te.runOf(id); r != nil {
		t.Errorf("after Release the run is %+v, want none", r)
	}
	var msgs []string
	for _, e := range te.runLog(id) {
		msgs = append(msgs, e.Message)
	}
	want := []string{"enqueue", "claim by wA attempt 1", "release by wA: done"}
	if strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Errorf("runs/ log = %q, want %q", msgs, want)
	}
	if _, err := te.e.Claim(te.ctx, id, "wB", nil); !errors.Is(err, thread.ErrNotQueued) || !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Claim of an unqueued thread = %v, want ErrNotQueued", err)
	}
	if err := l.Check(); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("Check after Release = %v, want ErrLeaseLost", err)
	}
}

func testTakeoverOnlyAfterExpiry(t *testing.T, te *tenv) {
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	const length = 600 * time.Millisecond
	a, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: length})
	if err != nil {
		t.Fatal(err)
	}
	// wA renews nothing (a frozen or dead worker). wB retries until it
	// gets the run.
	var b *thread.Lease
	for b == nil {
		b, err = te.e.Claim(te.ctx, id, "wB", &thread.LeaseOptions{Length: 5 * time.Second})
		var held *thread.LeaseHeldError
		if err != nil && !errors.As(err, &held) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := te.runLog(id)
	last := log[len(log)-1]
	if last.Message != "takeover by wB attempt 2 from wA" {
		t.Errorf("takeover logged %q", last.Message)
	}
	prev, err := te.e.ReadRun(te.ctx, last.Old)
	if err != nil {
		t.Fatal(err)
	}
	if last.Time < prev.Expiry {
		t.Errorf("taken over at %d, before wA's expiry %d by the store's clock", last.Time, prev.Expiry)
	}
	// wA's own clock says its lease is gone: it commits nothing, and
	// cannot renew.
	if err := a.Check(); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("wA Check after takeover = %v", err)
	}
	if err := a.Renew(te.ctx); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("wA Renew after takeover = %v", err)
	}
	if err := a.Release(te.ctx, "late"); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("wA Release after takeover = %v", err)
	}
	if r := te.runOf(id); r.Worker != "wB" || r.Attempt != 2 {
		t.Errorf("run = %+v, want wB's attempt 2", r)
	}
	if err := b.Requeue(te.ctx, "draining"); err != nil {
		t.Fatal(err)
	}
	if r := te.runOf(id); r.State != thread.RunQueued || r.Worker != "" || r.Attempt != 2 {
		t.Errorf("requeued run = %+v", r)
	}
}

func testKeepRenews(t *testing.T, te *tenv) {
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	// Long enough that a loaded machine renews in time (every third).
	const length = 2 * time.Second
	l, err := te.e.Claim(te.ctx, id, "wA", &thread.LeaseOptions{Length: length})
	if err != nil {
		t.Fatal(err)
	}
	lctx, stop := l.Keep(te.ctx)
	time.Sleep(5 * length / 2)
	if err := context.Cause(lctx); err != nil {
		t.Fatalf("the kept lease was lost: %v", err)
	}
	if err := l.Check(); err != nil {
		t.Errorf("Check of a kept lease = %v", err)
	}
	renewals := 0
	for _, e := range te.runLog(id) {
		if e.Message == "renew by wA" {
			renewals++
		}
	}
	if renewals < 4 {
		t.Errorf("%d renewals in 2.5 lease lengths, want about 7 (every third)", renewals)
	}
	stop()
	if err := l.Release(te.ctx, "done"); err != nil {
		t.Fatal(err)
	}
	if lctx.Err() != nil {
		t.Errorf("Release cancelled the lease's context: %v", context.Cause(lctx))
	}
}

func testKillDropsTheLease(t *testing.T, te *tenv) {
	for _, how := range []string{"kill", "rm"} {
		t.Run(how, func(t *testing.T) {
			id := te.start()
			l, err := te.e.Acquire(te.ctx, id, "wA", &thread.LeaseOptions{Length: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r := te.runOf(id); r.State != thread.RunRunning || r.Attempt != 1 {
				t.Fatalf("acquired run = %+v", r)
			}
			lctx, stop := l.Keep(te.ctx)
			defer stop()
			if how == "kill" {
				_, err = te.e.Kill(te.ctx, id, "")
			} else {
				err = te.e.Remove(te.ctx, id)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-lctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the holder did not learn of the drop within 10 s (a lease of 30 s)")
			}
			if cause := context.Cause(lctx); !errors.Is(cause, thread.ErrLeaseLost) || !strings.Contains(cause.Error(), "dropped") {
				t.Errorf("cause = %v, want a dropped lease", cause)
			}
			if r := te.runOf(id); r != nil {
				t.Errorf("run after %s = %+v", how, r)
			}
		})
	}
}

func testFenceRefusesLateCommit(t *testing.T, te *tenv) {
	id := te.start()
	const length = 2 * time.Second
	l, err := te.e.Acquire(te.ctx, id, "wA", &thread.LeaseOptions{Length: length, Build: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	lctx, stop := l.Keep(te.ctx)
	h := te.stepAfter(te.e, te.head(id), "r1")
	if err := te.e.Commit(lctx, id, h, "step r1"); err != nil {
		t.Fatal(err)
	}
	log, _ := te.e.Log(te.ctx, id)
	if got := log[len(log)-1].Message; got != "step r1 (worker wA build v9 attempt 1)" {
		t.Errorf("commit under a lease logged %q", got)
	}
	// The renewals stop (a frozen worker): past the validity, the commit
	// is refused and the head stays.
	stop()
	time.Sleep(time.Until(l.ValidUntil()) + 10*time.Millisecond)
	h2 := te.stepAfter(te.e, h, "r2")
	if err := te.e.Commit(lctx, id, h2, "step r2"); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("late commit = %v, want ErrLeaseLost", err)
	}
	if got := te.head(id); got != h {
		t.Errorf("head moved to %s after the lease ran out", got)
	}
}

func testRetryThenFail(t *testing.T, te *tenv) {
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := te.e.Claim(te.ctx, id, "wA", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Retry(te.ctx, errors.New("agent exited 1"), 400*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r := te.runOf(id)
	if r.State != thread.RunRetrying || r.Failures != 1 || r.Error != "agent exited 1" || r.Worker != "" {
		t.Errorf("retrying run = %+v", r)
	}
	if _, err := te.e.Claim(te.ctx, id, "wB", nil); !errors.Is(err, cas.ErrConflict) {
		t.Errorf("Claim during the backoff = %v, want a conflict", err)
	}
	time.Sleep(time.Until(r.ExpiryTime()) + 50*time.Millisecond)
	l, err = te.e.Claim(te.ctx, id, "wB", nil)
	if err != nil {
		t.Fatalf("Claim after the backoff: %v", err)
	}
	if err := l.Fail(te.ctx, errors.New("agent exited 1 again")); err != nil {
		t.Fatal(err)
	}
	r = te.runOf(id)
	if r.State != thread.RunFailed || r.Failures != 2 || r.Attempt != 2 {
		t.Errorf("failed run = %+v", r)
	}
	if _, err := te.e.Claim(te.ctx, id, "wC", nil); !errors.Is(err, thread.ErrRunFailed) {
		t.Errorf("Claim of a failed run = %v, want ErrRunFailed", err)
	}
	q, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{})
	if err != nil || q.State != thread.RunQueued || q.Failures != 0 || q.Attempt != 0 {
		t.Errorf("re-queued = %+v, %v", q, err)
	}
	log := te.runLog(id)
	if got := log[len(log)-1].Message; got != "requeue" {
		t.Errorf("re-queue logged %q", got)
	}
}

func testConcurrentClaims(t *testing.T, te *tenv) {
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := fmt.Sprintf("w%d", i)
			if _, err := te.e.Claim(te.ctx, id, w, nil); err == nil {
				mu.Lock()
				won = append(won, w)
				mu.Unlock()
			} else if !errors.Is(err, cas.ErrConflict) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("claims won by %q, want exactly one", won)
	}
	if r := te.runOf(id); r.Worker != won[0] || r.Attempt != 1 {
		t.Errorf("run = %+v, want %s's attempt 1", r, won[0])
	}
}

func testNeverQueuedStaysVersion1(t *testing.T, te *tenv) {
	id := te.start()
	id2 := te.start()
	if r := te.runOf(id); r != nil {
		t.Fatal(r)
	}
	if err := te.e.CheckUnleased(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.Kill(te.ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Remove(te.ctx, id2); err != nil {
		t.Fatal(err)
	}
	runs, err := te.e.Runs(te.ctx)
	if err != nil || len(runs) != 0 {
		t.Errorf("Runs = %v, %v", runs, err)
	}
	if v := te.formatVersion(); v != cas.FormatV1 {
		t.Errorf("a store that never queued is at version %d", v)
	}
	for name, err := range te.refs.Logs(te.ctx) {
		if err != nil || strings.HasPrefix(name, thread.RunPrefix) || name == "schemas/run" {
			t.Errorf("log %q, %v in a store that never queued", name, err)
		}
	}
}

func testNotClaimed(t *testing.T, te *tenv) {
	id := te.start()
	q, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := te.e.NotClaimed(te.ctx, q, "wA", "the working folder /tmp/x does not exist here"); !ok || err != nil {
		t.Fatalf("NotClaimed = %v, %v", ok, err)
	}
	r := te.runOf(id)
	if r.WhyNotClaimed != "worker wA: the working folder /tmp/x does not exist here" || r.State != thread.RunQueued {
		t.Errorf("run = %+v", r)
	}
	// Another worker does not overwrite it, nor does wA say it twice.
	for _, w := range []string{"wB", "wA"} {
		why := "cannot build agent claude"
		if w == "wA" {
			why = "the working folder /tmp/x does not exist here"
		}
		if ok, err := te.e.NotClaimed(te.ctx, r, w, why); ok || err != nil {
			t.Errorf("NotClaimed(%s) = %v, %v; want no write", w, ok, err)
		}
	}
	// A claim clears it.
	if _, err := te.e.Claim(te.ctx, id, "wC", nil); err != nil {
		t.Fatal(err)
	}
	if r := te.runOf(id); r.WhyNotClaimed != "" {
		t.Errorf("claimed run still says %q", r.WhyNotClaimed)
	}
}

// TestNestedFences: a context carrying a parent thread's lease and a
// branch's fences each thread's commits with its own lease.
func TestNestedFences(t *testing.T) {
	mem := cas.NewMemStore(nil)
	te := newTEnvOn(t, &clock{t: time.Now().UTC()}, mem, mem.Refs())
	parent, branch := te.start(), te.start()
	lp, err := te.e.Acquire(te.ctx, parent, "parent-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	pctx, stopP := lp.Keep(te.ctx)
	defer stopP()
	lb, err := te.e.Acquire(pctx, branch, "branch-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	bctx, stopB := lb.Keep(pctx)
	defer stopB()
	for id, who := range map[string]string{parent: "parent-runner", branch: "branch-runner"} {
		h := te.stepAfter(te.e, te.head(id), "r1")
		if err := te.e.Commit(bctx, id, h, "step r1"); err != nil {
			t.Fatal(err)
		}
		log, _ := te.e.Log(te.ctx, id)
		if got, want := log[len(log)-1].Message, "step r1 (worker "+who+" attempt 1)"; got != want {
			t.Errorf("thread %s: commit logged %q, want %q", id, got, want)
		}
	}
	// The branch's lease dropped: its commits stop, the parent's go on
	// under a context that does not carry the branch.
	if _, err := te.e.DropRun(te.ctx, branch, "test"); err != nil {
		t.Fatal(err)
	}
	waitLost(t, lb)
	h := te.stepAfter(te.e, te.head(branch), "r2")
	if err := te.e.Commit(context.WithoutCancel(bctx), branch, h, "step r2"); !errors.Is(err, thread.ErrLeaseLost) {
		t.Errorf("commit of the dropped branch = %v, want ErrLeaseLost", err)
	}
	h = te.stepAfter(te.e, te.head(parent), "r2")
	if err := te.e.Commit(context.WithoutCancel(bctx), parent, h, "step r2"); err != nil {
		t.Errorf("commit of the parent under its live lease = %v", err)
	}
}

func waitLost(t *testing.T, l *thread.Lease) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not seen lost within 10 s")
	}
}

// testTakeoverLimitFails: a run whose every holder dies (a poison pill)
// is taken over up to MaxTakeovers times; the claim after that fails the
// run, visibly and for good, until it is queued again with its counts
// reset.
func testTakeoverLimitFails(t *testing.T, te *tenv) {
	id := te.start()
	if _, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{Agent: "synth"}); err != nil {
		t.Fatal(err)
	}
	opts := &thread.LeaseOptions{Length: 150 * time.Millisecond, MaxTakeovers: 2}
	// claim waits for the last lease to expire by the store's clock, then
	// claims as worker w.
	claim := func(w string) (*thread.Lease, error) {
		t.Helper()
		for {
			l, err := te.e.Claim(te.ctx, id, w, opts)
			var held *thread.LeaseHeldError
			if !errors.As(err, &held) {
				return l, err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i, w := range []string{"w1", "w2", "w3"} { // a claim, then 2 takeovers: each holder "dies"
		l, err := claim(w)
		if err != nil {
			t.Fatalf("claim %d by %s: %v", i+1, w, err)
		}
		if l.Attempt() != i+1 {
			t.Fatalf("claim %d by %s: attempt %d", i+1, w, l.Attempt())
		}
	}
	_, err := claim("w4")
	if !errors.Is(err, thread.ErrTakeoverLimit) || !errors.Is(err, thread.ErrRunFailed) || !strings.Contains(err.Error(), "taken over 3 times") {
		t.Fatalf("third takeover = %v, want ErrTakeoverLimit saying taken over 3 times", err)
	}
	r := te.runOf(id)
	if r.State != thread.RunFailed || r.Worker != "" || r.Expiry != 0 || r.Attempt != 3 ||
		!strings.Contains(r.Error, "taken over 3 times") || !strings.Contains(r.Error, "uwf thread queue "+id) {
		t.Errorf("run after the limit = %+v", r)
	}
	if got := te.runLog(id); got[len(got)-1].Message != "fail by w4: taken over 3 times" {
		t.Errorf("fail logged %q", got[len(got)-1].Message)
	}
	if _, err := te.e.Claim(te.ctx, id, "w5", opts); !errors.Is(err, thread.ErrRunFailed) {
		t.Errorf("claim of the failed run = %v, want ErrRunFailed", err)
	}
	// Queued again: the count starts afresh, and the takeovers with it.
	q, err := te.e.Enqueue(te.ctx, id, thread.EnqueueOptions{})
	if err != nil || q.State != thread.RunQueued || q.Attempt != 0 || q.Failures != 0 || q.Error != "" || q.Agent != "synth" {
		t.Fatalf("re-queued = %+v, %v", q, err)
	}
	for i, w := range []string{"w6", "w7", "w8"} {
		if l, err := claim(w); err != nil || l.Attempt() != i+1 {
			t.Fatalf("claim %d after re-queueing: %v", i+1, err)
		}
	}
	// A negative cap never fails the run.
	opts.MaxTakeovers = -1
	if l, err := claim("w9"); err != nil || l.Attempt() != 4 {
		t.Fatalf("takeover with no cap: %v", err)
	}
}
