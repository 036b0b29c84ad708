package store_test

import (
	"errors"
	"testing"

	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/store"
)

// FuzzParse: Parse never panics; it names exactly one backend, a disk
// store with a path and a known durability; it refuses with a *URLError
// that names the URL with its password redacted.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/a/b", "rel", "/a?durability=none", "/a?", "file:///a%20b?durability=strict",
		"file://localhost/x", "file://", "file:///a?x=1&durability=none", "postgres://u:pw@h/db?sslmode=disable",
		"s3://b", "postgress://u:hunter22@h/db", "file:///a?password=hunter22", "~/x", "?durability=none", "file:///%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := store.Parse(raw)
		if err != nil {
			var ue *store.URLError
			if !errors.As(err, &ue) {
				t.Fatalf("Parse(%q) = %v, not a *URLError", raw, err)
			}
			if ue.URL != secret.RedactURL(raw) {
				t.Fatalf("Parse(%q) = %v: names the URL as %q, not as secret.RedactURL does", raw, err, ue.URL)
			}
			return
		}
		switch {
		case (loc.Dir == "") == (loc.Postgres == ""):
			t.Fatalf("Parse(%q) = %+v: want exactly one of Dir and Postgres", raw, loc)
		case loc.Postgres != "" && (loc.Postgres != raw || loc.Durability != ""):
			t.Fatalf("Parse(%q) = %+v: a PostgreSQL URL is passed whole", raw, loc)
		case loc.Durability != "" && loc.Durability != "strict" && loc.Durability != "none":
			t.Fatalf("Parse(%q) = %+v: unknown durability", raw, loc)
		}
	})
}
