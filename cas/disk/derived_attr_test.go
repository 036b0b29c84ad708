//go:build linux

package disk_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// TestDerivedNodeAttr: an entry whose key names a node ("<kind>/<HASH>")
// is kept in the node's object file's attribute user.uwf.<kind>, creating
// no file; it is dropped with DropDerived, with the object, and with
// cache/ (a new folder is a new generation); an attribute naming another
// key is no entry; a key naming no stored node, or an entry too large for
// an attribute, is a file.
func TestDerivedNodeAttr(t *testing.T) {
	ctx := t.Context()
	st, dir := newAttrStore(t)
	put := func(s string) (cas.Hash, string) {
		h, err := st.Put(ctx, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		x := h.String()
		return h, filepath.Join(dir, "objects", x[len(x)-2:], x)
	}
	cacheFiles := func() []string {
		var files []string
		filepath.WalkDir(filepath.Join(dir, "cache"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		return files
	}
	get := func(key string) string {
		t.Helper()
		v, ok, err := st.GetDerived(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "<none>"
		}
		return string(v)
	}
	a, pa := put(`"a"`)
	b, pb := put(`"b"`)
	ka, kb := "chain/"+a.String(), "chain/"+b.String()
	if err := st.PutDerived(ctx, ka, []byte("entry a")); err != nil {
		t.Fatal(err)
	}
	if got := cacheFiles(); len(got) != 0 {
		t.Errorf("a node's entry made files %v, want none", got)
	}
	attr, err := atomicfile.GetAttr(pa, "user.uwf.chain")
	if err != nil || !bytes.HasSuffix(attr, []byte("\n"+ka+"\nentry a")) {
		t.Fatalf("attribute user.uwf.chain of %s = %q, %v", pa, attr, err)
	}
	if got := get(ka); got != "entry a" {
		t.Errorf("GetDerived = %q, want %q", got, "entry a")
	}
	// The object's bytes and age are untouched.
	if data, err := st.Get(ctx, a); err != nil || string(data) != `"a"` {
		t.Errorf("Get of the node = %q, %v", data, err)
	}
	// An attribute naming another key (copied to b) is no entry.
	if err := atomicfile.SetAttr(pb, "user.uwf.chain", attr, false); err != nil {
		t.Fatal(err)
	}
	if got := get(kb); got != "<none>" {
		t.Errorf("GetDerived of an attribute naming another key = %q, want no entry", got)
	}
	if err := st.PutDerived(ctx, kb, []byte("entry b")); err != nil {
		t.Fatal(err)
	}
	if err := st.DropDerived(ctx, kb); err != nil {
		t.Fatal(err)
	}
	if got := get(kb); got != "<none>" {
		t.Errorf("GetDerived after DropDerived = %q, want no entry", got)
	}
	// A key naming no stored node, and an entry too large for an
	// attribute, are files.
	missing := "chain/" + cas.Sum([]byte("not stored")).String()
	big := strings.Repeat("x", 100_000)
	if err := st.PutDerived(ctx, missing, []byte("entry m")); err != nil {
		t.Fatal(err)
	}
	if err := st.PutDerived(ctx, kb, []byte(big)); err != nil {
		t.Fatal(err)
	}
	if got := cacheFiles(); len(got) != 2 {
		t.Errorf("cache/ holds %v, want the two entries that are files", got)
	}
	if get(missing) != "entry m" || get(kb) != big {
		t.Errorf("file entries read back wrong: %q, %d bytes", get(missing), len(get(kb)))
	}
	// Deleting cache/ drops every entry, those in attributes too, and
	// a new cache/ does not bring them back.
	if err := os.RemoveAll(filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	if got := get(ka); got != "<none>" {
		t.Errorf("GetDerived after rm -rf cache/ = %q, want no entry", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := get(ka); got != "<none>" {
		t.Errorf("GetDerived with a new cache/ = %q, want no entry", got)
	}
	if err := st.PutDerived(ctx, ka, []byte("entry a2")); err != nil {
		t.Fatal(err)
	}
	if got := get(ka); got != "entry a2" {
		t.Errorf("GetDerived after a put in the new cache/ = %q", got)
	}
	// The entry goes with its object.
	if err := os.Remove(pa); err != nil {
		t.Fatal(err)
	}
	if got := get(ka); got != "<none>" {
		t.Errorf("GetDerived of a removed node = %q, want no entry", got)
	}
}

// TestDerivedAttrReplacedByFile: an entry kept in its node's attribute and
// then put again too large for an attribute (a file) is replaced, as
// PutDerived promises: the attribute, read first, must not keep the old
// entry.
func TestDerivedAttrReplacedByFile(t *testing.T) {
	ctx := t.Context()
	st, _ := newAttrStore(t)
	h, err := st.Put(ctx, []byte(`"a"`))
	if err != nil {
		t.Fatal(err)
	}
	key := "chain/" + h.String()
	if err := st.PutDerived(ctx, key, []byte("small")); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100_000)
	if err := st.PutDerived(ctx, key, []byte(big)); err != nil {
		t.Fatal(err)
	}
	v, ok, err := st.GetDerived(ctx, key)
	if err != nil || !ok || string(v) != big {
		t.Fatalf("GetDerived after a larger put = %.20q (%d bytes), %v, %v; want the %d bytes put last", v, len(v), ok, err, len(big))
	}
}

// newAttrStore creates a store (durability none; see newStore) and skips
// the test where its filesystem keeps no user extended attributes.
func newAttrStore(t *testing.T) (*disk.Store, string) {
	t.Helper()
	st := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	dir := st.Dir()
	if err := atomicfile.SetAttr(filepath.Join(dir, "FORMAT"), "user.uwf.probe", []byte("x"), false); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("%s keeps no user extended attributes", dir)
	}
	return st, dir
}
