package disk_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/disk"
)

func TestDerived(t *testing.T) {
	castest.RunDerived(t, func(t *testing.T) cas.Derived {
		st, err := disk.Create(t.TempDir(), &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestDerivedFolder: entries live under cache/ and nowhere else (no
// object, ref or log), a file naming another key is no entry, and
// deleting the folder loses only the entries.
func TestDerivedFolder(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := disk.Create(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutDerived(ctx, "chain/a", []byte("A")); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(filepath.Join(dir, "cache"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if len(files) != 1 {
		t.Fatalf("cache/ holds %v, want one entry file", files)
	}
	for obj, err := range st.All(ctx) {
		t.Errorf("an entry made object %v (%v)", obj, err)
	}
	for ref, err := range st.Refs().List(ctx, "") {
		t.Errorf("an entry made ref %v (%v)", ref, err)
	}
	// A file moved to another key's place (a foreign entry) is no entry.
	if err := st.PutDerived(ctx, "chain/b", []byte("B")); err != nil {
		t.Fatal(err)
	}
	var pb string
	filepath.WalkDir(filepath.Join(dir, "cache"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != files[0] {
			pb = p
		}
		return err
	})
	if err := os.Rename(files[0], pb); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.GetDerived(ctx, "chain/b"); ok || err != nil {
		t.Errorf("GetDerived of a file holding another key's entry = %q, %v, %v; want no entry", v, ok, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.GetDerived(ctx, "chain/a"); ok || err != nil {
		t.Errorf("GetDerived after removing cache/ = ok %v, %v", ok, err)
	}
	if err := st.PutDerived(ctx, "chain/a", []byte("A")); err != nil {
		t.Errorf("PutDerived after removing cache/: %v", err)
	}
	// A store folder holding cache/ is still one Create may complete.
	if _, err := disk.OpenOrCreate(dir, nil); err != nil {
		t.Errorf("OpenOrCreate of a store with cache/: %v", err)
	}
}
