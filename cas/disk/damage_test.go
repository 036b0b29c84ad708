package disk_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

func refFilePath(s *disk.Store, name string) string {
	return filepath.Join(s.Dir(), "refs", filepath.FromSlash(strings.ToLower(name)))
}

// listAll returns the names List yields, with "!" before a bad ref's.
func listAll(t *testing.T, r cas.Refs, prefix string) []string {
	t.Helper()
	var out []string
	for ref, err := range r.List(t.Context(), prefix) {
		var bad *cas.BadRefError
		switch {
		case errors.As(err, &bad):
			if !errors.Is(err, cas.ErrBadRef) || ref != (cas.Ref{}) {
				t.Fatalf("List yielded %+v, %v for a bad ref", ref, err)
			}
			out = append(out, "!"+bad.Name)
		case err != nil:
			t.Fatalf("List(%q): %v", prefix, err)
		default:
			out = append(out, ref.Name)
		}
	}
	return out
}

// TestBadRefFile: one damaged ref file is its own error; every other ref
// is listed and works, and Replace repairs it.
func TestBadRefFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"truncated", "2DHW2FP49Y"},
		{"empty", ""},
		{"no newline", "2DHW2FP49YVD3 threads/B"},
		{"garbage", "\x00\xff garbage that is not a ref\n"},
		{"zero hash", "0000000000000 threads/B\n"},
		{"other name", "2DHW2FP49YVD3 threads/C\n"},
		{"huge", strings.Repeat("x", 100000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			s := newStore(t, &disk.Options{Now: clk.Now})
			r := s.Refs()
			ctx := t.Context()
			a, b, c := hashOf("a"), hashOf("b"), hashOf("c")
			mustCAS(t, r, "threads/A", 0, a, "create")
			mustCAS(t, r, "threads/B", 0, a, "create")
			mustCAS(t, r, "threads/B", a, b, "step")
			mustCAS(t, r, "threads/C", 0, c, "create")
			path := refFilePath(s, "threads/B")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}

			want := []string{"threads/A", "!threads/B", "threads/C"}
			if got := listAll(t, r, ""); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("List = %v, want %v", got, want)
			}
			if got := listAll(t, r, "threads/"); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("List(threads/) = %v, want %v", got, want)
			}
			_, err := r.Get(ctx, "threads/B")
			var bad *cas.BadRefError
			if !errors.As(err, &bad) || bad.Name != "threads/B" || bad.File != path {
				t.Fatalf("Get of the bad ref = %v, want a BadRefError naming threads/B and %s", err, path)
			}
			if len(bad.Error()) > 400 {
				t.Errorf("the error quotes too much: %d bytes", len(bad.Error()))
			}
			if err := r.CompareAndSwap(ctx, "threads/B", b, c, "move"); !errors.Is(err, cas.ErrBadRef) {
				t.Fatalf("CompareAndSwap of the bad ref = %v, want ErrBadRef", err)
			}
			if got := mustRef(t, r, "threads/A"); got != a {
				t.Fatalf("Get(threads/A) = %s, want %s", got, a)
			}
			if log := mustLog(t, r, "threads/B"); len(log) != 2 || log[1].New != b {
				t.Fatalf("Log of the bad ref = %+v", log)
			}
			// GC's prune keeps the log of a ref it cannot read.
			clk.Add(100 * time.Hour)
			if _, err := r.PruneLog(ctx, clk.Now()); err != nil {
				t.Fatal(err)
			}
			if log := mustLog(t, r, "threads/B"); len(log) != 2 {
				t.Fatalf("PruneLog pruned the log of a bad ref: %+v", log)
			}

			// Replace repairs it, logging the last logged value as old.
			if err := r.Replace(ctx, "threads/B", b, "restore"); err != nil {
				t.Fatalf("Replace: %v", err)
			}
			if got := mustRef(t, r, "threads/B"); got != b {
				t.Fatalf("after Replace, Get = %s, want %s", got, b)
			}
			log := mustLog(t, r, "threads/B")
			if e := log[len(log)-1]; len(log) != 3 || e.Old != b || e.New != b || e.Message != "restore" {
				t.Fatalf("after Replace, Log = %+v", log)
			}
			mustCAS(t, r, "threads/B", b, c, "step")
		})
	}
}

