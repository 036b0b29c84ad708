package cas_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// damagedRefs makes the refs it marks bad unreadable, as a damaged ref
// file is on disk: List yields a *BadRefError in their place, Get and
// CompareAndSwap fail with it; Replace repairs them.
type damagedRefs struct {
	cas.Refs
	mu  sync.Mutex
	bad map[string]bool
}

func (r *damagedRefs) isBad(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad[name]
}

func (r *damagedRefs) badErr(name string) error {
	return &cas.BadRefError{Name: name, File: "refs/" + name, Err: errors.New("malformed")}
}

func (r *damagedRefs) List(ctx context.Context, prefix string) iter.Seq2[cas.Ref, error] {
	return func(yield func(cas.Ref, error) bool) {
		type item struct {
			ref cas.Ref
			err error
		}
		var items []item
		for ref, err := range r.Refs.List(ctx, prefix) {
			if err != nil {
				yield(ref, err)
				return
			}
			items = append(items, item{ref, nil})
		}
		r.mu.Lock()
		for name := range r.bad {
			if strings.HasPrefix(name, prefix) {
				items = append(items, item{cas.Ref{Name: name}, r.badErr(name)})
			}
		}
		r.mu.Unlock()
		slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.ref.Name, b.ref.Name) })
		for _, it := range items {
			if it.err != nil {
				it.ref = cas.Ref{}
			}
			if !yield(it.ref, it.err) {
				return
			}
		}
	}
}

func (r *damagedRefs) Get(ctx context.Context, name string) (cas.Hash, error) {
	if r.isBad(name) {
		return 0, r.badErr(name)
	}
	return r.Refs.Get(ctx, name)
}

func (r *damagedRefs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, msg string) error {
	if r.isBad(name) {
		return r.badErr(name)
	}
	return r.Refs.CompareAndSwap(ctx, name, old, new, msg)
}

func (r *damagedRefs) Replace(ctx context.Context, name string, new cas.Hash, msg string) error {
	if err := r.Refs.Replace(ctx, name, new, msg); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.bad, name)
	r.mu.Unlock()
	return nil
}

// damage makes ref name unreadable: what it held is lost (the memory ref
// is dropped); its log stays.
func (r *damagedRefs) damage(name string) {
	cas.DropMemRef(r.Refs.(*cas.MemRefs), name)
	r.mu.Lock()
	r.bad[name] = true
	r.mu.Unlock()
}

// damagedFixture is a fixture whose refs can be damaged (damage) or
// deleted behind the store's back (drop).
type damagedFixture struct {
	*fixture
	refs *damagedRefs
}

func newDamagedFixture(t *testing.T) *damagedFixture {
	t.Helper()
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	refs := &damagedRefs{Refs: mem.Refs(), bad: map[string]bool{}}
	repo, err := cas.Open(t.Context(), mem, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &damagedFixture{&fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}, refs}
}

func (f *damagedFixture) drop(name string) { cas.DropMemRef(f.mem.Refs(), name) }

func (f *damagedFixture) log(name string) []cas.LogEntry {
	f.t.Helper()
	log, err := f.repo.Refs().Log(f.ctx, name)
	if err != nil {
		f.t.Fatalf("Log(%s): %v", name, err)
	}
	return log
}

