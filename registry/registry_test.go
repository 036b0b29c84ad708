package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

// versions returns three different versions of the review-loop workflow.
func versions(t *testing.T) [3]*registry.Workflow {
	t.Helper()
	data := example(t, "review-loop.yaml")
	v1 := mustParse(t, "v1.yaml", data)
	v2 := mustParse(t, "v2.yaml", data)
	v2.Description = "second version"
	v3 := mustParse(t, "v3.yaml", data)
	v3.MaxSteps = 30
	v3.Roles["reviewer"].Goal = "You review carefully."
	return [3]*registry.Workflow{v1, v2, v3}
}

func mustPut(t *testing.T, reg *registry.Registry, w *registry.Workflow) registry.PutResult {
	t.Helper()
	res, err := reg.Put(t.Context(), w)
	if err != nil {
		t.Fatalf("Put(%s): %v", w.Name, err)
	}
	return res
}

func TestPut(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t)
	reg := registry.New(repo)
	w := mustParse(t, "review-loop.yaml", example(t, "review-loop.yaml"))
	res := mustPut(t, reg, w)
	if !res.Changed || res.Name != "review-loop" || !res.Previous.IsZero() || res.Hash.IsZero() {
		t.Fatalf("first Put = %+v", res)
	}
	again := mustPut(t, reg, w)
	if again.Changed || again.Hash != res.Hash || again.Previous != res.Hash {
		t.Errorf("second Put = %+v, want unchanged at %s", again, res.Hash)
	}
	log, err := repo.Refs().Log(ctx, "workflows/review-loop")
	if err != nil || len(log) != 1 || log[0].Message != "workflow put review-loop" || log[0].New != res.Hash {
		t.Errorf("log = %+v, %v; want one put entry", log, err)
	}

	// The node follows the workflow schema, with optional fields omitted.
	n, err := repo.Get(ctx, res.Hash)
	if err != nil || n.Type != cas.WorkflowSchema {
		t.Fatalf("Get = %+v, %v", n, err)
	}
	roles := n.Payload.(map[string]any)["roles"].(map[string]any)
	dev := roles["developer"].(map[string]any)
	if _, ok := dev["procedure"]; ok {
		t.Errorf("empty procedure stored: %v", dev)
	}
	sh, err := cas.ParseHash(dev["frontmatter"].(string))
	if err != nil {
		t.Fatal(err)
	}
	sn, err := repo.Get(ctx, sh)
	if err != nil || sn.Type != cas.MetaSchema {
		t.Errorf("schema node %s = %+v, %v", sh, sn, err)
	}

	// Load reads it back equal.
	got, err := reg.Load(ctx, res.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != w.Name || got.MaxSteps != w.MaxSteps || got.Description != w.Description ||
		got.Roles["planner"].Goal != w.Roles["planner"].Goal || got.Graph["reviewer"]["rejected"] != w.Graph["reviewer"]["rejected"] {
		t.Errorf("Load = %+v, want %+v", got, w)
	}
	if !slices.Equal(got.Statuses("reviewer"), []string{"approved", "rejected"}) {
		t.Errorf("loaded statuses %v", got.Statuses("reviewer"))
	}
	if err := got.Validate(); err != nil {
		t.Errorf("loaded workflow invalid: %v", err)
	}
	res2 := mustPut(t, reg, got)
	if res2.Changed || res2.Hash != res.Hash {
		t.Errorf("re-putting the loaded workflow = %+v", res2)
	}

	// Load refuses a node that is not a workflow.
	if _, err := reg.Load(ctx, sh); !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("Load(schema node) = %v, want ErrInvalid", err)
	}
	if _, err := reg.Load(ctx, cas.Hash(12345)); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Load(absent) = %v, want ErrNotFound", err)
	}
}

func TestPutInvalid(t *testing.T) {
	reg := registry.New(newRepo(t))
	w := mustParse(t, "review-loop.yaml", example(t, "review-loop.yaml"))
	delete(w.Graph, "developer")
	_, err := reg.Put(t.Context(), w)
	var ve *registry.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "review-loop.yaml:14:3: roles.developer: no graph entry") {
		t.Errorf("Put(invalid) = %v", err)
	}
}

// racingRefs moves a ref behind the registry's back just before its first
// compare-and-swap of that ref.
type racingRefs struct {
	cas.Refs
	name string
	to   cas.Hash
	done bool
}

func (r *racingRefs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if name == r.name && !r.done {
		r.done = true
		if err := r.Refs.CompareAndSwap(ctx, name, old, r.to, "someone else"); err != nil {
			return err
		}
	}
	return r.Refs.CompareAndSwap(ctx, name, old, new, message)
}

