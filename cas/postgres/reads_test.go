package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
)

// TestReadBatch: objects and derived-cache entries in one statement give
// what GetBatch and GetDerivedBatch give: absent and corrupt objects as
// their errors, entries with or without the table, a bad key refused.
func TestReadBatch(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	s := newStore(t)
	a, err := s.Put(ctx, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Put(ctx, []byte(`{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	corruptible{s, t}.Corrupt(b, []byte(`{"b":3}`))
	missing := cas.Sum([]byte(`{"never":"stored"}`))
	if err := s.PutDerived(ctx, "chain/a", []byte("A")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDerived(ctx, "chain/empty", nil); err != nil {
		t.Fatal(err)
	}
	hs := []cas.Hash{a, b, missing, a}
	keys := []string{"chain/empty", "chain/none", "chain/a"}
	check := func(t *testing.T, wantEntries bool) {
		data, errs, derived, found, err := s.ReadBatch(ctx, hs, keys)
		if err != nil {
			t.Fatal(err)
		}
		if string(data[0]) != `{"a":1}` || errs[0] != nil || string(data[3]) != `{"a":1}` || errs[3] != nil {
			t.Errorf("object a = %q, %v and %q, %v; want its bytes twice", data[0], errs[0], data[3], errs[3])
		}
		if data[1] != nil || !errors.Is(errs[1], cas.ErrCorrupt) {
			t.Errorf("corrupt object = %q, %v; want ErrCorrupt", data[1], errs[1])
		}
		if data[2] != nil || !errors.Is(errs[2], cas.ErrNotFound) {
			t.Errorf("absent object = %q, %v; want ErrNotFound", data[2], errs[2])
		}
		want := []string{"", "", "A"}
		wantFound := []bool{wantEntries, false, wantEntries}
		for i, k := range keys {
			if found[i] != wantFound[i] || (found[i] && (derived[i] == nil || string(derived[i]) != want[i])) {
				t.Errorf("entry %s = %q, %v; want %q, %v", k, derived[i], found[i], want[i], wantFound[i])
			}
		}
		// The same through GetDerivedBatch, and with no objects or no keys.
		d2, f2, err := s.GetDerivedBatch(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if f2[i] != found[i] || string(d2[i]) != string(derived[i]) {
				t.Errorf("GetDerivedBatch entry %d = %q, %v; ReadBatch gave %q, %v", i, d2[i], f2[i], derived[i], found[i])
			}
		}
		if data, errs, _, _, err := s.ReadBatch(ctx, hs[:1], nil); err != nil || string(data[0]) != `{"a":1}` || errs[0] != nil {
			t.Errorf("ReadBatch without keys = %q, %v, %v", data, errs, err)
		}
	}
	t.Run("table", func(t *testing.T) { check(t, true) })
	if _, _, _, _, err := s.ReadBatch(ctx, hs, []string{"chain/a", "no key"}); !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("ReadBatch with a bad key = %v, want ErrInvalid", err)
	}
	if _, err := admin(t).Exec(ctx, "DROP TABLE "+pgx.Identifier{s.Schema(), "derived"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Run("no table", func(t *testing.T) { check(t, false) })
}

// TestGetRefNodes: refs and their objects in one statement: a missing ref
// is a zero hash, an absent or corrupt object nil bytes (the reader reads
// it again for its error); a bad name is refused. Through a Repo and a
// read memo, Get then reports a missing, corrupt or non-node object just
// as it does on the memory store, which has no such fast path.
func TestGetRefNodes(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	s := newStore(t)
	mem := cas.NewMemStore(nil)
	type backend struct {
		name    string
		st      cas.Store
		refs    cas.Refs
		corrupt func(cas.Hash, []byte) bool
	}
	for _, be := range []backend{
		{"postgres", s, s.Refs(), corruptible{s, t}.Corrupt},
		{"memory", mem, mem.Refs(), mem.Corrupt},
	} {
		t.Run(be.name, func(t *testing.T) {
			repo, err := cas.Open(ctx, be.st, be.refs, nil)
			if err != nil {
				t.Fatal(err)
			}
			good, err := repo.Put(ctx, cas.StartSchema, map[string]any{"workflow": cas.StartSchema.String(), "prompt": "p1", "cwd": "/"})
			if err != nil {
				t.Fatal(err)
			}
			bad, err := repo.Put(ctx, cas.StartSchema, map[string]any{"workflow": cas.StartSchema.String(), "prompt": "p2", "cwd": "/"})
			if err != nil {
				t.Fatal(err)
			}
			be.corrupt(bad, []byte(`{"x":1}`))
			notNode, err := be.st.Put(ctx, []byte(`"not a node"`))
			if err != nil {
				t.Fatal(err)
			}
			missing := cas.Sum([]byte(`{"never":"stored"}`))
			for name, h := range map[string]cas.Hash{"t/good": good, "t/bad": bad, "t/notnode": notNode, "t/missing": missing} {
				if err := be.refs.CompareAndSwap(ctx, name, 0, h, "test"); err != nil {
					t.Fatal(err)
				}
			}
			if rg, ok := be.refs.(cas.RefNodeGetter); ok {
				hs, data, err := rg.GetRefNodes(ctx, []string{"t/good", "t/bad", "t/none", "t/missing", "t/good"})
				if err != nil {
					t.Fatal(err)
				}
				if hs[0] != good || hs[4] != good || data[0] == nil || string(data[0]) != string(data[4]) {
					t.Errorf("t/good = %s %q, %s %q; want %s and its bytes twice", hs[0], data[0], hs[4], data[4], good)
				}
				if hs[1] != bad || data[1] != nil || hs[2] != 0 || data[2] != nil || hs[3] != missing || data[3] != nil {
					t.Errorf("t/bad, t/none, t/missing = %s %q, %s %q, %s %q; want %s and no bytes, nothing, %s and no bytes",
						hs[1], data[1], hs[2], data[2], hs[3], data[3], bad, missing)
				}
				if _, _, err := rg.GetRefNodes(ctx, []string{"t/good", "Bad Name"}); !errors.Is(err, cas.ErrInvalidRefName) {
					t.Errorf("GetRefNodes with a bad name = %v, want ErrInvalidRefName", err)
				}
			}
			mctx := cas.WithReadMemo(ctx)
			names := []string{"t/good", "t/bad", "t/notnode", "t/missing", "t/none"}
			hs, err := repo.GetRefs(mctx, names)
			if err != nil {
				t.Fatal(err)
			}
			want := []cas.Hash{good, bad, notNode, missing, 0}
			for i, name := range names {
				if hs[i] != want[i] {
					t.Errorf("GetRefs %s = %s, want %s", name, hs[i], want[i])
				}
			}
			if _, err := repo.Get(mctx, good); err != nil {
				t.Errorf("Get of the good node: %v", err)
			}
			for _, c := range []struct {
				h    cas.Hash
				want error
			}{{bad, cas.ErrCorrupt}, {notNode, cas.ErrInvalid}, {missing, cas.ErrNotFound}} {
				if _, err := repo.Get(mctx, c.h); !errors.Is(err, c.want) {
					t.Errorf("Get %s after GetRefs = %v, want %v", c.h, err, c.want)
				}
			}
			if _, err := repo.GetRefs(mctx, []string{"t/good", "Bad Name"}); !errors.Is(err, cas.ErrInvalidRefName) {
				t.Errorf("GetRefs with a bad name = %v, want ErrInvalidRefName", err)
			}
		})
	}
}

// TestPlanCacheMode: a store's connections use generic plans for its
// prepared statements (no planning per execution), unless the URL sets
// plan_cache_mode itself.
func TestPlanCacheMode(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	sep := "?"
	if strings.Contains(testURL, "?") {
		sep = "&"
	}
	for _, tc := range []struct{ url, want string }{
		{testURL, "force_generic_plan"},
		{testURL + sep + "plan_cache_mode=force_custom_plan", "force_custom_plan"},
	} {
		s, err := postgres.Open(ctx, tc.url, &postgres.Options{Schema: freshSchema(t)})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := postgres.Pool(s).QueryRow(ctx, "SHOW plan_cache_mode").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Open(%s): plan_cache_mode %q, want %q", tc.url, got, tc.want)
		}
		s.Close()
	}
}
