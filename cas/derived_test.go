package cas_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

func TestMemDerived(t *testing.T) {
	castest.RunDerived(t, func(t *testing.T) cas.Derived { return cas.NewMemStore(nil) })
}

// bareStore hides a MemStore's Derived cache.
type bareStore struct{ cas.Store }

// TestRepoDerived: Repo.Derived is the store's cache when it keeps one,
// else one of the Repo's own (the same on every call).
func TestRepoDerived(t *testing.T) {
	ctx := t.Context()
	ms := cas.NewMemStore(nil)
	r, err := cas.Open(ctx, ms, ms.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := r.Derived().(*cas.MemStore); !ok || d != ms {
		t.Errorf("Repo.Derived of a MemStore = %T, want the store", r.Derived())
	}
	ms2 := cas.NewMemStore(nil)
	r2, err := cas.Open(ctx, bareStore{ms2}, ms2.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Derived().PutDerived(ctx, "chain/x", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := r2.Derived().GetDerived(ctx, "chain/x"); string(v) != "v" || !ok || err != nil {
		t.Errorf("the Repo's own cache lost its entry: %q, %v, %v", v, ok, err)
	}
}

// TestRefDerivedDropped: Repo.Refs drops a ref's entry whenever the ref
// may begin a new incarnation (created, deleted, replaced, log imported),
// and keeps it across a plain move.
func TestRefDerivedDropped(t *testing.T) {
	ctx := t.Context()
	ms := cas.NewMemStore(nil)
	r, err := cas.Open(ctx, ms, ms.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Put(ctx, cas.ContentSchema, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Put(ctx, cas.ContentSchema, "b")
	if err != nil {
		t.Fatal(err)
	}
	refs := r.Refs()
	const name = "things/x"
	key := cas.RefDerivedKey(name)
	set := func() {
		t.Helper()
		if err := ms.PutDerived(ctx, key, []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	has := func() bool {
		t.Helper()
		_, ok, err := ms.GetDerived(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, c := range []struct {
		what string
		op   func(ctx context.Context) error
		kept bool
	}{
		{"create", func(ctx context.Context) error { return refs.CompareAndSwap(ctx, name, 0, a, "create") }, false},
		{"move", func(ctx context.Context) error { return refs.CompareAndSwap(ctx, name, a, b, "move") }, true},
		{"failed create", func(ctx context.Context) error { refs.CompareAndSwap(ctx, name, 0, a, "again"); return nil }, true},
		{"replace", func(ctx context.Context) error { return refs.Replace(ctx, name, a, "replace") }, false},
		{"delete", func(ctx context.Context) error { return refs.CompareAndSwap(ctx, name, a, 0, "rm") }, false},
		{"import", func(ctx context.Context) error {
			return refs.ImportLog(ctx, name, []cas.LogEntry{{New: b, Time: 1, Message: "imported"}})
		}, false},
	} {
		set()
		if err := c.op(ctx); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if got := has(); got != c.kept {
			t.Errorf("after %s the ref's entry is kept: %v, want %v", c.what, got, c.kept)
		}
	}
}

// ExampleRepo_Derived keeps a value derived from a ref in the store's
// derived cache: a moved ref keeps its entry, a re-created one loses it.
func ExampleRepo_Derived() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	a, _ := repo.Put(ctx, cas.ContentSchema, "a")
	b, _ := repo.Put(ctx, cas.ContentSchema, "b")
	refs := repo.Refs()
	if err := refs.CompareAndSwap(ctx, "things/x", 0, a, "create"); err != nil {
		panic(err)
	}
	key := cas.RefDerivedKey("things/x")
	if err := repo.Derived().PutDerived(ctx, key, []byte("created at "+a.String())); err != nil {
		panic(err)
	}
	refs.CompareAndSwap(ctx, "things/x", a, b, "move")
	_, ok, _ := repo.Derived().GetDerived(ctx, key)
	fmt.Println("after a move:", ok)
	refs.CompareAndSwap(ctx, "things/x", b, 0, "delete")
	refs.CompareAndSwap(ctx, "things/x", 0, b, "create again")
	_, ok, _ = repo.Derived().GetDerived(ctx, key)
	fmt.Println("after a re-creation:", ok)
	// Output:
	// after a move: true
	// after a re-creation: false
}

// TestGCDropsDerivedOfCorruptNode: GC deletes an unreachable corrupt node
// in a pass of its own (its edges are unknown), and drops its
// derived-cache entry in the same GC, as it does a deleted node's.
func TestGCDropsDerivedOfCorruptNode(t *testing.T) {
	ctx := t.Context()
	ms := cas.NewMemStore(nil)
	r, err := cas.Open(ctx, ms, ms.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ms.Put(ctx, []byte(`"unreachable"`))
	if err != nil {
		t.Fatal(err)
	}
	key := "chain/" + h.String()
	if err := r.Derived().PutDerived(ctx, key, []byte("entry")); err != nil {
		t.Fatal(err)
	}
	ms.Corrupt(h, []byte("damaged"))
	st, err := r.GC(ctx, &cas.GCOptions{Grace: -1})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if ok, _ := ms.Has(ctx, h); ok || st.Deleted != 1 {
		t.Fatalf("GC deleted %d (node present %v); want the corrupt node deleted", st.Deleted, ok)
	}
	if _, ok, err := r.Derived().GetDerived(ctx, key); err != nil || ok || st.DerivedDropped != 1 {
		t.Errorf("after GC: entry of the deleted corrupt node present %v (%v), DerivedDropped %d; want it dropped", ok, err, st.DerivedDropped)
	}
}
