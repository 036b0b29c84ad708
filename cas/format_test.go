package cas_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// testKind is the schema of the version-2 kind the tests register: later
// issues add real ones the same way.
const testKind = `{"type":"object","properties":{"note":{"type":"string"},"of":{"type":"string","format":"cas_ref"}},"required":["note"],"additionalProperties":false}`

// snapshot is everything a store holds that Open must not change: objects,
// refs and every ref's log.
type snapshot struct {
	objects []cas.Hash
	refs    []cas.Ref
	logs    map[string][]cas.LogEntry
}

func takeSnapshot(t *testing.T, st cas.Store, refs cas.Refs) snapshot {
	t.Helper()
	ctx := t.Context()
	s := snapshot{logs: map[string][]cas.LogEntry{}}
	for o, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		s.objects = append(s.objects, o.Hash)
	}
	slices.Sort(s.objects)
	for r, err := range refs.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		s.refs = append(s.refs, r)
		log, err := refs.Log(ctx, r.Name)
		if err != nil {
			t.Fatal(err)
		}
		s.logs[r.Name] = log
	}
	return s
}

func (s snapshot) diff(o snapshot) string {
	var out []string
	if !slices.Equal(s.objects, o.objects) {
		out = append(out, "objects differ")
	}
	if !slices.Equal(s.refs, o.refs) {
		out = append(out, "refs differ")
	}
	for name, log := range s.logs {
		if !slices.Equal(log, o.logs[name]) {
			out = append(out, "log of "+name+" differs")
		}
	}
	return strings.Join(out, "; ")
}

