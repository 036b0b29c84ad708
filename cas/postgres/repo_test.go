package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/postgres"
)

// noteSchema: a title, a body (a content node) and links to other notes.
const noteSchema = `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string","format":"cas_ref"},
 "links":{"type":"array","items":{"type":"string","format":"cas_ref"}}},"required":["title","body"],"additionalProperties":false}`

// repoFixture is a Repo over a PostgreSQL store.
type repoFixture struct {
	t    *testing.T
	ctx  context.Context
	st   *postgres.Store
	repo *cas.Repo
	note cas.Hash
}

func newRepo(t *testing.T, wrap func(*postgres.Store) cas.Store) *repoFixture {
	t.Helper()
	st := newStore(t)
	var s cas.Store = st
	if wrap != nil {
		s = wrap(st)
	}
	repo, err := cas.Open(t.Context(), s, st.Refs(), nil)
	if err != nil {
		t.Fatalf("cas.Open over PostgreSQL: %v", err)
	}
	f := &repoFixture{t: t, ctx: t.Context(), st: st, repo: repo}
	doc, err := cas.ParseJSON([]byte(noteSchema))
	if err != nil {
		t.Fatal(err)
	}
	if f.note, err = repo.PutSchema(f.ctx, "note", doc); err != nil {
		t.Fatalf("PutSchema: %v", err)
	}
	t.Cleanup(func() { castest.Verify(t, st) })
	return f
}

func (f *repoFixture) text(s string) cas.Hash {
	f.t.Helper()
	h, err := f.repo.Put(f.ctx, cas.ContentSchema, s)
	if err != nil {
		f.t.Fatalf("Put(content %q): %v", s, err)
	}
	return h
}

func (f *repoFixture) noteOf(title string, links ...cas.Hash) cas.Hash {
	f.t.Helper()
	h, err := f.repo.Put(f.ctx, f.note, notePayload(title, f.text(title+" body"), links))
	if err != nil {
		f.t.Fatalf("Put(note %s): %v", title, err)
	}
	return h
}

func notePayload(title string, body cas.Hash, links []cas.Hash) map[string]any {
	p := map[string]any{"title": title, "body": body.String()}
	if len(links) > 0 {
		ls := make([]any, len(links))
		for i, l := range links {
			ls[i] = l.String()
		}
		p["links"] = ls
	}
	return p
}

