package castest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// gcTests are the GC interleaving tests: [cas.Repo.GC] over the backend,
// with a writer acting at a chosen point of the sweep. Each runs on a fresh
// store and refs and ends with a clean fsck.
var gcTests = []struct {
	name string
	f    func(t *testing.T, g *gcEnv)
}{
	{"WriterLinksBeforeBatch1", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "link", 1) }},
	{"WriterLinksBeforeBatch2", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "link", 2) }},
	{"RefMovesBeforeBatch1", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "ref", 1) }},
	{"RefMovesBeforeBatch2", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "ref", 2) }},
	{"ForkBeforeBatch1", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "fork", 1) }},
	{"ForkBeforeBatch2", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "fork", 2) }},
	{"DirectWriterLinksBeforeBatch1", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "direct-link", 1) }},
	{"DirectWriterLinksBeforeBatch2", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "direct-link", 2) }},
	{"DirectRefMovesBeforeBatch1", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "direct-move", 1) }},
	{"DirectRefMovesBeforeBatch2", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "direct-move", 2) }},
	{"DirectPutMoveBeforeBatch1", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "direct-put-move", 1) }},
	{"DirectPutMoveBeforeBatch2", func(t *testing.T, g *gcEnv) { g.writerBeforeBatch(t, "direct-put-move", 2) }},
	{"GetFailsOnceWhileOrdering", testGCGetFailsWhileOrdering},
	{"CorruptCandidateGoesFirst", func(t *testing.T, g *gcEnv) { g.corruptCandidate(t, false) }},
	{"CorruptCandidateRefreshed", func(t *testing.T, g *gcEnv) { g.corruptCandidate(t, true) }},
	{"PrefixLogRetention", testGCPrefixLogRetention},
	{"DropsOrphanDerived", testGCDropsOrphanDerived},
}

// RunGC runs the GC interleaving tests against backends made by open, a
// fresh, empty store and its refs for each subtest ([Run] runs them too).
// Each builds two aged, unreferenced nodes n -> g (GC's "no grace" makes
// anything put before it began old enough), runs GC with a batch size of
// one (n goes in batch 1, g in batch 2), and before a chosen batch lets a
// writer put a node linking [g, n], move a ref onto n, or fork from n (a
// new node linking n, and a ref on it). Before batch 1 the writer must
// succeed and keep n and g; before batch 2 it must fail with an error
// wrapping [cas.ErrNotFound], changing nothing. The same runs with a
// writer on a repo over the backend itself, so it takes the backend's fast
// paths ([cas.LinkedPutter], [cas.TouchingSwapper], [cas.LinkedSwapper]):
// a put linking [g, n], a move of an existing ref onto n, and a put of a
// node linking [g, n] with a move of an existing ref onto it in one
// ([cas.Repo.PutNodesMove]); a failing move leaves the ref where it was. Another test fails one Get
// of n while GC orders its candidates: GC must stop having deleted
// nothing, and the next GC collect both. On a store that implements
// [Corrupter], n is damaged: GC must delete it before g (its edges are
// unknown), or, if a writer refreshes it first, stop having deleted nothing.
// Another gives refs under runs/ no log retention: the values their
// pruned log entries named go, the ref's target and the other refs'
// logged values stay. Another fills the backend's derived cache
// ([cas.Derived], or a memory one if it keeps none): GC drops the entries
// of the nodes it sweeps, of a node never stored and of a ref that does
// not exist, and keeps those of a reachable node, of a node a writer puts
// during the sweep, of a live ref and of keys naming neither (a dry run
// counts the same and drops nothing). After each, fsck finds nothing wrong.
func RunGC(t *testing.T, open func(t *testing.T) (cas.Store, cas.Refs)) {
	t.Helper()
	for _, tc := range gcTests {
		t.Run(tc.name, func(t *testing.T) {
			s, r := open(t)
			t.Cleanup(func() { Verify(t, s) })
			tc.f(t, newGCEnv(t, s, r))
		})
	}
}

// gcHookStore calls before(k) before the k-th exclusive Lock (k = 1 is GC's
// barrier before its mark, k = 2 the first sweep batch, ...).
type gcHookStore struct {
	cas.Store
	mu     sync.Mutex
	n      int
	before func(k int)
}

