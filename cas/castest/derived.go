package castest

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// RunDerived runs the contract tests of a [cas.Derived] cache; newCache
// returns an empty cache of a fresh store.
func RunDerived(t *testing.T, newCache func(t *testing.T) cas.Derived) {
	t.Run("GetPutDrop", func(t *testing.T) {
		ctx := t.Context()
		d := newCache(t)
		if _, ok, err := d.GetDerived(ctx, "chain/x"); ok || err != nil {
			t.Fatalf("GetDerived of an empty cache = ok %v, %v; want no entry", ok, err)
		}
		for _, v := range [][]byte{[]byte(`{"a":1}`), {}, nil, []byte("second\nline\x00")} {
			if err := d.PutDerived(ctx, "chain/x", v); err != nil {
				t.Fatal(err)
			}
			got, ok, err := d.GetDerived(ctx, "chain/x")
			if err != nil || !ok || !bytes.Equal(got, v) || got == nil {
				t.Fatalf("GetDerived after PutDerived(%q) = %q, %v, %v", v, got, ok, err)
			}
		}
		if err := d.PutDerived(ctx, "ref/threads/ABC", []byte("r")); err != nil {
			t.Fatal(err)
		}
		// An entry is its bytes (an empty one too: never nil once found).
		// Keys differing in case are distinct entries.
		if _, ok, err := d.GetDerived(ctx, "ref/threads/abc"); ok || err != nil {
			t.Fatalf("GetDerived of a key differing in case = ok %v, %v; want no entry", ok, err)
		}
		if err := d.DropDerived(ctx, "chain/x"); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := d.GetDerived(ctx, "chain/x"); ok || err != nil {
			t.Fatalf("GetDerived after DropDerived = ok %v, %v; want no entry", ok, err)
		}
		if err := d.DropDerived(ctx, "chain/x"); err != nil {
			t.Fatalf("DropDerived of a missing entry: %v", err)
		}
		if got, ok, err := d.GetDerived(ctx, "ref/threads/ABC"); err != nil || !ok || string(got) != "r" {
			t.Fatalf("another entry after a drop = %q, %v, %v", got, ok, err)
		}
	})
	t.Run("KeysAndDropMany", func(t *testing.T) {
		ctx := t.Context()
		d := newCache(t)
		if got := derivedKeys(t, d); len(got) != 0 {
			t.Fatalf("DerivedKeys of an empty cache = %q, want none", got)
		}
		all := []string{"chain/a", "chain/b", "ref/threads/X", "ref/threads/x", "other/1"}
		for _, k := range all {
			if err := d.PutDerived(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := derivedKeys(t, d), sorted(all); !slices.Equal(got, want) {
			t.Fatalf("DerivedKeys = %q, want %q", got, want)
		}
		// A bad key among good ones: nothing is dropped.
		if err := d.DropDerived(ctx, "chain/a", "Bad/key"); !errors.Is(err, cas.ErrInvalid) {
			t.Fatalf("DropDerived with a bad key = %v, want ErrInvalid", err)
		}
		if got := derivedKeys(t, d); len(got) != len(all) {
			t.Fatalf("DerivedKeys after a refused drop = %q, want %q", got, sorted(all))
		}
		if err := d.DropDerived(ctx, "chain/a", "ref/threads/x", "chain/missing"); err != nil {
			t.Fatalf("DropDerived of three keys: %v", err)
		}
		if err := d.DropDerived(ctx); err != nil {
			t.Fatalf("DropDerived of no key: %v", err)
		}
		want := []string{"chain/b", "other/1", "ref/threads/X"}
		if got := derivedKeys(t, d); !slices.Equal(got, want) {
			t.Fatalf("DerivedKeys after dropping two = %q, want %q", got, want)
		}
		for _, k := range want {
			if v, ok, err := d.GetDerived(ctx, k); err != nil || !ok || string(v) != k {
				t.Errorf("GetDerived(%q) after the drop = %q, %v, %v; want it kept", k, v, ok, err)
			}
		}
		// A listing stopped early stops.
		n := 0
		for _, err := range d.DerivedKeys(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			break
		}
		if n != 1 {
			t.Fatalf("a listing stopped after one key went on (%d keys)", n)
		}
	})
	t.Run("Batch", func(t *testing.T) {
		// GetDerivedBatch gives what GetDerived gives for each key, in
		// order: duplicates, missing keys and empty entries included; with
		// the cache's fast path ([cas.DerivedBatchGetter]) if it has one,
		// and through the fallback of one read each.
		ctx := t.Context()
		d := newCache(t)
		for k, v := range map[string]string{"chain/a": "A", "chain/b": "", "ref/threads/X": "x\ny"} {
			if err := d.PutDerived(ctx, k, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		keys := []string{"chain/b", "chain/missing", "ref/threads/X", "chain/a", "chain/b"}
		want := []string{"", "", "x\ny", "A", ""}
		wantOK := []bool{true, false, true, true, true}
		_, isBatch := d.(cas.DerivedBatchGetter)
		for _, via := range []struct {
			name string
			d    cas.Derived
		}{{"store", d}, {"fallback", struct{ cas.Derived }{d}}} {
			data, ok, err := cas.GetDerivedBatch(ctx, via.d, keys)
			if err != nil {
				t.Fatalf("%s: GetDerivedBatch: %v", via.name, err)
			}
			if len(data) != len(keys) || len(ok) != len(keys) {
				t.Fatalf("%s: GetDerivedBatch gave %d entries and %d flags for %d keys", via.name, len(data), len(ok), len(keys))
			}
			for i, k := range keys {
				if ok[i] != wantOK[i] || string(data[i]) != want[i] || (ok[i] && data[i] == nil) {
					t.Errorf("%s (fast path %v): entry %d (%s) = %q, %v; want %q, %v", via.name, isBatch, i, k, data[i], ok[i], want[i], wantOK[i])
				}
			}
			if data, ok, err := cas.GetDerivedBatch(ctx, via.d, nil); err != nil || len(data) != 0 || len(ok) != 0 {
				t.Errorf("%s: GetDerivedBatch of no keys = %d, %d, %v; want nothing", via.name, len(data), len(ok), err)
			}
		}
		if _, _, err := cas.GetDerivedBatch(ctx, d, []string{"chain/a", "Bad key"}); !errors.Is(err, cas.ErrInvalid) {
			t.Errorf("GetDerivedBatch with a bad key = %v, want ErrInvalid", err)
		}
	})
	t.Run("BadKeys", func(t *testing.T) {
		ctx := t.Context()
		d := newCache(t)
		for _, k := range []string{"", "chain", "/x", "chain/", "Chain/x", "chain/a b", "chain/\n", "chain/" + strings.Repeat("x", cas.MaxDerivedKeyLen)} {
			if err := d.PutDerived(ctx, k, []byte("v")); !errors.Is(err, cas.ErrInvalid) {
				t.Errorf("PutDerived(%q) = %v, want ErrInvalid", k, err)
			}
		}
	})
}

// derivedKeys lists d's keys, sorted; it fails t on error.
func derivedKeys(t *testing.T, d cas.Derived) []string {
	t.Helper()
	var keys []string
	for k, err := range d.DerivedKeys(t.Context()) {
		if err != nil {
			t.Fatalf("DerivedKeys: %v", err)
		}
		keys = append(keys, k)
	}
	return sorted(keys)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