// problems returns fsck's problems as "kind ref hash" strings, sorted.
func (f *damagedFixture) problems(opts *cas.FsckOptions) ([]string, *cas.FsckReport) {
	f.t.Helper()
	rep, err := f.repo.Fsck(f.ctx, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, p := range rep.Problems {
		out = append(out, p.Kind+" "+p.Ref+" "+p.Hash.String())
	}
	slices.Sort(out)
	return out, rep
}

func TestFsckBadAndMissingRefs(t *testing.T) {
	f := newDamagedFixture(t)
	a1, a2 := f.text("a1"), f.text("a2")
	b1, b2 := f.text("b1"), f.text("b2")
	c1, d1, e1 := f.text("c1"), f.text("d1"), f.text("e1")
	f.setRef("a", a1)
	f.setRef("a", a2)
	f.setRef("b", b1)
	f.setRef("b", b2)
	f.setRef("c", c1)
	f.setRef("d", d1)
	f.setRef("e", e1)
	if err := f.repo.RemoveRef(f.ctx, "e", false); err != nil {
		t.Fatal(err)
	}
	f.refs.damage("a")
	f.drop("b")
	f.drop("c")
	f.mem.Corrupt(d1, []byte("damaged"))

	got, rep := f.problems(&cas.FsckOptions{Dangling: func(n cas.Node) bool { return n.Type == cas.ContentSchema }})
	want := []string{
		"bad-ref a " + a2.String(),
		"corrupt  " + d1.String(),
		"missing-ref b " + b2.String(),
		"missing-ref-or-interrupted-create c " + c1.String(),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("fsck problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep.Refs != len(cas.BuiltinsAt(cas.FormatV1))+2 {
		t.Errorf("fsck checked %d refs, want the built-ins, a and d", rep.Refs)
	}
	for _, p := range rep.Problems {
		if p.Kind == cas.ProblemBadRef && !strings.Contains(p.String(), "refs/a: malformed") {
			t.Errorf("bad-ref problem %q does not name the file and the fault", p)
		}
		if p.Kind == cas.ProblemMissingRef && !slices.Equal(p.ReachedFrom, []string{"b"}) {
			t.Errorf("missing-ref problem reached from %v, want [b]", p.ReachedFrom)
		}
	}
	// Dangling: what no live ref reaches and nothing refers to (the
	// deleted ref's value and the old ones), filtered by the option. The
	// values the bad and missing refs' logs hold are not dangling: they
	// are those refs' problems, and GC keeps them.
	var dangling []cas.Hash
	for _, d := range rep.Dangling {
		if d.Type != cas.ContentSchema {
			t.Errorf("dangling %s has type %s, which the option filters out", d.Hash, d.Type)
		}
		dangling = append(dangling, d.Hash)
	}
	wantDangling := []cas.Hash{a1, b1, e1}
	slices.Sort(wantDangling)
	if !slices.Equal(dangling, wantDangling) {
		t.Errorf("dangling = %v, want %v", dangling, wantDangling)
	}
	if _, rep := f.problems(nil); rep.Dangling != nil {
		t.Errorf("fsck without the option lists dangling nodes: %v", rep.Dangling)
	}
}

func TestGCRefusesOnBadRefs(t *testing.T) {
	f := newDamagedFixture(t)
	f.setRef("good", f.text("good"))
	f.setRef("x/bad", f.text("bad"))
	f.setRef("y/bad", f.text("bad too"))
	f.drop("good")
	junk := f.text("junk")
	f.refs.damage("x/bad")
	f.refs.damage("y/bad")
	f.clock.Advance(time.Hour * 24 * 365)
	_, err := f.repo.GC(f.ctx, &cas.GCOptions{Grace: -1, LogRetention: -1})
	if err == nil || !errors.Is(err, cas.ErrBadRef) || !strings.Contains(err.Error(), "nothing deleted") {
		t.Fatalf("GC = %v, want a refusal wrapping ErrBadRef", err)
	}
	for _, name := range []string{"x/bad", "y/bad"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("GC's error does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "good") {
		t.Errorf("GC's error names a ref that is not bad: %v", err)
	}
	if !f.has(junk) {
		t.Error("GC deleted a node while refs could not be read")
	}
}

func TestGCKeepsMissingRefs(t *testing.T) {
	f := newDamagedFixture(t)
	doc := mustJSON(t, noteSchema)
	note := f.schema("note", doc)
	body := f.text("body")
	n1 := f.put(note, map[string]any{"title": "t", "body": body.String()})
	f.setRef("notes/t", n1)
	f.drop("notes/t")
	f.clock.Advance(time.Hour * 24 * 365)
	st := f.gc(&cas.GCOptions{Grace: -1, LogRetention: time.Hour})
	if !f.has(n1) || !f.has(body) {
		t.Fatalf("GC collected the nodes of a missing ref: %+v", st)
	}
	if log := f.log("notes/t"); len(log) != 1 {
		t.Fatalf("GC pruned the missing ref's log: %+v", log)
	}
	// Once decided (removed by force), they go as any deleted ref's.
	if err := f.repo.RemoveRef(f.ctx, "notes/t", true); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	f.gc(&cas.GCOptions{Grace: -1, LogRetention: time.Hour})
	if f.has(n1) || f.has(body) {
		t.Error("GC kept the nodes of a ref removed by force")
	}
	if _, err := f.repo.Refs().Log(f.ctx, "notes/t"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("the log of a ref removed by force was not pruned: %v", err)
	}
}

func TestRestoreRef(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *damagedFixture, h []cas.Hash) // h: three values the ref held, oldest first
		to      func(h []cas.Hash) cas.Hash
		want    func(h []cas.Hash) cas.Hash
		wantOld func(h []cas.Hash) cas.Hash // the restore entry's old value
		err     error
	}{
		{"missing", func(f *damagedFixture, h []cas.Hash) { f.drop("r") },
			nil, func(h []cas.Hash) cas.Hash { return h[2] }, func(h []cas.Hash) cas.Hash { return h[2] }, nil},
		{"missing, to an older value", func(f *damagedFixture, h []cas.Hash) { f.drop("r") },
			func(h []cas.Hash) cas.Hash { return h[0] }, func(h []cas.Hash) cas.Hash { return h[0] }, func(h []cas.Hash) cas.Hash { return h[2] }, nil},
		{"bad", func(f *damagedFixture, h []cas.Hash) { f.refs.damage("r") },
			nil, func(h []cas.Hash) cas.Hash { return h[2] }, func(h []cas.Hash) cas.Hash { return h[2] }, nil},
		{"deleted", func(f *damagedFixture, h []cas.Hash) {
			if err := f.repo.RemoveRef(f.ctx, "r", false); err != nil {
				f.t.Fatal(err)
			}
		}, nil, func(h []cas.Hash) cas.Hash { return h[2] }, func(h []cas.Hash) cas.Hash { return 0 }, nil}, // re-created
		{"live, back to an older value", func(f *damagedFixture, h []cas.Hash) {},
			func(h []cas.Hash) cas.Hash { return h[1] }, func(h []cas.Hash) cas.Hash { return h[1] }, func(h []cas.Hash) cas.Hash { return h[2] }, nil},
		{"live, at the target", func(f *damagedFixture, h []cas.Hash) {},
			nil, func(h []cas.Hash) cas.Hash { return h[2] }, nil, nil},
		{"to a value not in the log", func(f *damagedFixture, h []cas.Hash) { f.drop("r") },
			func(h []cas.Hash) cas.Hash { return cas.Sum([]byte("other")) }, nil, nil, cas.ErrNotFound},
		{"the target was collected", func(f *damagedFixture, h []cas.Hash) {
			f.drop("r")
			f.clock.Advance(time.Hour)
			if ok, err := f.mem.DeleteIfOlder(f.ctx, h[2], f.clock.Now()); !ok || err != nil {
				f.t.Fatalf("DeleteIfOlder = %v, %v", ok, err)
			}
		}, nil, nil, nil, cas.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newDamagedFixture(t)
			h := []cas.Hash{f.text("v0"), f.text("v1"), f.text("v2")}
			for _, v := range h {
				f.setRef("r", v)
			}
			tc.setup(f, h)
			before := f.log("r")
			var to cas.Hash
			if tc.to != nil {
				to = tc.to(h)
			}
			got, err := f.repo.RestoreRef(f.ctx, "r", to)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("RestoreRef = %s, %v; want an error wrapping %v", got, err, tc.err)
				}
				if after := f.log("r"); len(after) != len(before) {
					t.Errorf("a failed restore changed the log: %+v", after)
				}
				return
			}
			if err != nil || got != tc.want(h) {
				t.Fatalf("RestoreRef = %s, %v; want %s", got, err, tc.want(h))
			}
			if cur, err := f.repo.Refs().Get(f.ctx, "r"); err != nil || cur != tc.want(h) {
				t.Fatalf("after restore, Get = %s, %v", cur, err)
			}
			after := f.log("r")
			if tc.wantOld == nil {
				if len(after) != len(before) {
					t.Errorf("a restore to the current value logged: %+v", after)
				}
				return
			}
			e := after[len(after)-1]
			if len(after) != len(before)+1 || e.Old != tc.wantOld(h) || e.New != tc.want(h) || !strings.HasPrefix(e.Message, "restore from log") {
				t.Errorf("after restore, log = %+v; want the old entries and {%s, %s, restore ...}", after, tc.wantOld(h), tc.want(h))
			}
		})
	}
	t.Run("no log", func(t *testing.T) {
		f := newDamagedFixture(t)
		if _, err := f.repo.RestoreRef(f.ctx, "never", 0); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("RestoreRef of a ref with no log = %v, want ErrNotFound", err)
		}
	})
}

