package cas_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

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

func (f *fixture) gc(opts *cas.GCOptions) *cas.GCStats {
	f.t.Helper()
	st, err := f.repo.GC(f.ctx, opts)
	if err != nil {
		f.t.Fatalf("GC: %v", err)
	}
	return st
}

func (f *fixture) fsckClean() {
	f.t.Helper()
	rep, err := f.repo.Fsck(f.ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range rep.Problems {
		f.t.Errorf("fsck: %s", p)
	}
}

func TestGCGracePeriod(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	kept := f.text("kept")
	f.setRef("keep", kept)
	loose := f.text("loose")
	st := f.gc(nil)
	if st.Deleted != 0 || !f.has(loose) {
		t.Errorf("within the grace period: deleted %d, loose present %v", st.Deleted, f.has(loose))
	}
	f.clock.Advance(cas.DefaultGrace - time.Second)
	f.gc(nil)
	if !f.has(loose) {
		t.Error("loose node deleted a second before the grace period ended")
	}
	f.clock.Advance(2 * time.Second)
	st = f.gc(nil)
	if st.Deleted != 1 || f.has(loose) || !f.has(kept) {
		t.Errorf("after the grace period: %+v, loose present %v, kept present %v", st, f.has(loose), f.has(kept))
	}
	if want := len(cas.BuiltinsAt(cas.FormatV1)) + 2; st.Scanned != want || st.Reachable != want-1 {
		t.Errorf("scanned %d reachable %d, want %d and %d", st.Scanned, st.Reachable, want, want-1)
	}
	if st.BytesFreed != int64(len(`{"payload":"loose","type":"`+cas.ContentSchema.String()+`"}`)) {
		t.Errorf("BytesFreed = %d", st.BytesFreed)
	}
	f.fsckClean()
}

func TestGCDryRun(t *testing.T) {
	f := newFixture(t)
	loose := f.text("loose")
	f.clock.Advance(2 * time.Hour)
	st := f.gc(&cas.GCOptions{DryRun: true})
	if !st.DryRun || st.Deleted != 1 || !f.has(loose) {
		t.Errorf("dry run: %+v, loose present %v", st, f.has(loose))
	}
}

func TestGCLogRoots(t *testing.T) {
	f := newFixture(t)
	note := f.schema("note", mustJSON(t, noteSchema))
	old := f.put(note, map[string]any{"title": "old", "body": f.text("old body").String()})
	f.setRef("doc", old)
	f.clock.Advance(time.Minute)
	f.setRef("doc", f.text("new"))
	f.clock.Advance(2 * time.Hour)
	f.gc(nil)
	if !f.has(old) {
		t.Fatal("a node named by a young log entry was deleted")
	}
	body, _ := f.repo.Get(f.ctx, old)
	bodyHash, _ := cas.ParseCanonicalHash(body.Payload.(map[string]any)["body"].(string))
	if !f.has(bodyHash) {
		t.Fatal("the subgraph of a log-named node was deleted")
	}
	// Past the retention the entry is pruned (the live ref keeps its newest
	// and creation entries) and what only it named goes.
	f.clock.Advance(cas.DefaultLogRetention)
	st := f.gc(nil)
	if f.has(old) || f.has(bodyHash) {
		t.Errorf("after the retention: old present %v, body present %v", f.has(old), f.has(bodyHash))
	}
	log, err := f.mem.Refs().Log(f.ctx, "doc")
	if err != nil || len(log) != 2 || !log[0].Old.IsZero() {
		t.Errorf("log of doc after pruning: %v, %v; want the creation and the newest entry", log, err)
	}
	if st.LogEntriesPruned != 0 {
		// Two entries: creation (kept) and newest (kept): nothing to prune.
		t.Errorf("LogEntriesPruned = %d, want 0", st.LogEntriesPruned)
	}
	f.fsckClean()
}

func TestGCFailsClosed(t *testing.T) {
	for _, damage := range []string{"corrupt", "missing"} {
		t.Run(damage, func(t *testing.T) {
			f := newFixture(t)
			note := f.schema("note", mustJSON(t, noteSchema))
			body := f.text("body")
			top := f.put(note, map[string]any{"title": "t", "body": body.String()})
			f.setRef("top", top)
			loose := f.text("loose")
			f.clock.Advance(2 * time.Hour)
			if damage == "corrupt" {
				f.mem.Corrupt(body, []byte("bad"))
			} else if ok, err := f.mem.DeleteIfOlder(f.ctx, body, f.clock.Now().Add(time.Hour)); !ok || err != nil {
				t.Fatal(ok, err)
			}
			_, err := f.repo.GC(f.ctx, nil)
			if err == nil || !strings.Contains(err.Error(), body.String()) || !strings.Contains(err.Error(), "ref top") ||
				!strings.Contains(err.Error(), damage) || !strings.Contains(err.Error(), "nothing deleted") {
				t.Errorf("GC with a %s reachable node = %v", damage, err)
			}
			if !f.has(loose) {
				t.Error("GC deleted something although the mark failed")
			}
		})
	}
}

// TestGCWriterDuringSweep: a writer that starts referring to an old,
// unreferenced node while GC sweeps keeps that node and its whole subgraph.
// TestGCWriterDuringSweep: a writer refreshes a candidate between two
// sweep batches; it and its subgraph survive. With the default batch size
// every level of the chain is one batch (DeleteIfOlderBatch), so this also
// shows that a batch never holds a node and its descendant.
func TestGCWriterDuringSweep(t *testing.T) {
	for _, batch := range []int{1, 0} {
		for _, how := range []string{"put", "ref"} {
			for _, when := range []string{"first batch", "after its parent went"} {
				t.Run(fmt.Sprintf("batch %d %s %s", batch, how, when), func(t *testing.T) {
					c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
					mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
					hs := &hookStore{Store: mem}
					repo, err := cas.Open(t.Context(), hs, mem.Refs(), nil)
					if err != nil {
						t.Fatal(err)
					}
					f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
					note := f.schema("note", mustJSON(t, noteSchema))
					// An old unreferenced chain: top -> mid -> leaf (+ bodies).
					leaf := f.put(note, map[string]any{"title": "leaf", "body": f.text("leaf body").String()})
					mid := f.put(note, map[string]any{"title": "mid", "body": f.text("mid body").String(), "links": []any{leaf.String()}})
					top := f.put(note, map[string]any{"title": "top", "body": f.text("top body").String(), "links": []any{mid.String()}})
					garbage := f.text("garbage")
					f.clock.Advance(2 * time.Hour)
					target := top
					if when != "first batch" {
						target = mid
					}
					var once sync.Once
					var writeErr error
					hs.onExclusive = func() {
						if when != "first batch" && f.has(top) {
							return // wait until top is gone
						}
						once.Do(func() {
							if how == "put" {
								_, writeErr = f.repo.Put(f.ctx, note, map[string]any{"title": "new", "body": f.text("new body").String(), "links": []any{target.String()}})
							} else {
								writeErr = f.repo.Refs().CompareAndSwap(f.ctx, "saved", 0, target, "save")
							}
						})
					}
					st := f.gc(&cas.GCOptions{BatchSize: batch})
					if writeErr != nil {
						t.Fatalf("the writer failed: %v", writeErr)
					}
					if f.has(garbage) {
						t.Error("garbage survived")
					}
					if when != "first batch" && f.has(top) {
						t.Error("top survived although nothing refers to it")
					}
					// The target and every descendant are present.
					err = f.repo.Walk(f.ctx, []cas.Hash{target}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil })
					if err != nil {
						t.Errorf("the subgraph of %s lost nodes: %v", target, err)
					}
					if st.Spared == 0 {
						t.Errorf("Spared = 0, want the refreshed subgraph counted: %+v", st)
					}
					f.fsckClean()
					castest.Verify(t, mem)
				})
			}
		}
	}
}