func TestBadRefFileRemovedByForce(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	ctx := t.Context()
	a := hashOf("a")
	mustCAS(t, r, "x/Y", 0, a, "create")
	if err := os.WriteFile(refFilePath(s, "x/Y"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(ctx, "x/Y", 0, "rm --force"); err != nil {
		t.Fatalf("Replace(0): %v", err)
	}
	if _, err := r.Get(ctx, "x/Y"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get after removal = %v, want ErrNotFound", err)
	}
	log := mustLog(t, r, "x/Y")
	if e := log[len(log)-1]; e.Old != a || !e.New.IsZero() {
		t.Fatalf("Log = %+v, want a last entry %s -> 0", log, a)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "refs", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the emptied folder is left: %v", err)
	}
	// A bad file with no log is removed without a log entry.
	if err := os.MkdirAll(filepath.Join(s.Dir(), "refs", "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(refFilePath(s, "z/w"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := listAll(t, r, ""); strings.Join(got, " ") != "!z/w" {
		t.Fatalf("List = %v", got)
	}
	if err := r.Replace(ctx, "z/w", 0, "rm --force"); err != nil {
		t.Fatal(err)
	}
	if got := listAll(t, r, ""); len(got) != 0 {
		t.Fatalf("List after removal = %v", got)
	}
	if _, err := r.Log(ctx, "z/w"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Log = %v, want ErrNotFound", err)
	}
}

// TestMissingRefFile: a ref file deleted behind uwf's back leaves a log
// that says the ref exists; the log is kept whole (not pruned, not
// truncated by the next change) until Replace decides.
func TestMissingRefFile(t *testing.T) {
	for _, creation := range []bool{false, true} {
		name := map[bool]string{false: "moved", true: "creation"}[creation]
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			s := newStore(t, &disk.Options{Now: clk.Now})
			r := s.Refs()
			ctx := t.Context()
			a, b, c := hashOf("a"), hashOf("b"), hashOf("c")
			mustCAS(t, r, "threads/T", 0, a, "create")
			want := a
			if !creation {
				clk.Add(time.Hour)
				mustCAS(t, r, "threads/T", a, b, "step")
				want = b
			}
			if err := os.Remove(refFilePath(s, "threads/T")); err != nil {
				t.Fatal(err)
			}
			if got := listAll(t, r, ""); len(got) != 0 {
				t.Fatalf("List = %v", got)
			}
			log := mustLog(t, r, "threads/T")
			if log[len(log)-1].New != want {
				t.Fatalf("Log = %+v, want it to end at %s", log, want)
			}
			n := len(log)
			clk.Add(1000 * time.Hour)
			if removed, err := r.PruneLog(ctx, clk.Now()); err != nil || removed != 0 {
				t.Fatalf("PruneLog = %d, %v; want the missing ref's log kept", removed, err)
			}
			if got := mustLog(t, r, "threads/T"); len(got) != n {
				t.Fatalf("after PruneLog, Log = %+v", got)
			}
			// A move from the logged value conflicts: the ref is not there.
			if err := r.CompareAndSwap(ctx, "threads/T", want, c, ""); !errors.Is(err, cas.ErrConflict) {
				t.Fatalf("CompareAndSwap from the logged value = %v, want a conflict", err)
			}
			if got := mustLog(t, r, "threads/T"); len(got) != n {
				t.Fatalf("a failed change altered the log: %+v", got)
			}
			// Replace restores it; the entry is not a creation.
			if err := r.Replace(ctx, "threads/T", want, "restore"); err != nil {
				t.Fatal(err)
			}
			if got := mustRef(t, r, "threads/T"); got != want {
				t.Fatalf("restored ref = %s, want %s", got, want)
			}
			log = mustLog(t, r, "threads/T")
			if e := log[len(log)-1]; len(log) != n+1 || e.Old != want || e.New != want {
				t.Fatalf("after Replace, Log = %+v", log)
			}
		})
	}
}

// TestMissingRefNextCreate: a create of a missing ref's name appends to
// its log, never truncating the entry that says the ref existed.
func TestMissingRefNextCreate(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	a, b := hashOf("a"), hashOf("b")
	mustCAS(t, r, "w", 0, a, "create")
	if err := os.Remove(refFilePath(s, "w")); err != nil {
		t.Fatal(err)
	}
	mustCAS(t, r, "w", 0, b, "again")
	log := mustLog(t, r, "w")
	if len(log) != 2 || log[0].New != a || log[1].New != b {
		t.Fatalf("Log = %+v, want the first creation kept", log)
	}
}

// TestMissingRefRemovedByForce: Replace to zero records the missing ref
// deleted; its log is then pruned as a deleted ref's.
func TestMissingRefRemovedByForce(t *testing.T) {
	clk := newClock()
	s := newStore(t, &disk.Options{Now: clk.Now})
	r := s.Refs()
	ctx := t.Context()
	a := hashOf("a")
	mustCAS(t, r, "w", 0, a, "create")
	if err := os.Remove(refFilePath(s, "w")); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(ctx, "w", 0, "rm --force"); err != nil {
		t.Fatal(err)
	}
	log := mustLog(t, r, "w")
	if e := log[len(log)-1]; len(log) != 2 || e.Old != a || !e.New.IsZero() {
		t.Fatalf("Log = %+v", log)
	}
	// Removing it again changes nothing.
	if err := r.Replace(ctx, "w", 0, "again"); err != nil {
		t.Fatal(err)
	}
	if got := mustLog(t, r, "w"); len(got) != 2 {
		t.Fatalf("a second removal logged: %+v", got)
	}
	clk.Add(time.Hour)
	if removed, err := r.PruneLog(ctx, clk.Now()); err != nil || removed != 2 {
		t.Fatalf("PruneLog = %d, %v; want the deleted ref's 2 entries", removed, err)
	}
}

func mustRef(t *testing.T, r cas.Refs, name string) cas.Hash {
	t.Helper()
	h, err := r.Get(t.Context(), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return h
}

// TestDamagedLog: a log file that cannot be parsed is one fsck problem;
// the other logs are listed and checked.
func TestDamagedLog(t *testing.T) {
	s := newStore(t, nil)
	ctx := t.Context()
	repo, err := cas.Open(ctx, s, s.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := repo.Refs()
	h, err := repo.Put(ctx, cas.ContentSchema, "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "Live", "gone"} {
		mustCAS(t, r, name, 0, h, "create")
	}
	mustCAS(t, r, "gone", h, 0, "delete")
	appendRaw(t, s, "Live", "not json\n")
	appendRaw(t, s, "gone", "not json\n")

	names := logNames(t, r)
	for _, want := range []string{"a", "gone"} {
		if !slices.Contains(names, want) {
			t.Errorf("Logs = %v, want %s listed", names, want)
		}
	}
	rep, err := repo.Fsck(ctx, nil)
	if err != nil {
		t.Fatalf("Fsck stopped at a damaged log: %v", err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.Kind+" "+p.Ref)
	}
	slices.Sort(got)
	if want := []string{"log Live", "log gone"}; !slices.Equal(got, want) {
		t.Errorf("fsck problems = %q, want %q", got, want)
	}
}

// TestMissingRefNameRetaken: a missing ref whose path another ref took
// since, in another case, is reported by fsck, cannot be restored (its
// name clashes), and is cleared by RemoveRef with force, leaving the other
// ref alone; fsck is then clean.
func TestMissingRefNameRetaken(t *testing.T) {
	s := newStore(t, nil)
	ctx := t.Context()
	repo, err := cas.Open(ctx, s, s.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := repo.Put(ctx, cas.ContentSchema, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.SetRef(ctx, "notes/foo", a, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(refFilePath(s, "notes/foo")); err != nil {
		t.Fatal(err)
	}
	if err := repo.SetRef(ctx, "notes/Foo", a, false); err != nil {
		t.Fatal(err)
	}
	rep, err := repo.Fsck(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Ref != "notes/foo" || rep.Problems[0].Kind != cas.ProblemMissingRefOrInterruptedCreate {
		t.Fatalf("fsck = %v, want one missing ref notes/foo", rep.Problems)
	}
	var ce *cas.ConflictError
	if _, err := repo.RestoreRef(ctx, "notes/foo", 0); !errors.As(err, &ce) || ce.Clash != "notes/Foo" {
		t.Errorf("RestoreRef(notes/foo) = %v, want a ConflictError naming notes/Foo", err)
	}
	if err := repo.RemoveRef(ctx, "notes/foo", true); err != nil {
		t.Fatalf("RemoveRef(notes/foo, force): %v", err)
	}
	if got := mustRef(t, s.Refs(), "notes/Foo"); got != a {
		t.Errorf("notes/Foo = %v after removing notes/foo, want %v", got, a)
	}
	if rep, err := repo.Fsck(ctx, nil); err != nil || !rep.OK() {
		t.Errorf("fsck after the forced removal = %v, %v; want clean", rep.Problems, err)
	}
}
