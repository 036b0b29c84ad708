package main

import (
	"path/filepath"
	"testing"

	"github.com/uncaged/uwf/store"
)

// TestAbsStoreURL: the store URL agents get names, from any folder, the
// store the URL names from uwf's, with the same durability; PostgreSQL
// URLs and URLs store.Parse refuses are passed unchanged.
func TestAbsStoreURL(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", filepath.Join(dir, "home"))
	for _, tc := range []struct {
		raw, want string
	}{
		{"s", filepath.Join(dir, "s")},
		{"./a/../s", filepath.Join(dir, "s")},
		{"s?durability=none", filepath.Join(dir, "s") + "?durability=none"},
		{"/abs/s", "/abs/s"},
		{"/abs/s?durability=strict", "/abs/s?durability=strict"},
		{"/abs/a?b", "/abs/a?b"}, // a plain path holding '?' is taken whole
		{"a?b", "file://" + filepath.Join(dir, "a%3Fb")},
		{"file://rel/s?durability=none", filepath.Join(dir, "rel", "s") + "?durability=none"},
		{"file:///abs/s", "/abs/s"},
		{"file://a%3Fb?durability=none", "file://" + filepath.Join(dir, "a%3Fb") + "?durability=none"},
		{"file://a%20b", filepath.Join(dir, "a b")},
		{"~/s", filepath.Join(dir, "home", "s")},
		{"postgres://u:pw@host/db?sslmode=disable", "postgres://u:pw@host/db?sslmode=disable"},
		{"s?durability=fast", "s?durability=fast"}, // refused when opened
		{"s3://bucket", "s3://bucket"},
	} {
		got := absStoreURL(tc.raw)
		if got != tc.want {
			t.Errorf("absStoreURL(%q) = %q, want %q", tc.raw, got, tc.want)
			continue
		}
		// It reads back as the same store, from another folder.
		before, err := store.Parse(tc.raw)
		if err != nil {
			continue
		}
		t.Chdir(t.TempDir())
		after, err := store.Parse(got)
		t.Chdir(dir)
		if err != nil {
			t.Errorf("store.Parse(%q): %v", got, err)
			continue
		}
		if before.Dir != "" {
			abs, _ := filepath.Abs(before.Dir)
			before.Dir = abs
		}
		if after != before {
			t.Errorf("store.Parse(%q) = %+v, want %+v (as %q from uwf's folder)", got, after, before, tc.raw)
		}
	}
}
