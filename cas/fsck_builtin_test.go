package cas_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

// TestDamagedBuiltinRefs: a built-in schema's ref that cannot be read,
// one deleted behind the store's back and one moved to an absent node are
// each reported once, as builtin problems (the unreadable one naming its
// file), while a user ref's damage is still a bad-ref; GC refuses while the
// built-in ref cannot be read; RepairBuiltins replaces all three with a
// log entry each, and leaves the user ref alone.
func TestDamagedBuiltinRefs(t *testing.T) {
	f := newDamagedFixture(t)
	a := f.text("a")
	f.setRef("notes/a", a)
	absent := cas.Sum([]byte("absent"))
	if err := f.mem.Refs().CompareAndSwap(f.ctx, "schemas/detail", cas.DetailSchema, absent, "vandal"); err != nil {
		t.Fatal(err)
	}
	f.refs.damage("schemas/step")
	f.drop("schemas/mark")
	f.refs.damage("notes/a")
	junk := f.text("junk")

	got, rep := f.problems(nil)
	want := []string{
		"bad-ref notes/a " + a.String(),
		"builtin schemas/detail " + absent.String(),
		"builtin schemas/mark 0000000000000",
		"builtin schemas/step 0000000000000",
	}
	if !slices.Equal(got, want) {
		t.Errorf("fsck problems:\n%s\nwant:\n%s\n(all: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), rep.Problems)
	}
	for _, p := range rep.Problems {
		if p.Ref == "schemas/step" && !strings.Contains(p.Msg, "file refs/schemas/step: malformed") {
			t.Errorf("the unreadable built-in ref's problem does not name its file: %s", p)
		}
	}

	f.clock.Advance(365 * 24 * time.Hour)
	_, err := f.repo.GC(f.ctx, &cas.GCOptions{Grace: -1, LogRetention: -1})
	if !errors.Is(err, cas.ErrBadRef) || !strings.Contains(err.Error(), "schemas/step") {
		t.Errorf("GC with an unreadable built-in ref = %v, want a refusal naming schemas/step", err)
	}
	if !f.has(junk) {
		t.Error("GC deleted a node while a built-in ref could not be read")
	}

	done, err := f.repo.RepairBuiltins(f.ctx)
	if err != nil {
		t.Fatalf("RepairBuiltins: %v", err)
	}
	var lines []string
	for _, rp := range done {
		lines = append(lines, rp.String())
	}
	wantLines := []string{
		"ref schemas/step -> " + cas.StepSchema.String() + ": rewrote the unreadable ref of the built-in schema step (file refs/schemas/step)",
		"ref schemas/mark -> " + cas.MarkSchema.String() + ": created the ref of the built-in schema mark",
		"ref schemas/detail -> " + cas.DetailSchema.String() + ": moved the ref of the built-in schema detail back from " + absent.String(),
	}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("RepairBuiltins did:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
	// Each repair is logged; a replaced ref's entry starts from its log's
	// newest value, so it does not read as a creation.
	for _, tc := range []struct {
		name     string
		old, new cas.Hash
	}{
		{"schemas/step", cas.StepSchema, cas.StepSchema},
		{"schemas/mark", cas.MarkSchema, cas.MarkSchema},
		{"schemas/detail", absent, cas.DetailSchema},
	} {
		log := f.log(tc.name)
		last := log[len(log)-1]
		if last.Old != tc.old || last.New != tc.new || last.Message != "restore built-in schema "+strings.TrimPrefix(tc.name, "schemas/") {
			t.Errorf("log of %s ends with %+v, want %s -> %s, restore built-in schema", tc.name, last, tc.old, tc.new)
		}
		if h, err := f.repo.Refs().Get(f.ctx, tc.name); err != nil || h != tc.new {
			t.Errorf("%s after the repair = %v, %v; want %v", tc.name, h, err, tc.new)
		}
	}
	if got, _ := f.problems(nil); !slices.Equal(got, []string{"bad-ref notes/a " + a.String()}) {
		t.Errorf("fsck after the repair: %v, want only the user ref's damage", got)
	}
	if again, err := f.repo.RepairBuiltins(f.ctx); err != nil || len(again) != 0 {
		t.Errorf("a second repair = %v, %v; want nothing to do", again, err)
	}
}

// TestRepairBuiltinsPastAnUnreadableRef: a built-in ref that fails to
// read for another reason than damage (an I/O error) is named in the
// error, and the other built-ins are repaired all the same.
func TestRepairBuiltinsPastAnUnreadableRef(t *testing.T) {
	f := newFixture(t)
	eio := errors.New("input/output error")
	refs := &castest.FaultyRefs{Refs: f.mem.Refs(), Fail: castest.FailOn("get", "schemas/content", eio)}
	repo, err := cas.Open(f.ctx, f.mem, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	cas.DropMemRef(f.mem.Refs(), "schemas/mark")
	done, err := repo.RepairBuiltins(f.ctx)
	if !errors.Is(err, eio) || !strings.Contains(err.Error(), "schemas/content") {
		t.Errorf("RepairBuiltins error = %v, want the read failure of schemas/content", err)
	}
	if len(done) != 1 || done[0].Ref != "schemas/mark" {
		t.Errorf("RepairBuiltins did %v, want schemas/mark created", done)
	}
	if h, err := f.mem.Refs().Get(f.ctx, "schemas/mark"); err != nil || h != cas.MarkSchema {
		t.Errorf("schemas/mark after the repair = %v, %v", h, err)
	}
}

// TestRepairBuiltinsConcurrent: repairs run at once mend each damaged
// built-in ref once: one log entry each, whoever does it.
func TestRepairBuiltinsConcurrent(t *testing.T) {
	f := newDamagedFixture(t)
	f.refs.damage("schemas/step")
	f.drop("schemas/mark")
	before := map[string]int{"schemas/step": len(f.log("schemas/step")), "schemas/mark": len(f.log("schemas/mark"))}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { _, errs[i] = f.repo.RepairBuiltins(f.ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("repair %d: %v", i, err)
		}
	}
	for name, n := range before {
		if got := len(f.log(name)); got != n+1 {
			t.Errorf("log of %s has %d entries after the repairs, want %d", name, got, n+1)
		}
	}
	if got, _ := f.problems(nil); len(got) != 0 {
		t.Errorf("fsck after the repairs: %v", got)
	}
}