func version(t *testing.T, r *cas.Repo) int {
	t.Helper()
	v, err := r.FormatVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	f.schema("note", mustJSON(t, noteSchema))
	if v := version(t, f.repo); v != cas.FormatV1 {
		t.Fatalf("a new store is at version %d, want %d", v, cas.FormatV1)
	}
	before := takeSnapshot(t, f.mem, f.mem.Refs())
	f.clock.Advance(time.Hour)
	for range 2 {
		if _, err := cas.Open(f.ctx, f.mem, f.mem.Refs(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := before.diff(takeSnapshot(t, f.mem, f.mem.Refs())); d != "" {
		t.Errorf("Open changed the store: %s", d)
	}
}

// TestRequireVersion bumps a version-1 store to 2 through the one function,
// on every backend this package can reach without a server.
func TestRequireVersion(t *testing.T) {
	kind := cas.AddTestKind(t, "test-kind", testKind)
	f := newFixture(t)
	f.verifyOnCleanup()
	x := f.text("x")
	if v := version(t, f.repo); v != cas.FormatV1 {
		t.Fatalf("version = %d before any version-2 kind, want 1", v)
	}
	if _, err := f.mem.Refs().Get(f.ctx, "schemas/test-kind"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("schemas/test-kind exists before the bump: %v", err)
	}
	// Check writes nothing, so it does not move the store.
	if _, err := f.repo.Check(f.ctx, cas.Node{Type: kind, Payload: map[string]any{"note": "hi"}}); err != nil {
		t.Fatalf("Check of a version-2 node: %v", err)
	}
	if v := version(t, f.repo); v != cas.FormatV1 {
		t.Fatalf("version = %d after Check, want 1", v)
	}
	// The first node of the kind moves the store to version 2.
	h := f.put(kind, map[string]any{"note": "hi", "of": x.String()})
	if v := version(t, f.repo); v != cas.FormatV2 {
		t.Fatalf("version = %d after a version-2 node, want 2", v)
	}
	if got, err := f.mem.Refs().Get(f.ctx, "schemas/test-kind"); err != nil || got != kind {
		t.Errorf("schemas/test-kind = %v, %v; want %v", got, err, kind)
	}
	log, _ := f.mem.Refs().Log(f.ctx, "schemas/test-kind")
	if len(log) != 1 || log[0].Message != "create built-in schema test-kind" {
		t.Errorf("log of schemas/test-kind = %+v", log)
	}
	if !f.has(h) {
		t.Errorf("the version-2 node %v was not stored", h)
	}
	// Again: nothing more happens.
	before := takeSnapshot(t, f.mem, f.mem.Refs())
	if err := f.repo.RequireVersion(f.ctx, cas.FormatV2); err != nil {
		t.Fatal(err)
	}
	if d := before.diff(takeSnapshot(t, f.mem, f.mem.Refs())); d != "" {
		t.Errorf("a second RequireVersion changed the store: %s", d)
	}
	// The name is reserved now.
	if _, err := f.repo.PutSchema(f.ctx, "test-kind", mustJSON(t, `{"type":"string"}`)); !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("PutSchema(test-kind) = %v, want ErrInvalid (reserved)", err)
	}
	rep, err := f.repo.Fsck(f.ctx, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("fsck after the bump: %v %+v", err, rep)
	}
	for _, bad := range []int{0, cas.LatestFormat + 1} {
		if err := f.repo.RequireVersion(f.ctx, bad); !errors.Is(err, cas.ErrFormat) {
			t.Errorf("RequireVersion(%d) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestRequireVersionReservedName(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	user := f.schema("test-kind", mustJSON(t, `{"type":"string"}`))
	kind := cas.AddTestKind(t, "test-kind", testKind)
	before := takeSnapshot(t, f.mem, f.mem.Refs())
	err := f.repo.RequireVersion(f.ctx, cas.FormatV2)
	var re *cas.ReservedNameError
	if !errors.As(err, &re) || re.Name != "test-kind" || re.Hash != user || re.Version != 2 {
		t.Fatalf("RequireVersion = %v, want a ReservedNameError naming test-kind", err)
	}
	if !errors.Is(err, cas.ErrConflict) || !strings.Contains(err.Error(), `"test-kind"`) {
		t.Errorf("error %q: want it to match ErrConflict and name the schema", err)
	}
	if v := version(t, f.repo); v != cas.FormatV1 {
		t.Errorf("version = %d after a refused bump, want 1", v)
	}
	if d := before.diff(takeSnapshot(t, f.mem, f.mem.Refs())); d != "" {
		t.Errorf("a refused bump changed refs or logs: %s", d)
	}
	// Writing a node of the kind is refused the same way.
	if _, err := f.repo.Put(f.ctx, kind, map[string]any{"note": "x"}); !errors.As(err, &re) {
		t.Errorf("Put of a version-2 node = %v, want a ReservedNameError", err)
	}
}

// TestDamagedBuiltins damages every kind of built-in state and checks that
// commands go on, fsck reports each once, and RepairBuiltins mends them
// with log entries.
func TestDamagedBuiltins(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	ctx := f.ctx
	x := f.text("x")
	// step: corrupt bytes; mark: ref moved; detail: ref deleted; failure:
	// object deleted.
	f.mem.Corrupt(cas.StepSchema, []byte("garbage"))
	if err := f.mem.Refs().CompareAndSwap(ctx, "schemas/mark", cas.MarkSchema, x, "vandal"); err != nil {
		t.Fatal(err)
	}
	if err := f.mem.Refs().CompareAndSwap(ctx, "schemas/detail", cas.DetailSchema, 0, "vandal"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	if ok, err := f.mem.DeleteIfOlder(ctx, cas.FailureSchema, f.clock.Now()); !ok || err != nil {
		t.Fatalf("delete the failure schema: %v %v", ok, err)
	}

	before := takeSnapshot(t, f.mem, f.mem.Refs())
	repo, err := cas.Open(ctx, f.mem, f.mem.Refs(), nil)
	if err != nil {
		t.Fatalf("Open of a store with damaged built-ins: %v", err)
	}
	if d := before.diff(takeSnapshot(t, f.mem, f.mem.Refs())); d != "" {
		t.Errorf("Open changed a damaged store: %s", d)
	}
	// Commands use the known hashes and bytes.
	for name, want := range map[string]cas.Hash{"step": cas.StepSchema, "mark": cas.MarkSchema, "detail": cas.DetailSchema} {
		if h, err := repo.ResolveType(ctx, name); err != nil || h != want {
			t.Errorf("ResolveType(%s) = %v, %v; want %v", name, h, err, want)
		}
	}
	if _, err := repo.Schema(ctx, cas.StepSchema); err != nil {
		t.Errorf("Schema(step) with corrupt bytes: %v", err)
	}
	if n, err := repo.Get(ctx, cas.StepSchema); err != nil || n.Type != cas.MetaSchema {
		t.Errorf("Get(step schema) = %v, %v", n, err)
	}

	rep, err := repo.Fsck(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.Kind+" "+p.Ref+" "+p.Hash.String())
	}
	slices.Sort(got)
	want := []string{
		"builtin  " + cas.FailureSchema.String(),
		"builtin  " + cas.StepSchema.String(),
		"builtin schemas/detail 0000000000000",
		"builtin schemas/mark " + x.String(),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("fsck problems:\n%s\nwant:\n%s\n(all: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), rep.Problems)
	}

	done, err := repo.RepairBuiltins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 4 {
		t.Errorf("RepairBuiltins did %d things, want 4: %v", len(done), done)
	}
	if rep, err := repo.Fsck(ctx, nil); err != nil || !rep.OK() {
		t.Errorf("fsck after the repair: %v %v", err, rep.Problems)
	}
	for _, name := range []string{"schemas/mark", "schemas/detail"} {
		log, _ := f.mem.Refs().Log(ctx, name)
		if last := log[len(log)-1]; !strings.HasPrefix(last.Message, "restore built-in schema ") {
			t.Errorf("log of %s ends with %+v, want a restore entry", name, last)
		}
	}
	if again, err := repo.RepairBuiltins(ctx); err != nil || len(again) != 0 {
		t.Errorf("a second repair = %v, %v; want nothing to do", again, err)
	}
}

// TestLostBuiltinPutBack: a write whose type is a built-in the store has
// lost puts the known bytes back instead of failing.
func TestLostBuiltinPutBack(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	f.clock.Advance(time.Hour)
	if ok, err := f.mem.DeleteIfOlder(f.ctx, cas.ContentSchema, f.clock.Now()); !ok || err != nil {
		t.Fatalf("delete the content schema: %v %v", ok, err)
	}
	if h, err := f.repo.Check(f.ctx, cas.Node{Type: cas.ContentSchema, Payload: "x"}); err != nil {
		t.Errorf("Check with a lost built-in type = %v, %v", h, err)
	}
	f.text("hello")
	if !f.has(cas.ContentSchema) {
		t.Error("the content schema was not put back by a write")
	}
}

// TestOpenInitialises: a new store, or one whose creation was cut short
// before schemas/meta was named, is initialised by Open; a store in use
// that lost schemas/meta is damaged, and Open leaves it alone.
func TestOpenInitialises(t *testing.T) {
	ctx := t.Context()
	mem := cas.NewMemStore(nil)
	// Cut short: two built-ins stored, one named, no schemas/meta.
	if _, err := mem.Put(ctx, cas.MetaSchemaNode()); err != nil {
		t.Fatal(err)
	}
	content := cas.Builtins()[1]
	if _, err := mem.Put(ctx, content.Node); err != nil {
		t.Fatal(err)
	}
	if err := mem.Refs().CompareAndSwap(ctx, "schemas/content", 0, content.Hash, "create built-in schema content"); err != nil {
		t.Fatal(err)
	}
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := repo.Fsck(ctx, nil); err != nil || !rep.OK() {
		t.Fatalf("fsck after completing a cut-short creation: %v %v", err, rep.Problems)
	}
	for _, b := range cas.BuiltinsAt(cas.FormatV1) {
		if log, _ := mem.Refs().Log(ctx, "schemas/"+b.Name); len(log) != 1 {
			t.Errorf("log of schemas/%s has %d entries, want 1", b.Name, len(log))
		}
	}

	// In use, then schemas/meta lost: damaged, not new.
	x, err := repo.Put(ctx, cas.ContentSchema, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Refs().CompareAndSwap(ctx, "notes/x", 0, x, "test"); err != nil {
		t.Fatal(err)
	}
	if err := mem.Refs().CompareAndSwap(ctx, "schemas/meta", cas.MetaSchema, 0, "vandal"); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, mem, mem.Refs())
	if _, err := cas.Open(ctx, mem, mem.Refs(), nil); err != nil {
		t.Fatal(err)
	}
	if d := before.diff(takeSnapshot(t, mem, mem.Refs())); d != "" {
		t.Errorf("Open of a store that lost schemas/meta changed it: %s", d)
	}
}

// TestVersionTwoBuiltinOnlyByBump: a version-2 built-in enters a version-1
// store only through the bump (SPEC §9), whichever write names it first: a
// node whose payload refers to it by cas_ref (PutNode, PutEach), or a ref
// moved to it (CompareAndSwap, Replace). A user schema holding the
// reserved name refuses the bump, and then the write, storing nothing.
func TestVersionTwoBuiltinOnlyByBump(t *testing.T) {
	ways := []struct {
		name  string
		write func(f *fixture, link, kind cas.Hash) error
	}{
		{"PutNode with a cas_ref", func(f *fixture, link, kind cas.Hash) error {
			_, err := f.repo.Put(f.ctx, link, map[string]any{"to": kind.String()})
			return err
		}},
		{"PutEach with a cas_ref", func(f *fixture, link, kind cas.Hash) error {
			_, errs := f.repo.PutEach(f.ctx, []cas.Node{{Type: link, Payload: map[string]any{"to": kind.String()}}})
			return errs[0]
		}},
		{"ref CompareAndSwap", func(f *fixture, link, kind cas.Hash) error {
			return f.repo.Refs().CompareAndSwap(f.ctx, "notes/x", 0, kind, "set")
		}},
		{"ref Replace", func(f *fixture, link, kind cas.Hash) error {
			return f.repo.Refs().Replace(f.ctx, "notes/x", kind, "set --force")
		}},
		{"SetRef", func(f *fixture, link, kind cas.Hash) error {
			return f.repo.SetRef(f.ctx, "notes/x", kind, false)
		}},
	}
	const linkSchema = `{"type":"object","properties":{"to":{"type":"string","format":"cas_ref"}},"required":["to"]}`
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			kind := cas.AddTestKind(t, "test-kind", testKind)
			f := newFixture(t)
			f.verifyOnCleanup()
			link := f.schema("link", mustJSON(t, linkSchema))
			if err := w.write(f, link, kind); err != nil {
				t.Fatalf("write naming the version-2 built-in: %v", err)
			}
			if v := version(t, f.repo); v != cas.FormatV2 {
				t.Errorf("version = %d after a write naming a version-2 built-in, want 2 (stored without the bump)", v)
			}
			if !f.has(kind) {
				t.Errorf("the version-2 built-in %v is not stored", kind)
			}
			log, err := f.mem.Refs().Log(f.ctx, "schemas/test-kind")
			if err != nil || len(log) != 1 || log[0].New != kind || log[0].Message != "create built-in schema test-kind" {
				t.Errorf("log of schemas/test-kind = %+v, %v; want its creation by the bump", log, err)
			}
			f.fsckClean()
		})
		t.Run(w.name+", name reserved", func(t *testing.T) {
			f := newFixture(t)
			f.verifyOnCleanup()
			link := f.schema("link", mustJSON(t, linkSchema))
			user := f.schema("test-kind", mustJSON(t, `{"type":"string"}`))
			kind := cas.AddTestKind(t, "test-kind", testKind)
			before := takeSnapshot(t, f.mem, f.mem.Refs())
			var re *cas.ReservedNameError
			if err := w.write(f, link, kind); !errors.As(err, &re) || re.Hash != user {
				t.Fatalf("write naming the version-2 built-in = %v, want a ReservedNameError", err)
			}
			if v := version(t, f.repo); v != cas.FormatV1 {
				t.Errorf("version = %d after a refused bump, want 1", v)
			}
			if d := before.diff(takeSnapshot(t, f.mem, f.mem.Refs())); d != "" {
				t.Errorf("a refused write changed the store: %s", d)
			}
		})
	}
}

// TestRepairVersionTwoBuiltinRef: on a version-2 store, a fresh Repo
// repairs a version-2 built-in's moved ref without trying to bump again.
func TestRepairVersionTwoBuiltinRef(t *testing.T) {
	kind := cas.AddTestKind(t, "test-kind", testKind)
	f := newFixture(t)
	f.verifyOnCleanup()
	if err := f.repo.RequireVersion(f.ctx, cas.FormatV2); err != nil {
		t.Fatal(err)
	}
	x := f.text("x")
	if err := f.mem.Refs().CompareAndSwap(f.ctx, "schemas/test-kind", kind, x, "moved by hand"); err != nil {
		t.Fatal(err)
	}
	repo, err := cas.Open(f.ctx, f.mem, f.mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := repo.RepairBuiltins(f.ctx)
	if err != nil || len(reps) != 1 {
		t.Fatalf("RepairBuiltins = %+v, %v; want one repair", reps, err)
	}
	if h, err := f.mem.Refs().Get(f.ctx, "schemas/test-kind"); err != nil || h != kind {
		t.Errorf("schemas/test-kind = %v, %v after the repair, want %v", h, err, kind)
	}
	f.fsckClean()
}
