package roleschema_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/uncaged/uwf/roleschema"
)

// readCase is one row of testdata/read.json: a role schema and how it pins
// its status. The agent package proves every row against the schema itself
// (the compiled schema and the synth agent), so a wrong row fails twice.
type readCase struct {
	Name      string   `json:"name"`
	Schema    any      `json:"schema"`
	Pinned    bool     `json:"pinned"`
	Statuses  []string `json:"statuses"`
	NonString []any    `json:"nonString"`
}

func TestRead(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/read.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []readCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/read.json: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			got := roleschema.Read(tc.Schema)
			want := roleschema.Reading{Pinned: tc.Pinned, Statuses: tc.Statuses, NonString: tc.NonString}
			if !reflect.DeepEqual(got, want) {
				s, _ := json.Marshal(tc.Schema)
				t.Errorf("Read(%s) = %+v, want %+v", s, got, want)
			}
			if st := roleschema.Statuses(tc.Schema); !reflect.DeepEqual(st, tc.Statuses) {
				t.Errorf("Statuses() = %#v, want %#v", st, tc.Statuses)
			}
		})
	}
	if got := roleschema.Read(nil); got.Pinned || got.Statuses != nil {
		t.Errorf("Read(nil) = %+v, want unpinned", got)
	}
}

func TestStatusesOfVariants(t *testing.T) {
	t.Parallel()
	root := doc(t, `{"properties": {"status": {"enum": ["a", "b"]}}, "oneOf": [
		{"properties": {"status": {"const": "a"}}},
		{"properties": {"status": {"const": "c"}}},
		{"required": ["x"]}]}`)
	kw, vs := roleschema.Variants(root)
	if kw != "oneOf" || len(vs) != 3 {
		t.Fatalf("Variants() = %q, %d variants", kw, len(vs))
	}
	for i, want := range [][]string{{"a"}, {}, {"a", "b"}} {
		if !reflect.DeepEqual(vs[i].Statuses, want) {
			t.Errorf("variant %d statuses = %#v, want %#v", i, vs[i].Statuses, want)
		}
	}
	if got := roleschema.StatusesOf(root, map[string]any{"properties": map[string]any{"x": map[string]any{}}}); got != nil {
		t.Errorf("StatusesOf(unpinned) = %#v, want nil", got)
	}
}
