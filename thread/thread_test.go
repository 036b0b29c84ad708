package thread_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/thread"
)

// countingStore counts Get calls: node reads. If fail is set, Get returns
// its error for the hashes it names (nil for the others).
type countingStore struct {
	cas.Store
	gets atomic.Int64
	fail func(h cas.Hash) error
}

func (s *countingStore) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	s.gets.Add(1)
	if s.fail != nil {
		if err := s.fail(h); err != nil {
			return nil, err
		}
	}
	return s.Store.Get(ctx, h)
}

// derivedStore is a countingStore that keeps its store's [cas.Derived]
// cache.
type derivedStore struct {
	*countingStore
	cas.Derived
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type tenv struct {
	t     *testing.T
	ctx   context.Context
	clock *clock // the engine's clock (and the memory store's)
	st    cas.Store
	refs  cas.Refs
	cnt   *countingStore
	repo  *cas.Repo
	e     *thread.Engine
	wf    cas.Hash
	out   cas.Hash // a shared output node
	det   cas.Hash // a shared detail node
	ids   atomic.Uint64
}

// newTEnv returns a test environment over a memory store whose clock is
// the test's.
func newTEnv(t *testing.T) *tenv {
	t.Helper()
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	return newTEnvOn(t, c, mem, mem.Refs())
}

// newTEnvOn returns a test environment over any backend; the store is
// re-hashed when the test ends.
func newTEnvOn(t *testing.T, c *clock, st cas.Store, refs cas.Refs) *tenv {
	t.Helper()
	cnt := &countingStore{Store: st}
	var through cas.Store = cnt
	if d, ok := st.(cas.Derived); ok {
		// Keep the store's derived cache visible through the wrapper.
		through = derivedStore{cnt, d}
	}
	repo, err := cas.Open(t.Context(), through, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	te := &tenv{t: t, ctx: t.Context(), clock: c, st: st, refs: refs, cnt: cnt, repo: repo}
	te.e = te.engine()
	te.wf = te.put(cas.WorkflowSchema, map[string]any{"name": "test", "roles": map[string]any{}, "graph": map[string]any{}})
	te.out = te.put(cas.ContentSchema, "output")
	raw := te.put(cas.ContentSchema, "---\nstatus: done\n---\nthe body")
	d := &thread.Detail{Prompt: te.put(cas.ContentSchema, "prompt"), Raw: raw, EdgePrompt: "do it", ExitCode: 0, DurationMs: 5}
	te.det = te.put(cas.DetailSchema, d.Payload())
	t.Cleanup(func() { castest.Verify(t, st) })
	return te
}

// engine returns a new engine (cold cache) with a fixed clock and IDs.
func (te *tenv) engine() *thread.Engine {
	return thread.New(te.repo, &thread.Options{Now: te.clock.Now, NewID: func() ulid.ULID {
		n := te.ids.Add(1)
		return ulid.MustNew(uint64(te.clock.Now().UnixMilli())+n, nil)
	}})
}

func (te *tenv) put(typ cas.Hash, payload any) cas.Hash {
	te.t.Helper()
	h, err := te.repo.Put(te.ctx, typ, payload)
	if err != nil {
		te.t.Fatal(err)
	}
	return h
}

func (te *tenv) start() string {
	te.t.Helper()
	id, _, err := te.e.Start(te.ctx, te.wf, fmt.Sprintf("prompt %d", te.ids.Load()), "/tmp")
	if err != nil {
		te.t.Fatal(err)
	}
	return id
}

func (te *tenv) head(id string) cas.Hash {
	te.t.Helper()
	h, err := te.e.Head(te.ctx, id)
	if err != nil {
		te.t.Fatal(err)
	}
	return h
}

// stepAfter stores a step following head, without committing it.
func (te *tenv) stepAfter(e *thread.Engine, head cas.Hash, role string) cas.Hash {
	te.t.Helper()
	c, err := e.Next(te.ctx, head)
	if err != nil {
		te.t.Fatal(err)
	}
	s := &thread.Step{Chain: c, Role: role, Output: te.out, Detail: te.det, Agent: "test", StartedAt: 1, CompletedAt: 2}
	return te.put(cas.StepSchema, s.Payload())
}

// step appends a step to thread id.
func (te *tenv) step(id, role string) cas.Hash {
	te.t.Helper()
	h := te.stepAfter(te.e, te.head(id), role)
	if err := te.e.Commit(te.ctx, id, h, "step "+role); err != nil {
		te.t.Fatal(err)
	}
	return h
}

// chain starts a thread and appends n steps; it returns the id and the
// hash at every depth (index 0: the start node).
func (te *tenv) chain(n int) (string, []cas.Hash) {
	te.t.Helper()
	id := te.start()
	hs := []cas.Hash{te.head(id)}
	for i := 1; i <= n; i++ {
		hs = append(hs, te.step(id, fmt.Sprintf("r%d", i%3)))
	}
	return id, hs
}

// fastChain builds a thread of n steps straight into the memory store
// (no validation, one ref move at the end): for the big-thread tests.
func (te *tenv) fastChain(n int) (string, []cas.Hash) {
	te.t.Helper()
	id := te.start()
	hs := []cas.Hash{te.head(id)}
	for i := 1; i <= n; i++ {
		c, err := te.e.Next(te.ctx, hs[i-1])
		if err != nil {
			te.t.Fatal(err)
		}
		s := &thread.Step{Chain: c, Role: fmt.Sprintf("r%d", i%3), Output: te.out, Detail: te.det, Agent: "test", StartedAt: 1, CompletedAt: 2}
		data, err := cas.Node{Type: cas.StepSchema, Payload: s.Payload()}.Encode()
		if err != nil {
			te.t.Fatal(err)
		}
		h, err := te.st.Put(te.ctx, data)
		if err != nil {
			te.t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if err := te.refs.CompareAndSwap(te.ctx, "threads/"+id, hs[0], hs[n], "fast"); err != nil {
		te.t.Fatal(err)
	}
	return id, hs
}

func TestSkipPointers(t *testing.T) { testSkipPointers(t, newTEnv(t)) }

func testSkipPointers(t *testing.T, te *tenv) {
	_, hs := te.fastChain(2100)
	for d := 1; d < len(hs); d++ {
		n, err := te.e.Node(te.ctx, hs[d])
		if err != nil {
			t.Fatal(err)
		}
		c := n.Chain()
		var want []cas.Hash
		for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
			want = append(want, hs[d-(1<<k)])
		}
		if c.Depth != d || !slices.Equal(c.Skip, want) {
			t.Fatalf("node at depth %d: depth %d, skip %v; want skip %v", d, c.Depth, c.Skip, want)
		}
		wantPrev := cas.Hash(0)
		if d > 1 {
			wantPrev = hs[d-1]
		}
		if c.Prev != wantPrev || c.Start != hs[0] {
			t.Fatalf("node at depth %d: prev %v start %v", d, c.Prev, c.Start)
		}
	}
	rep, err := te.repo.Fsck(te.ctx, thread.FsckOptions())
	if err != nil || !rep.OK() {
		t.Fatalf("fsck: %v %v", err, rep.Problems)
	}
}

func TestAncestor(t *testing.T) { testAncestor(t, newTEnv(t)) }

func testAncestor(t *testing.T, te *tenv) {
	_, hs := te.fastChain(3000)
	head := hs[len(hs)-1]
	for _, depth := range []int{0, 1, 2, 3, 500, 951, 1024, 1025, 2047, 2999, 3000} {
		e := te.engine() // cold cache: count real reads
		before := te.cnt.gets.Load()
		n, err := e.Ancestor(te.ctx, head, depth)
		if err != nil || n.Hash != hs[depth] {
			t.Fatalf("Ancestor(head, %d) = %v, %v; want %v", depth, n, err, hs[depth])
		}
		reads := int(te.cnt.gets.Load() - before)
		dist := 3000 - depth
		limit := dist/1024 + 12
		if dist > 0 && dist <= 2048 {
			limit = 2*bits.Len(uint(dist)) + 1
		}
		if reads > limit {
			t.Errorf("Ancestor(head, %d): %d reads, want at most %d", depth, reads, limit)
		}
	}
	if _, err := te.e.Ancestor(te.ctx, head, 3001); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Ancestor beyond the head = %v, want ErrNotFound", err)
	}
}

func TestIterators(t *testing.T) { testIterators(t, newTEnv(t)) }

func testIterators(t *testing.T, te *tenv) {
	_, hs := te.fastChain(2500)
	head := hs[len(hs)-1]
	var newest []cas.Hash
	for n, err := range te.engine().NewestFirst(te.ctx, head) {
		if err != nil {
			t.Fatal(err)
		}
		newest = append(newest, n.Hash)
	}
	rev := slices.Clone(hs)
	slices.Reverse(rev)
	if !slices.Equal(newest, rev) {
		t.Errorf("NewestFirst: %d nodes, not the chain reversed", len(newest))
	}
	var oldest []cas.Hash
	e := te.engine()
	before := te.cnt.gets.Load()
	for n, err := range e.OldestFirst(te.ctx, head) {
		if err != nil {
			t.Fatal(err)
		}
		oldest = append(oldest, n.Hash)
	}
	if !slices.Equal(oldest, hs) {
		t.Errorf("OldestFirst: %d nodes, not the chain in order", len(oldest))
	}
	if reads := te.cnt.gets.Load() - before; reads > int64(len(hs))+40 {
		t.Errorf("OldestFirst read %d nodes for a chain of %d", reads, len(hs))
	}
}

func TestCommitConflicts(t *testing.T) { testCommitConflicts(t, newTEnv(t)) }

func testCommitConflicts(t *testing.T, te *tenv) {
	id := te.start()
	start := te.head(id)
	// The very first commit after start works (it swaps from the start).
	a := te.stepAfter(te.e, start, "a")
	b := te.stepAfter(te.e, start, "b")
	if err := te.e.Commit(te.ctx, id, a, "step a"); err != nil {
		t.Fatal(err)
	}
	err := te.e.Commit(te.ctx, id, b, "step b")
	var ce *thread.ConflictError
	if !errors.As(err, &ce) || ce.Current != a || ce.Expected != start || !errors.Is(err, cas.ErrConflict) {
		t.Fatalf("second commit from the same prev = %v, want a ConflictError naming %v", err, a)
	}
	// A fork at the start node: its first commit works too.
	f, err := te.e.Fork(te.ctx, start, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := te.e.Commit(te.ctx, f, b, "step b"); err != nil {
		t.Errorf("first commit after a fork at the start: %v", err)
	}
	log, err := te.e.Log(te.ctx, f)
	if err != nil || len(log) != 2 || log[0].Message != "fork from "+id+"@"+start.String() || log[1].Message != "step b" {
		t.Errorf("fork log = %v, %v", log, err)
	}
}

func TestConcurrentCommits(t *testing.T) { testConcurrentCommits(t, newTEnv(t)) }

func testConcurrentCommits(t *testing.T, te *tenv) {
	id := te.start()
	var wins, losses atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := te.engine()
			for i := range 25 {
				head, err := e.Head(te.ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				c, err := e.Next(te.ctx, head)
				if err != nil {
					t.Error(err)
					return
				}
				s := &thread.Step{Chain: c, Role: fmt.Sprintf("g%d", g), Output: te.out, Detail: te.det, Agent: "test", StartedAt: int64(i)}
				h, err := te.repo.Put(te.ctx, cas.StepSchema, s.Payload())
				if err != nil {
					t.Error(err)
					return
				}
				err = e.Commit(te.ctx, id, h, "step")
				var ce *thread.ConflictError
				switch {
				case err == nil:
					wins.Add(1)
				case errors.As(err, &ce):
					losses.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	head := te.head(id)
	n, _ := te.e.Node(te.ctx, head)
	if int64(n.Depth()) != wins.Load() || wins.Load()+losses.Load() != 200 || wins.Load() == 0 {
		t.Errorf("depth %d, wins %d, losses %d", n.Depth(), wins.Load(), losses.Load())
	}
	depth := n.Depth()
	for n, err := range te.e.NewestFirst(te.ctx, head) {
		if err != nil || n.Depth() != depth {
			t.Fatalf("chain not linear at %v: depth %d, want %d (%v)", n, n.Depth(), depth, err)
		}
		depth--
	}
	log, _ := te.e.Log(te.ctx, id)
	if len(log) != int(wins.Load())+1 {
		t.Errorf("log has %d entries, want %d", len(log), wins.Load()+1)
	}
}

func TestForkSharesPrefix(t *testing.T) {
	te := newTEnv(t)
	id, hs := te.chain(4)
	f1, at, err := te.e.ForkAt(te.ctx, id, 2)
	if err != nil || at != hs[2] {
		t.Fatalf("ForkAt = %v, %v, %v", f1, at, err)
	}
	te.step(f1, "x")
	f2, _, err := te.e.ForkAt(te.ctx, f1, 3) // a fork of a fork
	if err != nil {
		t.Fatal(err)
	}
	te.step(f2, "y")
	for _, fid := range []string{f1, f2} {
		for d := 0; d <= 2; d++ {
			n, err := te.e.Ancestor(te.ctx, te.head(fid), d)
			if err != nil || n.Hash != hs[d] {
				t.Errorf("fork %s at depth %d = %v, want the shared %v", fid, d, n, hs[d])
			}
		}
	}
	info, err := te.e.Show(te.ctx, f2)
	if err != nil || !info.Origin.Forked || info.Origin.ForkThread != f1 || info.Origin.Depth != 3 || info.Depth != 4 {
		t.Errorf("Show(fork of fork) = %+v, %v", info, err)
	}
	// After rm of one fork and GC past grace and retention, only that
	// fork's own nodes are gone.
	f1Own := te.head(f1)
	f2Own := te.head(f2)
	if err := te.e.Remove(te.ctx, f2); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(cas.DefaultLogRetention + 2*time.Hour)
	if _, err := te.repo.GC(te.ctx, nil); err != nil {
		t.Fatal(err)
	}
	has := func(h cas.Hash) bool { ok, _ := te.st.Has(te.ctx, h); return ok }
	if has(f2Own) {
		t.Error("the removed fork's own step survived GC")
	}
	for _, h := range append(slices.Clone(hs), f1Own) {
		if !has(h) {
			t.Errorf("%v, shared or the other fork's, was deleted", h)
		}
	}
	if _, err := te.e.Head(te.ctx, f2); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Head(removed) = %v, want ErrNotFound", err)
	}
}

func TestMarksAndStatus(t *testing.T) { testMarksAndStatus(t, newTEnv(t)) }

func testMarksAndStatus(t *testing.T, te *tenv) {
	id, _ := te.chain(2)
	if _, err := te.e.Resume(te.ctx, id, ""); !errors.Is(err, thread.ErrNotActive) {
		t.Errorf("Resume(active, no text) = %v, want ErrNotActive", err)
	}
	if _, err := te.e.Kill(te.ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	info, _ := te.e.Show(te.ctx, id)
	if info.Status != thread.StatusKilled || info.Depth != 3 {
		t.Errorf("after kill: %+v", info)
	}
	if _, err := te.e.Kill(te.ctx, id, ""); !errors.Is(err, thread.ErrNotActive) {
		t.Errorf("Kill(killed) = %v, want ErrNotActive", err)
	}
	if _, err := te.e.Resume(te.ctx, id, "try again"); err != nil {
		t.Fatal(err)
	}
	info, _ = te.e.Show(te.ctx, id)
	if info.Status != thread.StatusActive || info.Depth != 4 {
		t.Errorf("after resume: %+v", info)
	}
	log, _ := te.e.Log(te.ctx, id)
	var msgs []string
	for _, e := range log {
		msgs = append(msgs, e.Message)
	}
	want := []string{"start", "step r1", "step r2", "mark killed", "mark resumed"}
	if !slices.Equal(msgs, want) {
		t.Errorf("log messages %q, want %q", msgs, want)
	}
	if _, err := te.e.Head(te.ctx, "not-a-ulid"); !errors.Is(err, cas.ErrInvalidRefName) {
		t.Errorf("Head(bad id) = %v, want ErrInvalidRefName", err)
	}

	// A user's suspend pauses an active thread; a step is refused until a
	// resume; only an active thread can be suspended.
	if _, err := te.e.Suspend(te.ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	info, _ = te.e.Show(te.ctx, id)
	if info.Status != thread.StatusSuspended || info.Depth != 5 {
		t.Errorf("after suspend: %+v", info)
	}
	head, _ := te.e.Head(te.ctx, id)
	if n, err := te.e.Node(te.ctx, head); err != nil || n.Mark.Reason != "suspended by the user" {
		t.Errorf("suspend mark = %+v, %v; want the default reason", n, err)
	}
	if _, err := te.e.Suspend(te.ctx, id, "again"); !errors.Is(err, thread.ErrNotActive) {
		t.Errorf("Suspend(suspended) = %v, want ErrNotActive", err)
	}
	if _, err := te.e.Step(te.ctx, id, &thread.RunOptions{Agent: "synth"}); !errors.Is(err, thread.ErrNotActive) {
		t.Errorf("Step(suspended) = %v, want ErrNotActive", err)
	}
	if _, err := te.e.Resume(te.ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if info, _ = te.e.Show(te.ctx, id); info.Status != thread.StatusActive {
		t.Errorf("after resuming a suspend: %+v", info)
	}
}

func TestList(t *testing.T) { testList(t, newTEnv(t)) }

func testList(t *testing.T, te *tenv) {
	var ids []string
	for i := range 5 {
		te.clock.Advance(time.Second)
		id, _ := te.chain(i % 2)
		ids = append(ids, id)
	}
	te.e.Kill(te.ctx, ids[1], "")
	te.e.Kill(te.ctx, ids[3], "")
	all, err := te.e.List(te.ctx, thread.ListOptions{})
	if err != nil || len(all) != 5 || all[0].ID != ids[4] || all[4].ID != ids[0] {
		t.Fatalf("List = %v, %v; want newest first", all, err)
	}
	page, _ := te.e.List(te.ctx, thread.ListOptions{Limit: 2, Offset: 1})
	if len(page) != 2 || page[0].ID != ids[3] || page[1].ID != ids[2] {
		t.Errorf("List(limit 2, offset 1) = %v", page)
	}
	killed, _ := te.e.List(te.ctx, thread.ListOptions{Status: thread.StatusKilled, Offset: 1})
	if len(killed) != 1 || killed[0].ID != ids[1] || killed[0].WorkflowName != "test" {
		t.Errorf("List(killed, offset 1) = %+v", killed)
	}
}

// TestListUnreadable: a thread whose head is of a kind the engine does not
// read is listed with its error, in its place, and the others as usual.
func TestListUnreadable(t *testing.T) {
	te := newTEnv(t)
	te.clock.Advance(time.Second)
	good, _ := te.chain(1)
	odd := te.put(cas.ContentSchema, "not a chain node")
	const bad = "01JGJFGR4E00000000000000ZZ" // older than good
	if err := te.repo.Refs().CompareAndSwap(te.ctx, thread.ThreadPrefix+bad, 0, odd, "test"); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []thread.ListOptions{{}, {Status: thread.StatusActive}, {Limit: 2}} {
		list, err := te.e.List(te.ctx, opts)
		if err != nil || len(list) != 2 {
			t.Fatalf("List(%+v) = %v, %v; want both threads", opts, list, err)
		}
		if list[0].ID != good || list[0].Err != nil || list[0].Status != thread.StatusActive {
			t.Errorf("List(%+v)[0] = %+v, want %s, active", opts, list[0], good)
		}
		if list[1].ID != bad || list[1].Head != odd || !errors.Is(list[1].Err, cas.ErrInvalid) || list[1].Status != "" {
			t.Errorf("List(%+v)[1] = %+v, want %s with an ErrInvalid error", opts, list[1], bad)
		}
	}
}

func TestReadQuotaAndPaging(t *testing.T) { testReadQuotaAndPaging(t, newTEnv(t)) }

func testReadQuotaAndPaging(t *testing.T, te *tenv) {
	id, hs := te.chain(40)
	r, err := te.e.Read(te.ctx, id, thread.ReadOptions{Quota: 600})
	if err != nil {
		t.Fatal(err)
	}
	if !r.More || r.Shown == 0 || r.Shown >= 41 || r.Entries[len(r.Entries)-1] != hs[40] {
		t.Fatalf("Read(quota 600): shown %d, more %v", r.Shown, r.More)
	}
	for _, want := range []string{"# Thread " + id, "workflow: test", "--before " + r.Oldest.String(), "> do it", "the body", "## 40 · r1 · agent test"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("Read output lacks %q:\n%s", want, r.Text)
		}
	}
	// Paging back covers every entry once, oldest page last.
	seen := slices.Clone(r.Entries)
	for r.More {
		if r, err = te.e.Read(te.ctx, id, thread.ReadOptions{Quota: 600, Before: r.Oldest}); err != nil {
			t.Fatal(err)
		}
		seen = append(slices.Clone(r.Entries), seen...)
	}
	if !slices.Equal(seen, hs) {
		t.Errorf("pages cover %d entries, want the %d of the chain in order", len(seen), len(hs))
	}
	if !strings.Contains(r.Text, "## 0 · start") {
		t.Errorf("the last page lacks the start:\n%s", r.Text)
	}
}

func TestReadReadsLittle(t *testing.T) {
	te := newTEnv(t)
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	id, _ := te.fastChain(n)
	before := te.cnt.gets.Load()
	r, err := te.engine().Read(te.ctx, id, thread.ReadOptions{Quota: 4000})
	if err != nil {
		t.Fatal(err)
	}
	reads := int(te.cnt.gets.Load() - before)
	// Each step shown prints four nodes: the step, its detail, its output
	// and its raw output.
	printed := 4 * r.Shown
	limit := printed + 2*int(math.Ceil(math.Log2(float64(n)))) + 5
	if reads > limit {
		t.Errorf("Read of a %d-step thread: %d reads for %d entries shown, want at most %d", n, reads, r.Shown, limit)
	}
}

func TestFsckChainChecks(t *testing.T) { testFsckChainChecks(t, newTEnv(t)) }

func testFsckChainChecks(t *testing.T, te *tenv) {
	id, hs := te.chain(5)
	// A step whose depth and skip pointers are wrong.
	bad := &thread.Step{Chain: thread.Chain{Start: hs[0], Prev: hs[5], Skip: []cas.Hash{hs[2]}, Depth: 9},
		Role: "x", Output: te.out, Detail: te.det, Agent: "a"}
	bh := te.put(cas.StepSchema, bad.Payload())
	if err := te.repo.Refs().CompareAndSwap(te.ctx, "threads/"+id, hs[5], bh, "tamper"); err != nil {
		t.Fatal(err)
	}
	// A step whose skip pointers are those derivable, but the derivation
	// breaks (its depth is wrong, so an ancestor lacks a pointer).
	id2, hs2 := te.chain(5)
	cut := &thread.Step{Chain: thread.Chain{Start: hs2[0], Prev: hs2[5], Skip: []cas.Hash{hs2[4], hs2[2]}, Depth: 9},
		Role: "x", Output: te.out, Detail: te.det, Agent: "b"}
	ch := te.put(cas.StepSchema, cut.Payload())
	if err := te.repo.Refs().CompareAndSwap(te.ctx, "threads/"+id2, hs2[5], ch, "tamper"); err != nil {
		t.Fatal(err)
	}
	// A thread ref pointing at a content node.
	if err := te.repo.Refs().CompareAndSwap(te.ctx, "threads/01ARZ3NDEKTSV4RRFFQ69G5FAV", 0, te.out, "tamper"); err != nil {
		t.Fatal(err)
	}
	rep, err := te.repo.Fsck(te.ctx, thread.FsckOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.String())
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		bh.String() + ": chain: depth 9 does not follow prev " + hs[5].String() + " at depth 5 (reached from threads/" + id + ")",
		bh.String() + ": chain: skip pointers [" + hs[2].String() + "], want [" + hs[4].String() + " " + hs[2].String() + "]",
		ch.String() + ": chain: skip pointers [" + hs2[4].String() + " " + hs2[2].String() + "] cannot be checked: cas: invalid: " + hs2[2].String() + ": depth 2 but no ancestor at distance 4",
		"ref threads/01ARZ3NDEKTSV4RRFFQ69G5FAV -> " + te.out.String() + ": ref: points at a node of type",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("fsck lacks %q:\n%s", want, text)
		}
	}
}

// alwaysConflicting makes every delete of a threads/ ref lose a race.
type alwaysConflicting struct{ cas.Refs }

func (r alwaysConflicting) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, msg string) error {
	if new.IsZero() && strings.HasPrefix(name, thread.ThreadPrefix) {
		return &cas.ConflictError{Name: name, Expected: old, Current: old + 1}
	}
	return r.Refs.CompareAndSwap(ctx, name, old, new, msg)
}

// TestRemoveErrors: Remove reports a thread that keeps moving, and an
// absent thread; it still cleans a failures ref left behind.
func TestRemoveErrors(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	te := newTEnvOn(t, c, mem, alwaysConflicting{mem.Refs()})
	id := te.start()
	if err := te.e.Remove(te.ctx, id); !errors.Is(err, cas.ErrConflict) {
		t.Errorf("Remove of a thread that keeps moving = %v, want a conflict", err)
	}
	other := thread.New(te.repo, nil)
	if err := other.Remove(te.ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Remove of an absent thread = %v, want ErrNotFound", err)
	}
	orphan := "01ARZ3NDEKTSV4RRFFQ69G5FAW"
	if err := te.repo.Refs().CompareAndSwap(te.ctx, thread.FailurePrefix+orphan, 0, te.out, "failure"); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Remove(te.ctx, orphan); err != nil {
		t.Errorf("Remove of a thread whose failures ref was left behind = %v", err)
	}
	if _, err := te.refs.Get(te.ctx, thread.FailurePrefix+orphan); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("the orphan failures ref is still there: %v", err)
	}
}

// TestReadBeforeOtherFork: --before must name a node of the thread's own
// chain, not of a fork sharing its start.
func TestReadBeforeOtherFork(t *testing.T) {
	te := newTEnv(t)
	a, hs := te.chain(3)
	b, err := te.e.Fork(te.ctx, hs[1], a)
	if err != nil {
		t.Fatal(err)
	}
	te.step(b, "x")
	theirs := te.step(b, "y")
	if _, err := te.e.Read(te.ctx, a, thread.ReadOptions{Before: theirs}); !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("read --before a node of a sibling fork = %v, want ErrInvalid", err)
	}
	if _, err := te.e.Read(te.ctx, a, thread.ReadOptions{Before: hs[2]}); err != nil {
		t.Errorf("read --before its own node: %v", err)
	}
}