func (f *repoFixture) has(h cas.Hash) bool {
	f.t.Helper()
	ok, err := f.st.Has(f.ctx, h)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

func (f *repoFixture) setRef(name string, h cas.Hash) {
	f.t.Helper()
	cur, err := f.repo.Refs().Get(f.ctx, name)
	if err != nil && !errors.Is(err, cas.ErrNotFound) {
		f.t.Fatal(err)
	}
	if err := f.repo.Refs().CompareAndSwap(f.ctx, name, cur, h, "test"); err != nil {
		f.t.Fatal(err)
	}
}

func (f *repoFixture) fsckClean() {
	f.t.Helper()
	rep, err := f.repo.Fsck(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range rep.Problems {
		f.t.Errorf("fsck: %s", p)
	}
}

// walkable fails t unless h and everything it reaches are present.
func (f *repoFixture) walkable(h cas.Hash) {
	f.t.Helper()
	if err := f.repo.Walk(f.ctx, []cas.Hash{h}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil }); err != nil {
		f.t.Errorf("the subgraph of %s lost nodes: %v", h, err)
	}
}

// waitOlder sleeps until the store's clock is d past now.
func (f *repoFixture) waitOlder(d time.Duration) {
	f.t.Helper()
	t0, err := f.st.Now(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for {
		now, err := f.st.Now(f.ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		if now.Sub(t0) > d {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRepo(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	f := newRepo(t, nil)
	leaf := f.noteOf("leaf")
	top := f.noteOf("top", leaf)
	f.setRef("notes/top", top)
	loose := f.noteOf("loose", leaf)
	if got, err := f.repo.Get(f.ctx, top); err != nil || got.Type != f.note {
		t.Fatalf("Get(top) = %v, %v", got, err)
	}
	// PutNodes: one batch, children first.
	body := f.text("batch body")
	hs, err := f.repo.PutNodes(f.ctx, []cas.Node{
		{Type: cas.ContentSchema, Payload: "batched"},
		{Type: f.note, Payload: notePayload("batched", body, []cas.Hash{top})},
	})
	if err != nil {
		t.Fatalf("PutNodes: %v", err)
	}
	f.setRef("notes/batched", hs[1])
	// An edge to an absent node is refused.
	_, err = f.repo.Put(f.ctx, f.note, notePayload("dangling", body, []cas.Hash{cas.Sum([]byte("absent"))}))
	var ee *cas.EdgeError
	if !errors.As(err, &ee) {
		t.Errorf("Put with a dangling edge = %v, want an *EdgeError", err)
	}
	f.fsckClean()

	// A second Open finds the built-ins and changes nothing.
	before, _ := f.st.Refs().Log(f.ctx, "schemas/content")
	if _, err := cas.Open(f.ctx, f.st, f.st.Refs(), nil); err != nil {
		t.Fatal(err)
	}
	after, _ := f.st.Refs().Log(f.ctx, "schemas/content")
	if len(before) != 1 || len(after) != 1 {
		t.Errorf("log of schemas/content: %d entries, then %d after a second Open; want 1 and 1", len(before), len(after))
	}

	// GC with no grace keeps what refs reach and takes the rest.
	st, err := f.repo.GC(f.ctx, &cas.GCOptions{Grace: time.Nanosecond})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if f.has(loose) || !f.has(top) || !f.has(leaf) || !f.has(hs[1]) {
		t.Errorf("after GC: loose %v (want false), top %v, leaf %v, batched %v (want true)", f.has(loose), f.has(top), f.has(leaf), f.has(hs[1]))
	}
	if st.Deleted != 3 || f.has(hs[0]) { // loose, its body, and the unreferenced "batched" text
		t.Errorf("GC deleted %d, want 3: %+v", st.Deleted, st)
	}
	f.walkable(top)
	f.walkable(hs[1])
	f.fsckClean()

	// A dry run deletes nothing; a second GC finds nothing.
	if err := f.repo.Refs().CompareAndSwap(f.ctx, "notes/batched", hs[1], 0, "drop"); err != nil {
		t.Fatal(err)
	}
	st, err = f.repo.GC(f.ctx, &cas.GCOptions{Grace: time.Nanosecond, DryRun: true})
	if err != nil || st.Deleted != 0 {
		// The deleted ref's log entry is young: it still roots hs[1].
		t.Errorf("dry-run GC = %+v, %v; want nothing to delete", st, err)
	}
}

// hookStore calls onExclusive before every exclusive Lock after the first
// (GC's barrier before its mark): a writer acting between two GC sweep
// batches.
type hookStore struct {
	cas.Store
	onExclusive func()
	n           int
}

func (s *hookStore) Lock(ctx context.Context, exclusive bool) (func(), error) {
	if exclusive {
		if s.n++; s.n > 1 && s.onExclusive != nil {
			s.onExclusive()
		}
	}
	return s.Store.Lock(ctx, exclusive)
}

// TestRepoGCRace: a writer that has put nodes but not yet moved its ref,
// and a writer that starts referring to an old unreferenced node while GC
// sweeps, lose nothing.
func TestRepoGCRace(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	const grace = 500 * time.Millisecond
	for _, how := range []string{"put", "ref"} {
		for _, when := range []string{"first batch", "after its parent went"} {
			t.Run(how+" "+when, func(t *testing.T) {
				hs := &hookStore{}
				f := newRepo(t, func(st *postgres.Store) cas.Store { hs.Store = st; return hs })
				// An old unreferenced chain: top -> mid -> leaf (+ bodies).
				leaf := f.noteOf("leaf")
				mid := f.noteOf("mid", leaf)
				top := f.noteOf("top", mid)
				garbage := f.text("garbage")
				f.waitOlder(grace + 100*time.Millisecond)
				// A writer that has put its nodes and not yet moved its ref.
				pending := f.noteOf("pending", f.noteOf("pending child"))
				target := top
				if when != "first batch" {
					target = mid
				}
				var once sync.Once
				var writeErr, pendingErr error
				hs.onExclusive = func() {
					if when != "first batch" && f.has(top) {
						return // wait until top is gone
					}
					once.Do(func() {
						pendingErr = f.repo.Refs().CompareAndSwap(f.ctx, "threads/pending", 0, pending, "the writer moves its ref at last")
						if how == "put" {
							_, writeErr = f.repo.Put(f.ctx, f.note, notePayload("new", f.text("new body"), []cas.Hash{target}))
						} else {
							writeErr = f.repo.Refs().CompareAndSwap(f.ctx, "saved", 0, target, "save")
						}
					})
				}
				st, err := f.repo.GC(f.ctx, &cas.GCOptions{BatchSize: 1, Grace: grace})
				if err != nil {
					t.Fatalf("GC: %v", err)
				}
				if writeErr != nil || pendingErr != nil {
					t.Fatalf("the writers failed: %v, %v", writeErr, pendingErr)
				}
				if f.has(garbage) {
					t.Error("garbage survived")
				}
				if when != "first batch" && f.has(top) {
					t.Error("top survived although nothing refers to it")
				}
				f.walkable(target)
				f.walkable(pending)
				if st.Spared == 0 {
					t.Errorf("Spared = 0, want the refreshed subgraph counted: %+v", st)
				}
				f.fsckClean()
			})
		}
	}
}

// TestRepoGCStress runs GCs with a short grace period while writers grow
// chains of notes, each linking its previous head and an older node that
// may be garbage by then. No ref may lose a node, no node its edges; fsck
// stays clean.
//
// GC reads its mark start behind the exclusive store-wide lock, so a
// writer between touching a node's edges and storing the node cannot have
// an edge collected, whatever the grace period; the grace period still
// covers a writer between storing its nodes and moving its ref, so it stays
// well above that gap here.
func TestRepoGCStress(t *testing.T) {
	needPostgres(t)
	if testing.Short() {
		t.Skip("slow: skipped under -short")
	}
	t.Parallel()
	f := newRepo(t, nil)
	const grace = 500 * time.Millisecond
	var mu sync.Mutex
	var pool []cas.Hash // every node any writer put
	ctx, stop := context.WithTimeout(f.ctx, 4*time.Second)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			name := fmt.Sprintf("threads/w%d", w)
			var head cas.Hash
			for i := 0; ctx.Err() == nil; i++ {
				body, err := f.repo.Put(f.ctx, cas.ContentSchema, fmt.Sprintf("w%d step %d", w, i))
				if err != nil {
					errs <- err
					return
				}
				links := []cas.Hash{}
				if head != 0 {
					links = append(links, head)
				}
				mu.Lock()
				if len(pool) > 0 {
					links = append(links, pool[rng.IntN(len(pool))])
				}
				mu.Unlock()
				h, err := f.repo.Put(f.ctx, f.note, notePayload(fmt.Sprintf("w%d-%d", w, i), body, links))
				var ee *cas.EdgeError
				if errors.As(err, &ee) && ee.Edge != head {
					continue // the old node was collected before we referred to it: fine
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				if err := f.repo.Refs().CompareAndSwap(f.ctx, name, head, h, "step"); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				head = h
				mu.Lock()
				pool = append(pool, h, body)
				mu.Unlock()
				if i%5 == 0 && head != 0 {
					// Drop history now and then: garbage for GC.
					if err := f.repo.Refs().CompareAndSwap(f.ctx, name, head, 0, "reset"); err != nil {
						errs <- err
						return
					}
					head = 0
				}
			}
		})
	}
	gcs, deleted := 0, 0
	for ctx.Err() == nil {
		st, err := f.repo.GC(f.ctx, &cas.GCOptions{Grace: grace, LogRetention: grace, BatchSize: 8})
		if err != nil {
			t.Fatalf("GC #%d: %v", gcs+1, err)
		}
		deleted += st.Deleted
		rep, err := f.repo.Fsck(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			if p.Kind == cas.ProblemMissingEdge {
				t.Errorf("after GC #%d (%+v): %s", gcs+1, st, p)
			}
		}
		gcs++
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for ref, err := range f.repo.Refs().List(f.ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		f.walkable(ref.Hash)
	}
	f.fsckClean()
	t.Logf("%d GCs deleted %d nodes while %d were written", gcs, deleted, len(pool))
	if deleted == 0 {
		t.Errorf("the GCs deleted nothing: the test tests nothing")
	}
}
