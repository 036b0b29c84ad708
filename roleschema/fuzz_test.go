package roleschema_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/uncaged/uwf/roleschema"
)

// FuzzRead reads arbitrary JSON as a role schema: the reader must end (no
// cycle loops it), keep its promises on the shape of the answer, and agree
// with its variants.
func FuzzRead(f *testing.F) {
	data, err := os.ReadFile("testdata/read.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []struct {
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add([]byte(c.Schema))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var schema any
		if json.Unmarshal(b, &schema) != nil {
			return
		}
		r := roleschema.Read(schema)
		if r.Pinned != (r.Statuses != nil) {
			t.Fatalf("Read(%s) = %+v: Pinned must say whether Statuses is set", b, r)
		}
		for i, s := range r.Statuses {
			if slices.Contains(r.Statuses[:i], s) {
				t.Fatalf("Read(%s) repeats %q", b, s)
			}
		}
		if got := roleschema.Statuses(schema); !slices.Equal(got, r.Statuses) {
			t.Fatalf("Statuses(%s) = %q, Read says %q", b, got, r.Statuses)
		}
		if kw, variants := roleschema.Variants(schema); kw != "" {
			// Every status is some variant's (the union is the sum of its
			// variants, each seeing the keywords beside it).
			for _, s := range r.Statuses {
				if !slices.ContainsFunc(variants, func(v roleschema.Variant) bool { return slices.Contains(v.Statuses, s) }) {
					t.Fatalf("Read(%s): status %q is in no variant of the %s", b, s, kw)
				}
			}
		}
	})
}
