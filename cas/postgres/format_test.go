package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/postgres"
)

// schemaState is what a test compares to see that nothing was written: the
// schema's relations and schema_version's row version (its xmin, the
// transaction that last wrote it).
func schemaState(t *testing.T, schema string) (rels []string, version string) {
	t.Helper()
	ctx := t.Context()
	a := admin(t)
	rows, err := a.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 ORDER BY c.relname`, schema)
	if err != nil {
		t.Fatal(err)
	}
	if rels, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if err := a.QueryRow(ctx, "SELECT version::text || ' xmin ' || xmin::text FROM "+
		pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&version); err != nil {
		t.Fatal(err)
	}
	return rels, version
}

// dropAdditions makes schema look like a store made by a build older than
// every addition.
func dropAdditions(t *testing.T, schema string) {
	t.Helper()
	for _, tbl := range []string{"additions", "ref_log_quiet", "watch_trim", "derived"} {
		if _, err := admin(t).Exec(t.Context(), "DROP TABLE "+pgx.Identifier{schema, tbl}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads s the ways a reader does: an object, a ref, the list of
// refs, a log, the derived cache (a get and the put readers make to fill
// it), a watch from the start and one from its head; it fails the test if
// any of them fails or misses what is there.
func readAll(t *testing.T, s *postgres.Store, obj cas.Hash) {
	t.Helper()
	ctx := t.Context()
	r := s.Refs()
	if _, err := s.Get(ctx, obj); err != nil {
		t.Errorf("Get: %v", err)
	}
	if h, err := r.Get(ctx, "threads/a"); err != nil || h != obj {
		t.Errorf("Refs.Get = %v, %v; want %v", h, err, obj)
	}
	var names []string
	for ref, err := range r.List(ctx, "") {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		names = append(names, ref.Name)
	}
	if !slices.Equal(names, []string{"threads/a"}) {
		t.Errorf("List = %v, want [threads/a]", names)
	}
	if log, err := r.Log(ctx, "threads/a"); err != nil || len(log) != 1 {
		t.Errorf("Log = %v, %v; want one entry", log, err)
	}
	if _, ok, err := s.GetDerived(ctx, "test/k"); err != nil || ok {
		t.Errorf("GetDerived = %v, %v; want a miss", ok, err)
	}
	if err := s.PutDerived(ctx, "test/k", []byte("v")); err != nil && !isPermission(err) {
		t.Errorf("PutDerived: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, castest.WatchWakeBound)
	defer cancel()
	for e, err := range r.Watch(wctx, "", "") {
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		if e.Ref != "threads/a" || e.New != obj {
			t.Errorf("Watch's first event %+v, want threads/a's creation", e)
		}
		break
	}
	head, err := r.WatchHead(ctx)
	if err != nil {
		t.Fatalf("WatchHead: %v", err)
	}
	hctx, hcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer hcancel()
	for e, err := range r.Watch(hctx, "", head) {
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Watch from the head: %v", err)
		} else if err == nil {
			t.Errorf("Watch from the head yielded %+v", e)
		}
		break
	}
}

// isPermission reports whether err is PostgreSQL's "permission denied".
func isPermission(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// TestOpenWritesNothingAndAdditions: Open of an existing store, and every
// read, create nothing and change no row (SPEC §9), even where the store
// lacks this build's additions (a store made by an older build): a reader
// takes them as empty. The additions come with a new store, and with the
// first write to an older one, recorded apart from the format version,
// each made once.
func TestOpenWritesNothingAndAdditions(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	schema := freshSchema(t)
	a := admin(t)
	tableExists := func(name string) bool {
		t.Helper()
		var ok bool
		if err := a.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", schema+"."+name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	s := openStore(t, schema)
	if v, err := s.Refs().FormatVersion(ctx); err != nil || v != cas.FormatV1 {
		t.Fatalf("FormatVersion of a new store = %d, %v; want 1", v, err)
	}
	// A new store gets the build's additions with its tables.
	for _, tbl := range []string{"additions", "ref_log_quiet", "watch_trim", "derived"} {
		if !tableExists(tbl) {
			t.Errorf("a new store lacks the addition table %s", tbl)
		}
	}
	obj, err := s.Put(ctx, []byte(`"an object"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refs().CompareAndSwap(ctx, "threads/a", 0, obj, "create"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// An older build's store: Open and every read write nothing.
	dropAdditions(t, schema)
	rels0, v0 := schemaState(t, schema)
	s = openStore(t, schema)
	readAll(t, s, obj)
	if rels, v := schemaState(t, schema); !slices.Equal(rels, rels0) || v != v0 {
		t.Errorf("Open and reads changed the store: relations %v, %s; want %v, %s", rels, v, rels0, v0)
	}
	// The first write makes them, once, under the format version.
	if err := s.Refs().CompareAndSwap(ctx, "threads/a", obj, 0, "delete"); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{"additions", "ref_log_quiet", "watch_trim", "derived"} {
		if !tableExists(tbl) {
			t.Errorf("the first write did not make the addition table %s", tbl)
		}
	}
	if _, v := schemaState(t, schema); v != v0 {
		t.Errorf("the additions changed schema_version: %s, want %s", v, v0)
	}

	postgres.AddAddition(t, "test-objects-size", `CREATE INDEX IF NOT EXISTS objects_size ON {{S}}.objects (size)`)
	s = openStore(t, schema)
	if tableExists("objects_size") {
		t.Fatal("Open made an addition")
	}
	if err := s.Refs().CompareAndSwap(ctx, "threads/b", 0, obj, "create"); err != nil {
		t.Fatal(err)
	}
	if !tableExists("objects_size") {
		t.Fatal("the first write did not make the addition")
	}
	var made string
	if err := a.QueryRow(ctx, "SELECT made::text FROM "+pgx.Identifier{schema, "additions"}.Sanitize()+
		" WHERE name = 'test-objects-size'").Scan(&made); err != nil {
		t.Fatal(err)
	}
	// Made once: a later Open and write leave the record alone.
	s = openStore(t, schema)
	if err := s.Refs().CompareAndSwap(ctx, "threads/b", obj, 0, "delete"); err != nil {
		t.Fatal(err)
	}
	var again string
	if err := a.QueryRow(ctx, "SELECT made::text FROM "+pgx.Identifier{schema, "additions"}.Sanitize()+
		" WHERE name = 'test-objects-size'").Scan(&again); err != nil || again != made {
		t.Errorf("the addition's record after another write: %q, %v; want %q", again, err, made)
	}
}

// TestReadOnlyRole: a role with only USAGE on the schema and SELECT on its
// tables opens a store, with or without this build's additions, and reads
// it (get, list refs, log, watch); its writes fail with PostgreSQL's
// permission error, and leave the store as it was.
func TestReadOnlyRole(t *testing.T) {
	needPostgres(t)
	for _, older := range []bool{false, true} {
		name := map[bool]string{false: "current", true: "older-build"}[older]
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			schema := freshSchema(t)
			s := openStore(t, schema)
			obj, err := s.Put(ctx, []byte(`"an object"`))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Refs().CompareAndSwap(ctx, "threads/a", 0, obj, "create"); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if older {
				dropAdditions(t, schema)
			}
			role := readOnlyRole(t, schema)
			rels0, v0 := schemaState(t, schema)
			// The role as a run-time parameter of every connection.
			sep := "?"
			if strings.Contains(testURL, "?") {
				sep = "&"
			}
			ro, err := postgres.Open(ctx, testURL+sep+"role="+role, &postgres.Options{Schema: schema, MaxConns: 4})
			if err != nil {
				t.Fatalf("Open as a read-only role: %v", err)
			}
			defer ro.Close()
			readAll(t, ro, obj)
			for _, w := range []struct {
				what string
				err  error
			}{
				{"create", ro.Refs().CompareAndSwap(ctx, "threads/b", 0, obj, "create")},
				{"move", ro.Refs().CompareAndSwap(ctx, "threads/a", obj, obj+1, "move")},
				{"put", func() error { _, err := ro.Put(ctx, []byte(`"new"`)); return err }()},
			} {
				if !isPermission(w.err) || !strings.Contains(w.err.Error(), "permission denied") {
					t.Errorf("%s as a read-only role: %v; want a permission error", w.what, w.err)
				}
			}
			if rels, v := schemaState(t, schema); !slices.Equal(rels, rels0) || v != v0 {
				t.Errorf("the read-only role changed the store: relations %v, %s; want %v, %s", rels, v, rels0, v0)
			}
		})
	}
}

// readOnlyRole makes a role, dropped when the test ends, with USAGE on
// schema and SELECT on its tables, and nothing else.
func readOnlyRole(t *testing.T, schema string) string {
	t.Helper()
	ctx := t.Context()
	a := admin(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	role := "uwf_ro_" + hex.EncodeToString(b[:])
	r, sch := pgx.Identifier{role}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{
		"CREATE ROLE " + r + " NOLOGIN",
		"GRANT USAGE ON SCHEMA " + sch + " TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + sch + " TO " + r,
	} {
		if _, err := a.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Owned objects and grants first (the schema may be gone already).
		a.Exec(ctx, "DROP OWNED BY "+r)
		if _, err := a.Exec(ctx, "DROP ROLE "+r); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	return role
}