func (s *gcHookStore) Lock(ctx context.Context, exclusive bool) (func(), error) {
	if exclusive {
		s.mu.Lock()
		s.n++
		k, f := s.n, s.before
		s.mu.Unlock()
		if f != nil {
			f(k)
		}
	}
	return s.Store.Lock(ctx, exclusive)
}

// gcEnv is one GC interleaving test's store: a repo over a hooked (and,
// optionally, faulty) backend, and the aged nodes n -> g.
type gcEnv struct {
	st    cas.Store // the backend
	refs  cas.Refs  // its refs
	hook  *gcHookStore
	fault *FaultyStore
	repo  *cas.Repo
	// direct is a repo on the backend itself, for a writer that takes the
	// backend's fast paths (cas.LinkedPutter, cas.TouchingSwapper), which
	// the wrapped stores hide.
	direct *cas.Repo
	link   cas.Hash // the schema: {name, links: [cas_ref]}
	n, g   cas.Hash
	m      cas.Hash // the node ref castest/moving points at, reachable
}

const linkSchema = `{"type":"object","properties":{"name":{"type":"string"},` +
	`"links":{"type":"array","items":{"type":"string","format":"cas_ref"}}},"required":["name"],"additionalProperties":false}`

func newGCEnv(t *testing.T, s cas.Store, r cas.Refs) *gcEnv {
	t.Helper()
	ctx := t.Context()
	g := &gcEnv{st: s, refs: r}
	g.fault = &FaultyStore{Store: s}
	g.hook = &gcHookStore{Store: g.fault}
	repo, err := cas.Open(ctx, g.hook, r, nil)
	if err != nil {
		t.Fatalf("cas.Open: %v", err)
	}
	g.repo = repo
	if g.direct, err = cas.Open(ctx, s, r, nil); err != nil {
		t.Fatalf("cas.Open: %v", err)
	}
	doc, err := cas.ParseJSON([]byte(linkSchema))
	if err != nil {
		t.Fatal(err)
	}
	if g.link, err = repo.PutSchema(ctx, "castest-link", doc); err != nil {
		t.Fatalf("PutSchema: %v", err)
	}
	g.g = g.put(t, "g")
	g.n = g.put(t, "n", g.g)
	g.m = g.put(t, "m")
	if err := repo.Refs().CompareAndSwap(ctx, "castest/moving", 0, g.m, "create"); err != nil {
		t.Fatalf("create castest/moving: %v", err)
	}
	// Age them: GC with no grace spares only what is touched from the
	// moment it reads the clock, strictly after n's and g's times.
	waitPast(t, s.Now, object(t, s, g.n).Time)
	return g
}

// put stores a link node; it fails t on error.
func (g *gcEnv) put(t *testing.T, name string, links ...cas.Hash) cas.Hash {
	t.Helper()
	h, err := g.putErr(t.Context(), name, links...)
	if err != nil {
		t.Fatalf("Put(%s): %v", name, err)
	}
	return h
}

func (g *gcEnv) putErr(ctx context.Context, name string, links ...cas.Hash) (cas.Hash, error) {
	p := map[string]any{"name": name}
	if len(links) > 0 {
		ls := make([]any, len(links))
		for i, h := range links {
			ls[i] = h.String()
		}
		p["links"] = ls
	}
	return g.repo.Put(ctx, g.link, p)
}

// gc runs GC with no grace and a batch size of one.
func (g *gcEnv) gc(ctx context.Context) (*cas.GCStats, error) {
	return g.repo.GC(ctx, &cas.GCOptions{Grace: -1, BatchSize: 1})
}

func (g *gcEnv) has(t *testing.T, h cas.Hash) bool {
	t.Helper()
	return mustHas(t, g.st, h)
}

// fsckClean fails t on any problem fsck reports.
func (g *gcEnv) fsckClean(t *testing.T) {
	t.Helper()
	rep, err := g.repo.Fsck(t.Context(), nil)
	if err != nil {
		t.Fatalf("Fsck: %v", err)
	}
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
}

// complete fails t unless h and everything it reaches are present.
func (g *gcEnv) complete(t *testing.T, h cas.Hash, what string) {
	t.Helper()
	err := g.repo.Walk(t.Context(), []cas.Hash{h}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil })
	if err != nil {
		t.Errorf("%s %s lost part of its subgraph: %v", what, h, err)
	}
}