func TestGCOneAtATime(t *testing.T) {
	f := newFixture(t)
	f.text("loose")
	f.clock.Advance(2 * time.Hour)
	unlock, err := f.mem.LockGC(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.GC(f.ctx, nil); !errors.Is(err, cas.ErrLocked) {
		t.Errorf("GC while another runs = %v, want ErrLocked", err)
	}
	unlock()
	if st := f.gc(nil); st.Deleted != 1 {
		t.Errorf("GC after the other ended deleted %d, want 1", st.Deleted)
	}
}

func TestGCContinuesPastFailures(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	var victim cas.Hash
	faulty := &castest.FaultyStore{Store: mem, Fail: func(op string, h cas.Hash) error {
		if op == "delete" && h == victim {
			return errors.New("disk on fire")
		}
		return nil
	}}
	repo, err := cas.Open(t.Context(), faulty, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
	note := f.schema("note", mustJSON(t, noteSchema))
	child := f.text("child")
	victim = f.put(note, map[string]any{"title": "v", "body": child.String()})
	other := f.text("other")
	c.Advance(2 * time.Hour)
	st, err := repo.GC(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Failures) != 1 || !strings.Contains(st.Failures[0].Error(), "disk on fire") {
		t.Errorf("Failures = %v", st.Failures)
	}
	if f.has(other) || !f.has(victim) || !f.has(child) {
		t.Errorf("other present %v (want false), victim %v and its child %v (want true)", f.has(other), f.has(victim), f.has(child))
	}
	f.fsckClean()
}

// TestGCWaitsForWriters: a writer that has touched its edges but not yet
// stored its node when GC starts (here: it holds the shared lock for longer
// than the grace period) loses nothing: GC's mark begins only once the
// writer is done.
func TestGCWaitsForWriters(t *testing.T) {
	f := newFixture(t)
	note := f.schema("note", mustJSON(t, noteSchema))
	body := f.text("old body")
	f.clock.Advance(2 * time.Hour)
	unlock, err := f.mem.Lock(f.ctx, false) // the writer, between touch and put
	if err != nil {
		t.Fatal(err)
	}
	if err := f.mem.Touch(f.ctx, body); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	done := make(chan *cas.GCStats)
	go func() {
		st, err := f.repo.GC(f.ctx, &cas.GCOptions{Grace: -1})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	time.Sleep(20 * time.Millisecond) // GC waits at its barrier
	f.clock.Advance(time.Hour)        // longer than any grace
	n := cas.Node{Type: note, Payload: map[string]any{"title": "t", "body": body.String()}}
	data, _ := n.Encode()
	h, err := f.mem.Put(f.ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	<-done
	if !f.has(h) || !f.has(body) {
		t.Errorf("after GC: the new node present %v, its edge present %v; want both", f.has(h), f.has(body))
	}
}

// TestGCAfterShortRetention: after a GC with a short log retention, the
// entries pruning keeps (a live ref's creation and newest entries) may name
// collected nodes; a later GC with the default retention skips them instead
// of refusing to run.
func TestGCAfterShortRetention(t *testing.T) {
	f := newFixture(t)
	v1 := f.text("v1")
	f.setRef("workflows/x", v1)
	f.clock.Advance(time.Minute)
	f.setRef("workflows/x", f.text("v2"))
	f.clock.Advance(2 * time.Hour)
	f.gc(&cas.GCOptions{LogRetention: time.Hour})
	if f.has(v1) {
		t.Fatal("v1 survived a GC whose retention had passed")
	}
	garbage := f.text("garbage")
	f.clock.Advance(2 * time.Hour)
	if st := f.gc(nil); st.Deleted != 1 || f.has(garbage) {
		t.Errorf("the second GC: %+v, garbage present %v", st, f.has(garbage))
	}
	f.fsckClean()
}

// TestGCCorruptCandidate: an unreachable node that fails its re-hash has
// unknown edges. GC deletes it before anything else, with the same
// conditional delete; if that delete fails or is refused, GC stops having
// deleted nothing else.
func TestGCCorruptCandidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    string // "": the delete works; "delete": it fails; "touch": a writer refreshes the node first
		wantErr string
	}{
		{name: "deleted first"},
		{name: "delete fails", fail: "delete", wantErr: "deleting it failed"},
		{name: "refreshed", fail: "touch", wantErr: "delete refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
			mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
			var bad cas.Hash
			var deletes []cas.Hash
			var mu sync.Mutex
			faulty := &castest.FaultyStore{Store: mem, Fail: func(op string, h cas.Hash) error {
				if op != "delete" {
					return nil
				}
				if tc.fail == "delete" && h == bad {
					return castest.ErrInjected
				}
				mu.Lock()
				deletes = append(deletes, h)
				mu.Unlock()
				return nil
			}}
			hs := &hookStore{Store: faulty}
			repo, err := cas.Open(t.Context(), hs, mem.Refs(), nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
			note := f.schema("note", mustJSON(t, noteSchema))
			body := f.text("body")
			bad = f.put(note, map[string]any{"title": "bad", "body": body.String()})
			garbage := f.text("garbage")
			c.Advance(2 * time.Hour)
			if !mem.Corrupt(bad, []byte(`{"payload":"x","type":"`+cas.ContentSchema.String()+`"}`)) {
				t.Fatal("Corrupt: absent")
			}
			if tc.fail == "touch" {
				hs.onExclusive = func() {
					if err := mem.Touch(f.ctx, bad); err != nil {
						t.Error(err)
					}
					hs.onExclusive = nil
				}
			}
			st, err := repo.GC(f.ctx, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("GC: %v", err)
				}
				if len(deletes) != 3 || deletes[0] != bad || f.has(bad) || f.has(body) || f.has(garbage) {
					t.Errorf("deletes %v (want %s first, 3 in all); bad present %v, body %v, garbage %v", deletes, bad, f.has(bad), f.has(body), f.has(garbage))
				}
				if st.Deleted != 3 {
					t.Errorf("Deleted = %d, want 3", st.Deleted)
				}
				f.fsckClean()
				return
			}
			if err == nil || !strings.Contains(err.Error(), bad.String()) || !strings.Contains(err.Error(), tc.wantErr) ||
				!strings.Contains(err.Error(), "nothing else deleted") {
				t.Errorf("GC = %v; want an error naming %s, %q and \"nothing else deleted\"", err, bad, tc.wantErr)
			}
			if len(deletes) > 1 || !f.has(body) || !f.has(garbage) || st == nil || st.Deleted != 0 {
				t.Errorf("deletes %v, stats %+v, body present %v, garbage %v; want nothing deleted", deletes, st, f.has(body), f.has(garbage))
			}
		})
	}
}

// TestGCUnknownEdges: an unreachable object whose edges cannot be found
// (not a node; a node whose type is unreadable) stops GC, dry run or not,
// before anything is deleted, with an error naming it.
func TestGCUnknownEdges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dryRun bool
		notes  bool // an unreadable type instead of bytes that are not a node
	}{
		{name: "not a node"},
		{name: "not a node, dry run", dryRun: true},
		{name: "type unreadable", notes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
			mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
			var typ cas.Hash
			faulty := &castest.FaultyStore{Store: mem}
			repo, err := cas.Open(t.Context(), faulty, mem.Refs(), nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
			garbage := f.text("garbage")
			var odd cas.Hash
			if tc.notes {
				typ = f.schema("note", mustJSON(t, noteSchema))
				odd = f.put(typ, map[string]any{"title": "t", "body": garbage.String()})
				// A fresh repo has no compiled schema cached.
				if repo, err = cas.Open(t.Context(), faulty, mem.Refs(), nil); err != nil {
					t.Fatal(err)
				}
				// The mark reads the type once (it is reachable from its
				// ref); the ordering's read, to find odd's edges, fails.
				gets := 0
				faulty.Fail = func(op string, h cas.Hash) error {
					if op == "get" && h == typ {
						if gets++; gets > 1 {
							return castest.ErrInjected
						}
					}
					return nil
				}
			} else if odd, err = mem.Put(f.ctx, []byte("not a node")); err != nil {
				t.Fatal(err)
			}
			c.Advance(2 * time.Hour)
			st, err := repo.GC(f.ctx, &cas.GCOptions{DryRun: tc.dryRun})
			if err == nil || !strings.Contains(err.Error(), odd.String()) || !strings.Contains(err.Error(), "nothing deleted") {
				t.Fatalf("GC = %v; want an error naming %s and \"nothing deleted\"", err, odd)
			}
			if !f.has(garbage) || !f.has(odd) || st.Deleted != 0 {
				t.Errorf("stats %+v, garbage present %v, %s present %v; want nothing deleted", st, f.has(garbage), odd, f.has(odd))
			}
		})
	}
}

// TestGCDecisionLog: at debug level GC logs every candidate with its age,
// every delete and every refusal with the subgraph it spared, so a
// surprising result can be explained.
func TestGCDecisionLog(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	hs := &hookStore{Store: mem}
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	repo, err := cas.Open(t.Context(), hs, mem.Refs(), &cas.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
	garbage := f.text("garbage")
	kept := f.text("kept")
	c.Advance(2 * time.Hour)
	hs.onExclusive = func() {
		if err := mem.Touch(f.ctx, kept); err != nil {
			t.Error(err)
		}
		hs.onExclusive = nil
	}
	f.gc(&cas.GCOptions{BatchSize: 1})
	log := buf.String()
	for _, want := range []string{
		"msg=\"gc candidate\" component=cas hash=" + garbage.String() + " age=2h0m0s",
		"msg=\"gc candidate\" component=cas hash=" + kept.String() + " age=2h0m0s",
		"msg=\"gc deleted\" component=cas hash=" + garbage.String(),
		"msg=\"gc spared\" component=cas hash=" + kept.String() + " why=\"refused: refreshed since the mark began\" subgraph=1",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the debug log lacks %q:\n%s", want, log)
		}
	}
}