func TestSetAndRemoveRef(t *testing.T) {
	f := newDamagedFixture(t)
	a, b := f.text("a"), f.text("b")
	if err := f.repo.SetRef(f.ctx, "s", a, false); err != nil {
		t.Fatal(err)
	}
	if err := f.repo.SetRef(f.ctx, "s", b, false); err != nil {
		t.Fatal(err)
	}
	if err := f.repo.SetRef(f.ctx, "s", cas.Sum([]byte("absent")), false); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("SetRef to an absent node = %v, want ErrNotFound", err)
	}
	if err := f.repo.RemoveRef(f.ctx, "nothing", false); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("RemoveRef of an absent ref = %v, want ErrNotFound", err)
	}

	// A bad ref: refused, then replaced by force.
	f.refs.damage("s")
	for _, err := range []error{f.repo.SetRef(f.ctx, "s", a, false), f.repo.RemoveRef(f.ctx, "s", false)} {
		if !errors.Is(err, cas.ErrBadRef) {
			t.Errorf("a plain change of a bad ref = %v, want ErrBadRef", err)
		}
	}
	if err := f.repo.SetRef(f.ctx, "s", a, true); err != nil {
		t.Fatal(err)
	}
	log := f.log("s")
	if e := log[len(log)-1]; len(log) != 3 || e.Old != b || e.New != a || e.Message != "set --force" {
		t.Errorf("log after set --force = %+v", log)
	}

	// A missing ref: refused (a conflict), then decided by force.
	f.drop("s")
	var missing *cas.MissingRefError
	for _, err := range []error{f.repo.SetRef(f.ctx, "s", b, false), f.repo.RemoveRef(f.ctx, "s", false)} {
		if !errors.As(err, &missing) || !errors.Is(err, cas.ErrConflict) || missing.Logged != a || missing.Creation {
			t.Errorf("a plain change of a missing ref = %v, want a *MissingRefError at %s", err, a)
		}
	}
	if err := f.repo.RemoveRef(f.ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	log = f.log("s")
	if e := log[len(log)-1]; len(log) != 4 || e.Old != a || !e.New.IsZero() || e.Message != "rm --force" {
		t.Errorf("log after rm --force = %+v", log)
	}
	// Now it is simply deleted: set creates it again.
	if err := f.repo.SetRef(f.ctx, "s", b, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.repo.Refs().Get(f.ctx, "s"); got != b {
		t.Errorf("Get = %s, want %s", got, b)
	}
}

// TestMissingRef: the one test of a missing ref, which fsck, GC, the ref
// commands and the thread engine share, reads only the log's newest entry.
func TestMissingRef(t *testing.T) {
	a, b := cas.Hash(0xA), cas.Hash(0xB)
	for _, tc := range []struct {
		name     string
		log      []cas.LogEntry
		logged   cas.Hash // zero: not missing
		creation bool
	}{
		{"no log", nil, 0, false},
		{"created", []cas.LogEntry{{New: a}}, a, true},
		{"moved", []cas.LogEntry{{New: a}, {Old: a, New: b}}, b, false},
		{"deleted", []cas.LogEntry{{New: a}, {Old: a}}, 0, false},
		{"re-created", []cas.LogEntry{{New: a}, {Old: a}, {New: b}}, b, true},
		{"deleted after a move", []cas.LogEntry{{New: a}, {Old: a, New: b}, {Old: b}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := cas.MissingRef("threads/T", tc.log)
			if tc.logged.IsZero() {
				if m != nil {
					t.Fatalf("MissingRef = %+v, want nil", m)
				}
				return
			}
			want := cas.MissingRefError{Name: "threads/T", Logged: tc.logged, Creation: tc.creation}
			if m == nil || *m != want {
				t.Fatalf("MissingRef = %+v, want %+v", m, want)
			}
			if !errors.Is(m, cas.ErrConflict) {
				t.Errorf("MissingRef's error does not wrap ErrConflict")
			}
		})
	}
}