// writerBeforeBatch runs GC with the writer's action before sweep batch
// `batch` (1: n is still there; 2: n is gone, g is not).
func (g *gcEnv) writerBeforeBatch(t *testing.T, action string, batch int) {
	ctx := t.Context()
	var (
		ran      bool
		writeErr error
		made     cas.Hash // the writer's node, if it made one
		ref      string   // the writer's ref, if it set one
	)
	g.hook.before = func(k int) {
		if k != batch+1 || ran {
			return
		}
		ran = true
		switch action {
		case "link":
			made, writeErr = g.putErr(ctx, "linker", g.g, g.n)
		case "ref":
			ref = "castest/saved"
			writeErr = g.repo.Refs().CompareAndSwap(ctx, ref, 0, g.n, "save n")
		case "direct-link":
			made, writeErr = g.direct.Put(ctx, g.link, map[string]any{"name": "linker", "links": []any{g.g.String(), g.n.String()}})
		case "direct-move":
			ref = "castest/moving"
			writeErr = g.direct.Refs().CompareAndSwap(ctx, ref, g.m, g.n, "move onto n")
		case "direct-put-move":
			ref = "castest/moving"
			var hs []cas.Hash
			hs, writeErr = g.direct.PutNodesMove(ctx, []cas.Node{{Type: g.link, Payload: map[string]any{"name": "put-move", "links": []any{g.g.String(), g.n.String()}}}},
				ref, g.m, "put and move onto it")
			if len(hs) == 1 {
				made = hs[0]
			}
		case "fork":
			ref = "castest/fork"
			if made, writeErr = g.putErr(ctx, "fork", g.n); writeErr == nil {
				writeErr = g.repo.Refs().CompareAndSwap(ctx, ref, 0, made, "fork from n")
			}
		}
	}
	st, err := g.gc(ctx)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !ran {
		t.Fatalf("the writer never ran: GC took fewer than %d exclusive locks (stats %+v)", batch+1, st)
	}
	switch batch {
	case 1:
		if writeErr != nil {
			t.Fatalf("the writer, before the first batch, failed: %v", writeErr)
		}
		if !g.has(t, g.n) || !g.has(t, g.g) {
			t.Errorf("n present %v, g present %v; want both kept (a writer refers to n)", g.has(t, g.n), g.has(t, g.g))
		}
		if st.Deleted != 0 || st.Spared < 2 {
			t.Errorf("GC stats %+v: want nothing deleted and n's subgraph spared", st)
		}
		if !made.IsZero() {
			g.complete(t, made, "the writer's node")
		}
		if ref != "" {
			h, err := g.repo.Refs().Get(ctx, ref)
			if err != nil {
				t.Fatalf("the writer's ref %s: %v", ref, err)
			}
			g.complete(t, h, "ref "+ref)
		}
	case 2:
		if !errors.Is(writeErr, cas.ErrNotFound) {
			t.Fatalf("the writer, after n was deleted, got %v; want an error wrapping ErrNotFound", writeErr)
		}
		if g.has(t, g.n) {
			t.Error("n survived although nothing referred to it before its batch")
		}
		if action == "direct-move" || action == "direct-put-move" {
			if h, err := g.repo.Refs().Get(ctx, ref); err != nil || h != g.m {
				t.Errorf("the writer's ref %s = %v, %v after a failed move; want %s, unchanged", ref, h, err, g.m)
			}
		} else if ref != "" {
			if h, err := g.repo.Refs().Get(ctx, ref); !errors.Is(err, cas.ErrNotFound) {
				t.Errorf("the writer's ref %s = %v, %v after a failed write; want ErrNotFound", ref, h, err)
			}
		}
		if (action == "link" || action == "direct-link" || action == "direct-put-move") && !g.has(t, g.g) {
			// The writer touched g (its first link) before finding n gone:
			// g was refreshed, so its delete is refused.
			t.Error("g deleted although the writer touched it before its batch")
		}
	}
	g.fsckClean(t)
}