func TestPutConflict(t *testing.T) {
	ctx := t.Context()
	v := versions(t)
	base := newRepo(t)
	v1 := mustPut(t, registry.New(base), v[0])
	// A second Repo over the same store and refs, whose refs race.
	race := &racingRefs{Refs: base.Refs(), name: "workflows/review-loop", to: v1.Hash}
	repo, err := cas.Open(ctx, base.Store(), race, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(repo)
	if err := base.Refs().CompareAndSwap(ctx, "workflows/review-loop", v1.Hash, 0, "rm"); err != nil {
		t.Fatal(err)
	}
	// The ref is gone; the race recreates it at v1 before Put creates it.
	_, err = reg.Put(ctx, v[1])
	var ce *cas.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, cas.ErrConflict) || ce.Current != v1.Hash {
		t.Fatalf("Put during a race = %v, want a ConflictError naming %s", err, v1.Hash)
	}
	// Retrying wins.
	if res := mustPut(t, reg, v[1]); !res.Changed || res.Previous != v1.Hash {
		t.Errorf("retry = %+v", res)
	}
}

func TestHistoryRollback(t *testing.T) {
	ctx := t.Context()
	reg := registry.New(newRepo(t))
	v := versions(t)
	var h [3]cas.Hash
	for i, w := range v {
		h[i] = mustPut(t, reg, w).Hash
	}
	if h[0] == h[1] || h[1] == h[2] {
		t.Fatalf("versions share a hash: %v", h)
	}
	hist, err := reg.History(ctx, "review-loop")
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.Version{
		{Hash: h[0], Message: "workflow put review-loop"},
		{Hash: h[1], Message: "workflow put review-loop", Old: h[0]},
		{Hash: h[2], Message: "workflow put review-loop", Old: h[1]},
	}
	checkHistory(t, hist, want)

	// Rollback with no hash: the previous version, then back again (cd -).
	got, err := reg.Rollback(ctx, "review-loop", 0)
	if err != nil || got != h[1] {
		t.Fatalf("Rollback() = %s, %v, want %s", got, err, h[1])
	}
	got, err = reg.Rollback(ctx, "review-loop", 0)
	if err != nil || got != h[2] {
		t.Fatalf("second Rollback() = %s, %v, want %s", got, err, h[2])
	}
	// Rollback to a named version.
	got, err = reg.Rollback(ctx, "review-loop", h[0])
	if err != nil || got != h[0] {
		t.Fatalf("Rollback(v1) = %s, %v", got, err)
	}
	res, err := reg.Show(ctx, "review-loop")
	if err != nil || res.Hash != h[0] || res.Workflow.Description != v[0].Description {
		t.Errorf("Show after rollback = %+v, %v", res, err)
	}
	// Rolling back to where it is changes nothing.
	if got, err := reg.Rollback(ctx, "review-loop", h[0]); err != nil || got != h[0] {
		t.Errorf("Rollback(current) = %s, %v", got, err)
	}
	hist, _ = reg.History(ctx, "review-loop")
	want = append(want,
		registry.Version{Hash: h[1], Old: h[2], Message: "workflow rollback review-loop to " + h[1].String()},
		registry.Version{Hash: h[2], Old: h[1], Message: "workflow rollback review-loop to " + h[2].String()},
		registry.Version{Hash: h[0], Old: h[2], Message: "workflow rollback review-loop to " + h[0].String()},
	)
	checkHistory(t, hist, want)

	// A hash the log does not name is refused, saying how to see versions.
	other := mustPut(t, registry.New(newRepo(t)), mustParse(t, "d.yaml", example(t, "develop.yaml"))).Hash
	_, err = reg.Rollback(ctx, "review-loop", other)
	if !errors.Is(err, registry.ErrNotVersion) || !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "uwf workflow history review-loop") {
		t.Errorf("Rollback(foreign) = %v", err)
	}
	if _, err := reg.History(ctx, "nothing"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("History(nothing) = %v", err)
	}
	if _, err := reg.Rollback(ctx, "nothing", 0); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Rollback(nothing) = %v", err)
	}
}

func TestRollbackSingleVersion(t *testing.T) {
	reg := registry.New(newRepo(t))
	mustPut(t, reg, versions(t)[0])
	_, err := reg.Rollback(t.Context(), "review-loop", 0)
	if !errors.Is(err, registry.ErrNotVersion) || !strings.Contains(err.Error(), "no earlier version") {
		t.Errorf("Rollback with one version = %v", err)
	}
}

func checkHistory(t *testing.T, got, want []registry.Version) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("History has %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range got {
		if got[i].Hash != want[i].Hash || got[i].Old != want[i].Old || got[i].Message != want[i].Message {
			t.Errorf("History[%d] = %+v, want %+v", i, got[i], want[i])
		}
		if got[i].Time.IsZero() || got[i].Time.Location() != time.UTC || i > 0 && got[i].Time.Before(got[i-1].Time) {
			t.Errorf("History[%d].Time = %v", i, got[i].Time)
		}
	}
}

