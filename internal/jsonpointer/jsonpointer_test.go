package jsonpointer_test

import (
	"encoding/json"
	"testing"

	"github.com/uncaged/uwf/internal/jsonpointer"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	var root any
	if err := json.Unmarshal([]byte(`{"$defs": {"a/b": {"x": [1, {"~y": 2}]}}, "": 3}`), &root); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ptr   string
		want  any
		found bool
	}{
		{"#/$defs/a~1b/x/1/~0y", 2.0, true},
		{"/$defs/a~1b/x/0", 1.0, true},
		{"/", 3.0, true},
		{"#/nope", nil, false},
		{"/$defs/a~1b/x/9", nil, false},
		{"/$defs/a~1b/x/-1", nil, false},
		{"/$defs/a~1b/x/one", nil, false},
		{"/$defs/a~1b/x/0/deeper", nil, false},
		{"nope", nil, false},
	}
	for _, tc := range tests {
		got, ok := jsonpointer.Lookup(root, tc.ptr)
		if ok != tc.found || (ok && got != tc.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tc.ptr, got, ok, tc.want, tc.found)
		}
	}
	for _, ptr := range []string{"", "#"} {
		if got, ok := jsonpointer.Lookup(root, ptr); !ok || got == nil {
			t.Errorf("Lookup(%q) did not return the root", ptr)
		}
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for seg, want := range map[string]string{"plain": "plain", "a/b": "a~1b", "~x": "~0x", "~/": "~0~1", "~1": "~01", "": ""} {
		if got := jsonpointer.Escape(seg); got != want {
			t.Errorf("Escape(%q) = %q, want %q", seg, got, want)
		}
		if back := jsonpointer.Unescape(want); back != seg {
			t.Errorf("Unescape(%q) = %q, want %q", want, back, seg)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a/b", "~0", "~1/~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		if got := jsonpointer.Unescape(jsonpointer.Escape(seg)); got != seg {
			t.Errorf("Unescape(Escape(%q)) = %q", seg, got)
		}
	})
}
