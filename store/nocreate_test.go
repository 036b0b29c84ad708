package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/store"
)

// refNames lists repo's refs.
func refNames(t *testing.T, repo *cas.Repo) []string {
	t.Helper()
	var out []string
	for ref, err := range repo.Refs().List(t.Context(), "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ref.Name)
	}
	return out
}

// files lists the paths under dir, relative to it ("" if dir is absent).
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestOpenNoCreateDisk opens disk stores with NoCreate: where there is no
// store, an error wrapping cas.ErrNotFound and nothing created; a store
// whose creation was cut short is opened but not initialised; a store
// opens as usual.
func TestOpenNoCreateDisk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
		refs    []string // the refs read; nil: Open fails with ErrNotFound
	}{
		{"no folder", func(*testing.T, string) {}, nil},
		{"an empty folder", func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"creation cut short", func(t *testing.T, dir string) {
			st, err := disk.Create(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
		}, []string{}},
		{"a store", func(t *testing.T, dir string) {
			repo, release, err := store.Open(t.Context(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			put(t, repo, "kept")
			release()
		}, []string{"notes/kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "parent")
			dir := filepath.Join(parent, "store")
			tc.prepare(t, dir)
			before := files(t, parent)
			repo, release, err := store.Open(t.Context(), dir, &store.Options{NoCreate: true})
			if tc.refs == nil {
				if !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("Open = %v; want an error naming %s and wrapping cas.ErrNotFound", err, dir)
				}
			} else {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				got := refNames(t, repo)
				release()
				if !slices.Contains(tc.refs, "notes/kept") && len(got) != 0 {
					t.Errorf("refs = %q; want none (the store was initialised)", got)
				}
				if slices.Contains(tc.refs, "notes/kept") && !slices.Contains(got, "notes/kept") {
					t.Errorf("refs = %q; want notes/kept among them", got)
				}
			}
			if after := files(t, parent); !slices.Equal(after, before) {
				t.Errorf("Open with NoCreate changed the files:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestOpenNoCreatePostgres is TestOpenNoCreateDisk on PostgreSQL: a
// missing schema is not created, an empty one gets no tables, one whose
// store was made but not initialised gets no refs.
func TestOpenNoCreatePostgres(t *testing.T) {
	base := pgtest.URL(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", pgtest.EnvVar, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, schema, url string)
		refs    int // how many refs are read; -1: Open fails with ErrNotFound
	}{
		{"no schema", func(*testing.T, string, string) {}, -1},
		{"an empty schema", func(t *testing.T, schema, _ string) {
			if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
		}, -1},
		{"creation cut short", func(t *testing.T, schema, url string) {
			st, err := postgres.Open(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
		}, 0},
		{"a store", func(t *testing.T, _, url string) {
			repo, release, err := store.Open(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			put(t, repo, "kept")
			release()
		}, -2}, // the built-ins and notes/kept
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := pgtest.Schema(t, "uwf_nocreate_")
			url := base + sep + "schema=" + schema
			tc.prepare(t, schema, url)
			tables := func() int {
				return count("SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema)
			}
			schemas, tablesBefore := count("SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", schema), tables()
			repo, release, err := store.Open(ctx, url, &store.Options{NoCreate: true})
			switch {
			case tc.refs == -1:
				if !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), schema) {
					t.Fatalf("Open = %v; want an error naming schema %s and wrapping cas.ErrNotFound", err, schema)
				}
			case err != nil:
				t.Fatalf("Open: %v", err)
			default:
				got := refNames(t, repo)
				release()
				if tc.refs == 0 && len(got) != 0 {
					t.Errorf("refs = %q; want none (the store was initialised)", got)
				}
				if tc.refs == -2 && !slices.Contains(got, "notes/kept") {
					t.Errorf("refs = %q; want notes/kept among them", got)
				}
			}
			if n := count("SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", schema); n != schemas {
				t.Errorf("Open with NoCreate: schemas named %s went from %d to %d", schema, schemas, n)
			}
			if n := tables(); n != tablesBefore {
				t.Errorf("Open with NoCreate: the schema's tables went from %d to %d", tablesBefore, n)
			}
		})
	}
}
