package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
)

// TestOpenWritesNothingAndAdditions: Open of an existing store changes no row of
// schema_version (its xmin, the transaction that last wrote it, stays),
// and additive SQL objects (the build's, and one a test adds) are made
// once, recorded apart from the format version.
func TestOpenWritesNothingAndAdditions(t *testing.T) {
	needPostgres(t)
	ctx := t.Context()
	schema := freshSchema(t)
	a := admin(t)
	q := func(sql string) string { return pgx.Identifier{schema}.Sanitize() + "." + sql }
	versionRow := func() (v int, xmin string) {
		t.Helper()
		if err := a.QueryRow(ctx, "SELECT version, xmin::text FROM "+q("schema_version")).Scan(&v, &xmin); err != nil {
			t.Fatal(err)
		}
		return v, xmin
	}
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
	v0, x0 := versionRow()
	// The build's own additions (the watch's tables, the derived cache)
	// are made with the store, recorded apart from the format version.
	if !tableExists("additions") || !tableExists("ref_log_quiet") || !tableExists("watch_trim") || !tableExists("derived") {
		t.Error("a new store lacks the released additions or their record")
	}
	openStore(t, schema)
	if v, x := versionRow(); v != v0 || x != x0 {
		t.Errorf("schema_version after a second Open = %d (xmin %s), want %d (xmin %s): Open wrote it", v, x, v0, x0)
	}

	postgres.AddAddition(t, "test-objects-size", `CREATE INDEX IF NOT EXISTS objects_size ON {{S}}.objects (size)`)
	openStore(t, schema)
	if !tableExists("additions") || !tableExists("objects_size") {
		t.Fatal("Open did not make the addition and its record")
	}
	var made string
	if err := a.QueryRow(ctx, "SELECT made::text FROM "+q("additions")+" WHERE name = 'test-objects-size'").Scan(&made); err != nil {
		t.Fatal(err)
	}
	if v, x := versionRow(); v != v0 || x != x0 {
		t.Errorf("an addition changed schema_version: %d (xmin %s), want %d (xmin %s)", v, x, v0, x0)
	}
	// Made once: a later Open leaves the record alone.
	openStore(t, schema)
	var again string
	if err := a.QueryRow(ctx, "SELECT made::text FROM "+q("additions")+" WHERE name = 'test-objects-size'").Scan(&again); err != nil || again != made {
		t.Errorf("the addition's record after another Open: %q, %v; want %q", again, err, made)
	}
}
