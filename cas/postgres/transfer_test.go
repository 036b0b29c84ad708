package postgres_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

// storeState is everything of a store an export carries.
type storeState struct {
	objects []cas.Object // Time zeroed, in hash order
	refs    []cas.Ref
	logs    map[string][]cas.LogEntry
}

func stateOf(t *testing.T, st cas.Store, refs cas.Refs) storeState {
	t.Helper()
	ctx := t.Context()
	s := storeState{logs: map[string][]cas.LogEntry{}}
	for o, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		s.objects = append(s.objects, cas.Object{Hash: o.Hash, Size: o.Size})
	}
	slices.SortFunc(s.objects, func(a, b cas.Object) int {
		switch {
		case a.Hash < b.Hash:
			return -1
		case a.Hash > b.Hash:
			return 1
		}
		return 0
	})
	for ref, err := range refs.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		s.refs = append(s.refs, ref)
	}
	for name, err := range refs.Logs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		log, err := refs.Log(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		s.logs[name] = log
	}
	return s
}

func isBuiltinRef(name string) bool {
	rest, ok := strings.CutPrefix(name, "schemas/")
	return ok && cas.IsBuiltinName(rest)
}

// sameState fails t unless a and b hold the same objects (full lists), refs
// and logs, but for the built-in schema refs' logs: each store writes its
// own when it is opened, and an import leaves equal refs alone.
func sameState(t *testing.T, what string, a, b storeState) {
	t.Helper()
	if !slices.Equal(a.objects, b.objects) {
		t.Errorf("%s: object lists differ: %d and %d objects", what, len(a.objects), len(b.objects))
	}
	if !slices.Equal(a.refs, b.refs) {
		t.Errorf("%s: refs differ:\n\t%v\n\t%v", what, a.refs, b.refs)
	}
	if len(a.logs) != len(b.logs) {
		t.Errorf("%s: %d and %d logs", what, len(a.logs), len(b.logs))
	}
	for name, log := range a.logs {
		other, ok := b.logs[name]
		switch {
		case !ok:
			t.Errorf("%s: the log of %s is missing", what, name)
		case isBuiltinRef(name):
			if len(other) != 1 || other[0].New != log[len(log)-1].New {
				t.Errorf("%s: log of %s = %v", what, name, other)
			}
		case !slices.Equal(log, other):
			t.Errorf("%s: log of %s differs:\n\t%v\n\t%v", what, name, log, other)
		}
	}
}

func fsckClean(t *testing.T, what string, r *cas.Repo) {
	t.Helper()
	rep, err := r.Fsck(t.Context(), nil)
	if err != nil {
		t.Fatalf("%s: fsck: %v", what, err)
	}
	for _, p := range rep.Problems {
		t.Errorf("%s: fsck: %s", what, p)
	}
}

// TestTransferMemoryPostgresMemory exports a memory store, imports it into
// PostgreSQL, exports that and imports it into a fresh memory store: all
// three hold the same objects, refs and logs, and fsck finds nothing.
func TestTransferMemoryPostgresMemory(t *testing.T) {
	needPostgres(t)
	t.Parallel()
	ctx := t.Context()

	mem1 := cas.NewMemStore(nil)
	src, err := cas.Open(ctx, mem1, mem1.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cas.ParseJSON([]byte(noteSchema))
	if err != nil {
		t.Fatal(err)
	}
	note, err := src.PutSchema(ctx, "note", doc)
	if err != nil {
		t.Fatal(err)
	}
	put := func(typ cas.Hash, payload any) cas.Hash {
		t.Helper()
		h, err := src.Put(ctx, typ, payload)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	cas_ := func(name string, old, new cas.Hash, msg string) {
		t.Helper()
		if err := src.Refs().CompareAndSwap(ctx, name, old, new, msg); err != nil {
			t.Fatal(err)
		}
	}
	var prev cas.Hash
	for i := range 20 {
		body := put(cas.ContentSchema, strings.Repeat("step ", i+1)+"ünïcødé <&>")
		links := []any{}
		if prev != 0 {
			links = append(links, prev.String())
		}
		h := put(note, map[string]any{"title": "n", "body": body.String(), "links": links})
		cas_("threads/main", prev, h, "step\nline two")
		prev = h
	}
	cas_("threads/Fork", 0, prev, "fork")
	cas_("threads/gone", 0, prev, "create")
	cas_("threads/gone", prev, 0, "rm")
	put(cas.ContentSchema, "loose")
	want := stateOf(t, mem1, mem1.Refs())
	var tar1 bytes.Buffer
	if _, err := cas.Export(ctx, src, &tar1, nil); err != nil {
		t.Fatal(err)
	}

	pg := newStore(t)
	mid, err := cas.Open(ctx, pg, pg.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cas.Import(ctx, mid, bytes.NewReader(tar1.Bytes()), nil)
	if err != nil {
		t.Fatalf("import into PostgreSQL: %v", err)
	}
	if !slices.Equal(rep.Created, []string{"schemas/note", "threads/Fork", "threads/main"}) || rep.Logs != 1 {
		t.Errorf("import into PostgreSQL: %+v", rep)
	}
	sameState(t, "memory -> PostgreSQL", want, stateOf(t, pg, pg.Refs()))
	fsckClean(t, "PostgreSQL", mid)

	// Idempotent on PostgreSQL too.
	if rep, err = cas.Import(ctx, mid, bytes.NewReader(tar1.Bytes()), nil); err != nil || len(rep.Created) != 0 {
		t.Errorf("second import into PostgreSQL: %+v, %v", rep, err)
	}
	sameState(t, "memory -> PostgreSQL twice", want, stateOf(t, pg, pg.Refs()))

	var tar2 bytes.Buffer
	if _, err := cas.Export(ctx, mid, &tar2, nil); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if _, err := cas.Export(ctx, mid, &again, nil); err != nil || !bytes.Equal(again.Bytes(), tar2.Bytes()) {
		t.Errorf("two exports of the PostgreSQL store differ (%v)", err)
	}
	mem2 := cas.NewMemStore(nil)
	dst, err := cas.Open(ctx, mem2, mem2.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cas.Import(ctx, dst, bytes.NewReader(tar2.Bytes()), nil); err != nil {
		t.Fatalf("import into memory: %v", err)
	}
	sameState(t, "memory -> PostgreSQL -> memory", want, stateOf(t, mem2, mem2.Refs()))
	fsckClean(t, "the first memory store", src)
	fsckClean(t, "the second memory store", dst)
	castest.Verify(t, pg)
	castest.Verify(t, mem2)
}