// testGCGetFailsWhileOrdering: a Get of the candidate n fails once (not
// corruption) while GC orders its candidates. n's edges are unknown, so GC
// stops having deleted nothing and names n; the next GC collects n and g.
func testGCGetFailsWhileOrdering(t *testing.T, g *gcEnv) {
	ctx := t.Context()
	var once sync.Once
	g.fault.Fail = func(op string, h cas.Hash) error {
		var err error
		if op == "get" && h == g.n {
			once.Do(func() { err = ErrInjected })
		}
		return err
	}
	st, err := g.gc(ctx)
	if !errors.Is(err, ErrInjected) || !strings.Contains(err.Error(), g.n.String()) || !strings.Contains(err.Error(), "nothing deleted") {
		t.Fatalf("GC with n unreadable = %v; want the injected error, naming %s, and \"nothing deleted\"", err, g.n)
	}
	if st == nil || st.Deleted != 0 {
		t.Errorf("stats %+v: want nothing deleted", st)
	}
	if !g.has(t, g.n) || !g.has(t, g.g) {
		t.Errorf("after the failed GC: n present %v, g present %v; want both", g.has(t, g.n), g.has(t, g.g))
	}
	g.fsckClean(t)
	st, err = g.gc(ctx)
	if err != nil {
		t.Fatalf("the second GC: %v", err)
	}
	if g.has(t, g.n) || g.has(t, g.g) || st.Deleted != 2 {
		t.Errorf("the second GC: %+v, n present %v, g present %v; want both deleted", st, g.has(t, g.n), g.has(t, g.g))
	}
	g.fsckClean(t)
}