func TestRemoveRollbackGC(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t)
	reg := registry.New(repo)
	v := versions(t)
	var h [3]cas.Hash
	for i, w := range v {
		h[i] = mustPut(t, reg, w).Hash
	}
	if err := reg.Remove(ctx, "review-loop"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Remove(ctx, "review-loop"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
	if _, err := reg.Show(ctx, "review-loop"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Show after rm = %v", err)
	}
	list, err := reg.List(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("List after rm = %v, %v", list, err)
	}
	hist, err := reg.History(ctx, "review-loop")
	if err != nil || len(hist) != 4 || !hist[3].Hash.IsZero() || hist[3].Old != h[2] || hist[3].Message != "workflow rm review-loop" {
		t.Fatalf("History after rm = %+v, %v", hist, err)
	}

	// GC within the log retention keeps every version the log names, with
	// its role schemas; an orphan goes.
	orphan, err := repo.Put(ctx, cas.ContentSchema, "orphan")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	st, err := repo.GC(ctx, &cas.GCOptions{Grace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if st.Deleted == 0 {
		t.Errorf("GC deleted nothing: %+v", st)
	}
	if ok, _ := repo.Store().Has(ctx, orphan); ok {
		t.Errorf("orphan survived GC")
	}
	for i, hv := range h {
		s, err := reg.Show(ctx, hv.String())
		if err != nil {
			t.Fatalf("version %d after GC: %v", i+1, err)
		}
		if len(s.Schemas) != 3 {
			t.Errorf("version %d schemas %v", i+1, s.Schemas)
		}
	}

	// Rollback restores the ref from the log: the version before rm.
	got, err := reg.Rollback(ctx, "review-loop", 0)
	if err != nil || got != h[2] {
		t.Fatalf("Rollback after rm = %s, %v, want %s", got, err, h[2])
	}
	s, err := reg.Show(ctx, "review-loop")
	if err != nil || s.Hash != h[2] || s.Workflow.MaxSteps != 30 {
		t.Errorf("Show after restore = %+v, %v", s, err)
	}
	// Or any version, after another rm.
	if err := reg.Remove(ctx, "review-loop"); err != nil {
		t.Fatal(err)
	}
	if got, err := reg.Rollback(ctx, "review-loop", h[0]); err != nil || got != h[0] {
		t.Errorf("Rollback(v1) after rm = %s, %v", got, err)
	}
}

func TestList(t *testing.T) {
	ctx := t.Context()
	reg := registry.New(newRepo(t))
	before := time.Now().Add(-time.Second)
	mustPut(t, reg, mustParse(t, "review-loop.yaml", example(t, "review-loop.yaml")))
	dev := mustPut(t, reg, mustParse(t, "develop.yaml", example(t, "develop.yaml")))
	list, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "develop" || list[1].Name != "review-loop" {
		t.Fatalf("List = %+v", list)
	}
	if list[0].Hash != dev.Hash || list[0].Description != "Plan in phases, implement phase by phase, review, test, commit" {
		t.Errorf("List[0] = %+v", list[0])
	}
	for _, e := range list {
		if e.Updated.Before(before) || e.Updated.After(time.Now().Add(time.Second)) {
			t.Errorf("%s updated %v", e.Name, e.Updated)
		}
	}
}

func TestResolve(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t)
	reg := registry.New(repo)
	dir := t.TempDir()
	file := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(file, example(t, "review-loop.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	byFile, err := reg.Resolve(ctx, file)
	if err != nil || byFile.Source != "file" || byFile.Name != "review-loop" || byFile.Workflow == nil {
		t.Fatalf("Resolve(file) = %+v, %v", byFile, err)
	}
	byName, err := reg.Resolve(ctx, "review-loop")
	if err != nil || byName.Source != "name" || byName.Hash != byFile.Hash {
		t.Errorf("Resolve(name) = %+v, %v", byName, err)
	}
	byHash, err := reg.Resolve(ctx, strings.ToLower(byFile.Hash.String()))
	if err != nil || byHash.Source != "hash" || byHash.Name != "review-loop" || byHash.Hash != byFile.Hash {
		t.Errorf("Resolve(hash) = %+v, %v", byHash, err)
	}

	_, err = reg.Resolve(ctx, "nothing-here")
	if !errors.Is(err, cas.ErrNotFound) || err.Error() != `workflow "nothing-here": no such file, no workflow registered by that name, not a hash: cas: not found` {
		t.Errorf("Resolve(nothing-here) = %v", err)
	}
	_, err = reg.Resolve(ctx, "./missing.yaml")
	if !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "no such file, not a workflow name, not a hash") {
		t.Errorf("Resolve(./missing.yaml) = %v", err)
	}
	_, err = reg.Resolve(ctx, "0123456789ABC")
	if !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "no object with that hash") {
		t.Errorf("Resolve(absent hash) = %v", err)
	}
	_, err = reg.Resolve(ctx, cas.ContentSchema.String())
	if !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("Resolve(a schema's hash) = %v, want ErrInvalid", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Resolve(ctx, bad)
	var ve *registry.ValidationError
	if !errors.As(err, &ve) || ve.File != bad {
		t.Errorf("Resolve(bad file) = %v", err)
	}
}

func TestShow(t *testing.T) {
	ctx := t.Context()
	reg := registry.New(newRepo(t))
	res := mustPut(t, reg, mustParse(t, "develop.yaml", example(t, "develop.yaml")))
	for _, arg := range []string{"develop", res.Hash.String()} {
		s, err := reg.Show(ctx, arg)
		if err != nil {
			t.Fatalf("Show(%s): %v", arg, err)
		}
		if s.Name != "develop" || s.Hash != res.Hash || len(s.Schemas) != 5 || s.Payload["name"] != "develop" {
			t.Errorf("Show(%s) = %+v", arg, s)
		}
		fm := s.Payload["roles"].(map[string]any)["coder"].(map[string]any)["frontmatter"]
		if fm != s.Schemas["coder"].String() {
			t.Errorf("payload frontmatter %v, schema %s", fm, s.Schemas["coder"])
		}
	}
	if _, err := reg.Show(ctx, "nope"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Show(nope) = %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, registry.MaxWorkflowSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.ReadFile(big); !errors.Is(err, cas.ErrTooLarge) {
		t.Errorf("ReadFile(big) = %v, want ErrTooLarge", err)
	}
}

// TestListPastDamage: a workflow whose node is corrupt or missing is left
// out of List and named in its error, which wraps the cause; the others
// are listed.
func TestListPastDamage(t *testing.T) {
	ctx := t.Context()
	st := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(repo)
	review := mustPut(t, reg, mustParse(t, "review-loop.yaml", example(t, "review-loop.yaml")))
	mustPut(t, reg, mustParse(t, "develop.yaml", example(t, "develop.yaml")))
	st.Corrupt(review.Hash, []byte("garbage"))
	list, err := reg.List(ctx)
	if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), "workflow review-loop") {
		t.Errorf("List error = %v, want review-loop named as corrupt", err)
	}
	if len(list) != 1 || list[0].Name != "develop" {
		t.Errorf("List = %+v, want develop alone", list)
	}
	// A workflow ref pointing at a node the store does not hold.
	absent := cas.Sum([]byte("absent"))
	if err := st.Refs().CompareAndSwap(ctx, registry.RefName("develop"), list[0].Hash, absent, "vandal"); err != nil {
		t.Fatal(err)
	}
	list, err = reg.List(ctx)
	if !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "2 workflows left out") || list == nil || len(list) != 0 {
		t.Errorf("List = %+v, %v; want no entries (not nil) and both named", list, err)
	}
}

// TestEdgesOrder: Edges lists a parsed workflow's graph in the order of its
// file, and a stored one's in flow order (from $START, statuses as the
// schema lists them).
func TestEdgesOrder(t *testing.T) {
	ctx := t.Context()
	const file = `name: order
roles:
  zed:
    frontmatter: {type: object, properties: {status: {enum: [retry, ok]}}, required: [status]}
  alpha:
    frontmatter: {type: object, properties: {status: {const: done}}, required: [status]}
graph:
  alpha:
    done: { role: $END }
  zed:
    ok: { role: alpha }
    retry: { role: zed }
  $START: { new: { role: zed } }
`
	w := mustParse(t, "order.yaml", []byte(file))
	edges := func(w *registry.Workflow) []string {
		var out []string
		for _, e := range w.Edges() {
			out = append(out, e.From+" "+e.Status+" "+e.Role)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		w    func() *registry.Workflow
		want []string
	}{
		{"parsed: file order", func() *registry.Workflow { return w }, []string{
			"alpha done $END", "zed ok alpha", "zed retry zed", "$START new zed"}},
		{"stored: flow order", func() *registry.Workflow {
			st := cas.NewMemStore(nil)
			repo, err := cas.Open(ctx, st, st.Refs(), nil)
			if err != nil {
				t.Fatal(err)
			}
			reg := registry.New(repo)
			s, err := reg.Show(ctx, mustPut(t, reg, w).Hash.String())
			if err != nil {
				t.Fatal(err)
			}
			return s.Workflow
		}, []string{"$START new zed", "zed retry zed", "zed ok alpha", "alpha done $END"}},
	} {
		if got := edges(tc.w()); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Edges =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}
