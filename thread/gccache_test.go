package thread_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

func TestGCDropsStepCache(t *testing.T) { testGCDropsStepCache(t, newTEnv(t)) }

// testGCDropsStepCache: GC drops the step-cache entries of a removed
// thread's nodes, keeps those of a live thread, and a live thread whose
// entries are dropped all the same (as GC may drop one racing a writer)
// shows the same counts, its entries then written again.
func testGCDropsStepCache(t *testing.T, te *tenv) {
	wf := te.reviewLoop()
	run := func(prompt string) string {
		id, _, err := te.e.Run(te.ctx, wf, prompt, t.TempDir(), &thread.RunOptions{Agent: "synth"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	kept, gone := run("kept"), run("gone")
	want, err := te.e.Show(te.ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.Show(te.ctx, gone); err != nil {
		t.Fatal(err)
	}
	d := te.repo.Derived()
	keysOf := func() map[string]bool {
		t.Helper()
		m := map[string]bool{}
		for k, err := range d.DerivedKeys(te.ctx) {
			if err != nil {
				t.Fatal(err)
			}
			m[k] = true
		}
		return m
	}
	// has reports whether the cache has an entry at key (an entry keyed
	// by a node may be kept with the node, and then is not listed).
	has := func(key string) bool {
		t.Helper()
		_, ok, err := d.GetDerived(te.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	headKey := func(id string) string { return "chain/" + te.head(id).String() }
	goneHead := headKey(gone)
	if !has(headKey(kept)) || !has(goneHead) {
		t.Fatalf("the step cache holds %v, want both heads' entries", keysOf())
	}
	goneListed := keysOf()[goneHead] // else kept with its node, and goes with it
	if err := te.repo.Refs().CompareAndSwap(te.ctx, "threads/"+gone, te.head(gone), 0, "remove"); err != nil {
		t.Fatal(err)
	}
	// Past GC's cutoff: the memory store runs on the test's clock.
	te.clock.Advance(time.Hour)
	time.Sleep(20 * time.Millisecond)
	st, err := te.repo.GC(te.ctx, &cas.GCOptions{Grace: -1, LogRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st.Deleted == 0 || (goneListed && st.DerivedDropped == 0) || len(st.Failures) > 0 {
		t.Fatalf("GC: %+v; want the removed thread's nodes and entries gone", st)
	}
	after := keysOf()
	if has(goneHead) || !has(headKey(kept)) {
		t.Errorf("after GC: removed head's entry there %v, kept head's %v; want false, true", has(goneHead), has(headKey(kept)))
	}
	for k := range after {
		rest, ok := strings.CutPrefix(k, "chain/")
		if !ok {
			continue
		}
		h, err := cas.ParseHash(rest)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := te.st.Has(te.ctx, h); err != nil || !ok {
			t.Errorf("after GC entry %s names a node present %v (%v)", k, ok, err)
		}
	}
	show := func(what string) {
		t.Helper()
		got, err := te.engine().Show(te.ctx, kept) // a cold engine: the store's cache only
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Show %s = %+v, want %+v", what, got, want)
		}
	}
	show("after GC")
	all := []string{headKey(kept)}
	for k := range after {
		all = append(all, k)
	}
	if err := d.DropDerived(te.ctx, all...); err != nil {
		t.Fatal(err)
	}
	if has(headKey(kept)) {
		t.Fatal("DropDerived left the head's entry")
	}
	show("with every entry dropped")
	if !has(headKey(kept)) {
		t.Error("Show with every entry dropped wrote no entry of the head back")
	}
}