// corruptCandidate damages n (its edges are unknown) and runs GC: n must be
// deleted first, then g; or, if refreshed is set (a writer touches n just
// before GC deletes it), GC must stop, naming n, with g still present.
func (g *gcEnv) corruptCandidate(t *testing.T, refreshed bool) {
	ctx := t.Context()
	c, ok := g.st.(Corrupter)
	if !ok {
		t.Skip("the store does not implement castest.Corrupter")
	}
	orig := mustGet(t, g.st, g.n)
	if !c.Corrupt(g.n, []byte("damaged")) {
		t.Fatal("Corrupt: n is absent")
	}
	var mu sync.Mutex
	var deletes []cas.Hash
	g.fault.Fail = func(op string, h cas.Hash) error {
		if op == "delete" {
			mu.Lock()
			deletes = append(deletes, h)
			mu.Unlock()
		}
		return nil
	}
	if refreshed {
		g.hook.before = func(k int) {
			if k == 2 { // the lock GC takes to delete n
				if err := g.st.Touch(ctx, g.n); err != nil {
					t.Errorf("Touch(n): %v", err)
				}
			}
		}
	}
	st, err := g.gc(ctx)
	if !refreshed {
		if err != nil {
			t.Fatalf("GC with n corrupt: %v", err)
		}
		if len(deletes) != 2 || deletes[0] != g.n || deletes[1] != g.g || st.Deleted != 2 {
			t.Errorf("GC deleted %v (stats %+v); want n (%s) first, then g (%s)", deletes, st, g.n, g.g)
		}
		if g.has(t, g.n) || g.has(t, g.g) {
			t.Errorf("after GC: n present %v, g present %v; want neither", g.has(t, g.n), g.has(t, g.g))
		}
		g.fsckClean(t)
		return
	}
	if err == nil || !strings.Contains(err.Error(), g.n.String()) || !strings.Contains(err.Error(), "nothing else deleted") {
		t.Fatalf("GC with n corrupt and refreshed = %v; want an error naming %s and \"nothing else deleted\"", err, g.n)
	}
	if !g.has(t, g.g) || st == nil || st.Deleted != 0 {
		t.Errorf("stats %+v, g present %v; want nothing deleted", st, g.has(t, g.g))
	}
	// The damage is fsck's to report; nothing else is wrong.
	rep, ferr := g.repo.Fsck(ctx, nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	for _, p := range rep.Problems {
		if p.Hash != g.n || p.Kind != cas.ProblemCorrupt {
			t.Errorf("fsck: %s", p)
		}
	}
	// Verify would fail on the damaged n: the right bytes heal it.
	if _, err := g.st.Put(ctx, orig); err != nil {
		t.Fatalf("heal n: %v", err)
	}
}

// testGCPrefixLogRetention: with no log retention for runs/ (and the
// default for the rest), GC collects what only runs/castest's old log
// entries named, prunes its middle entry (keeping its creation and newest
// entries), and keeps every value castest/kept's log names.
func testGCPrefixLogRetention(t *testing.T, g *gcEnv) {
	ctx := t.Context()
	refs := g.repo.Refs()
	run := []cas.Hash{g.put(t, "run 1"), g.put(t, "run 2"), g.put(t, "run 3")}
	kept := []cas.Hash{g.put(t, "kept 1"), g.put(t, "kept 2")}
	set := func(name string, vals []cas.Hash) {
		var old cas.Hash
		for _, v := range vals {
			if err := refs.CompareAndSwap(ctx, name, old, v, "set"); err != nil {
				t.Fatalf("CompareAndSwap(%s): %v", name, err)
			}
			old = v
		}
	}
	set("runs/castest", run)
	set("castest/kept", kept)
	log, err := refs.Log(ctx, "castest/kept")
	if err != nil {
		t.Fatal(err)
	}
	waitPastMilli(t, g.st.Now, log[len(log)-1].Time)
	st, err := g.repo.GC(ctx, &cas.GCOptions{Grace: -1, BatchSize: 1, PrefixLogRetention: map[string]time.Duration{"runs/": -1}})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	for i, h := range run {
		if want := i == 2; g.has(t, h) != want {
			t.Errorf("run value %d present = %v, want %v (only the ref's target stays)", i+1, !want, want)
		}
	}
	for i, h := range kept {
		if !g.has(t, h) {
			t.Errorf("kept value %d was collected, but a young log entry names it", i+1)
		}
	}
	if g.has(t, g.n) || g.has(t, g.g) {
		t.Errorf("n present %v, g present %v; want both collected", g.has(t, g.n), g.has(t, g.g))
	}
	if st.LogEntriesPruned != 1 {
		t.Errorf("LogEntriesPruned = %d, want 1 (the middle entry of runs/castest)", st.LogEntriesPruned)
	}
	if log, err := refs.Log(ctx, "runs/castest"); err != nil || len(log) != 2 || log[0].New != run[0] || log[1].New != run[2] {
		t.Errorf("log of runs/castest = %v, %v; want its creation and newest entries", log, err)
	}
	if log, err := refs.Log(ctx, "castest/kept"); err != nil || len(log) != 2 {
		t.Errorf("log of castest/kept = %v, %v; want both entries", log, err)
	}
	g.fsckClean(t)
}

// derivedHookStore is the hooked store with a derived cache: the
// backend's, so GC judges the entries the backend keeps.
type derivedHookStore struct {
	*gcHookStore
	cas.Derived
}

func testGCDropsOrphanDerived(t *testing.T, g *gcEnv) {
	ctx := t.Context()
	d, ok := g.st.(cas.Derived)
	if !ok {
		d = cas.NewMemStore(nil)
	}
	repo, err := cas.Open(ctx, &derivedHookStore{g.hook, d}, g.refs, nil)
	if err != nil {
		t.Fatalf("cas.Open: %v", err)
	}
	never := cas.Sum([]byte("castest: never stored"))
	chain := func(h cas.Hash) string { return "chain/" + h.String() }
	orphans := []string{chain(g.n), chain(g.g), chain(never), "ref/castest/gone"}
	kept := []string{chain(g.m), "ref/castest/moving", "other/not-a-hash", "chain/" + strings.ToLower(g.n.String())}
	for _, k := range append(slices.Clone(orphans), kept...) {
		if err := d.PutDerived(ctx, k, []byte("entry")); err != nil {
			t.Fatalf("PutDerived(%s): %v", k, err)
		}
	}
	all := append(slices.Clone(orphans), kept...)
	// An entry keyed by a node may be kept with the node (and go with
	// it) rather than listed; one whose node was never stored, and a
	// ref's, can outlive their subject, so they must be listed.
	listed := map[string]bool{}
	for _, k := range derivedKeys(t, d) {
		listed[k] = true
	}
	for _, k := range []string{chain(never), "ref/castest/gone", "ref/castest/moving", "other/not-a-hash"} {
		if !listed[k] {
			t.Errorf("DerivedKeys does not list %s, whose subject is not a stored node", k)
		}
	}
	dropped := 0 // the orphans GC finds by listing
	for _, k := range orphans {
		if listed[k] {
			dropped++
		}
	}
	// present reports which of keys have an entry.
	present := func(keys ...string) []string {
		t.Helper()
		var out []string
		for _, k := range keys {
			_, ok, err := d.GetDerived(ctx, k)
			if err != nil {
				t.Fatalf("GetDerived(%s): %v", k, err)
			}
			if ok {
				out = append(out, k)
			}
		}
		return sorted(out)
	}
	// Fsck counts the entries whose subject is gone now (n and g are
	// still there), as a warning.
	if rep, err := repo.Fsck(ctx, nil); err != nil {
		t.Errorf("Fsck: %v", err)
	} else if rep.OrphanDerived != 2 || !rep.OK() {
		t.Errorf("Fsck: %v, orphan derived-cache entries %d, problems %v; want 2 (never's, castest/gone's) and no problem", err, rep.OrphanDerived, rep.Problems)
	}
	st, err := repo.GC(ctx, &cas.GCOptions{Grace: -1, BatchSize: 1, DryRun: true})
	if err != nil {
		t.Fatalf("GC --dry-run: %v", err)
	}
	if st.DerivedDropped != dropped || len(st.Failures) > 0 {
		t.Errorf("GC --dry-run: %d derived-cache entries would go (failures %v), want %d", st.DerivedDropped, st.Failures, dropped)
	}
	if got := present(all...); !slices.Equal(got, sorted(all)) {
		t.Fatalf("after a dry run the cache holds %q, want all of %q", got, sorted(all))
	}

	// A writer puts a node and its entry after GC listed the objects: the
	// entry is kept (its node is present when GC looks).
	var late cas.Hash
	g.hook.mu.Lock()
	g.hook.n = 0 // count this GC's exclusive locks: 1 its barrier, 2 its first sweep batch
	g.hook.mu.Unlock()
	g.hook.before = func(k int) {
		if k != 2 || !late.IsZero() {
			return
		}
		var err error
		if late, err = g.direct.Put(ctx, g.link, map[string]any{"name": "late"}); err != nil {
			t.Errorf("the writer's Put: %v", err)
			return
		}
		if err := d.PutDerived(ctx, chain(late), []byte("entry")); err != nil {
			t.Errorf("the writer's PutDerived: %v", err)
		}
	}
	st, err = repo.GC(ctx, &cas.GCOptions{Grace: -1, BatchSize: 1})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if late.IsZero() {
		t.Fatal("the writer never ran")
	}
	if g.has(t, g.n) || g.has(t, g.g) {
		t.Fatalf("GC kept n or g (stats %+v)", st)
	}
	if st.DerivedDropped != dropped || len(st.Failures) > 0 {
		t.Errorf("GC dropped %d derived-cache entries (failures %v), want %d", st.DerivedDropped, st.Failures, dropped)
	}
	if got, want := present(append(slices.Clone(all), chain(late))...), sorted(append(slices.Clone(kept), chain(late))); !slices.Equal(got, want) {
		t.Errorf("after GC the cache holds %q, want %q", got, want)
	}
	lateListed := slices.Contains(derivedKeys(t, d), chain(late))
	// The next GC sweeps the writer's node, unreachable, and its entry.
	g.hook.before = nil
	want := 0
	if lateListed {
		want = 1
	}
	if st, err = repo.GC(ctx, &cas.GCOptions{Grace: -1}); err != nil || st.DerivedDropped != want || g.has(t, late) {
		t.Errorf("a second GC: present %v, dropped %v derived-cache entries (%v); want the writer's node and its entry gone (%d dropped)", g.has(t, late), st.DerivedDropped, err, want)
	}
	if got := present(append(slices.Clone(all), chain(late))...); !slices.Equal(got, sorted(kept)) {
		t.Errorf("after a second GC the cache holds %q, want %q", got, sorted(kept))
	}
	if rep, err := repo.Fsck(ctx, nil); err != nil {
		t.Errorf("Fsck after GC: %v", err)
	} else if rep.OrphanDerived != 0 {
		t.Errorf("Fsck after GC: %v, orphan derived-cache entries %d; want 0", err, rep.OrphanDerived)
	}
}
