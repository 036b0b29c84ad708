package roleschema_test

import (
	"encoding/json"
	"fmt"
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

// fanOut returns a schema whose status is a chain of n definitions, each
// naming the next twice through kw: read naively, 2^n visits.
func fanOut(kw string, n int) any {
	defs := map[string]any{}
	for i := range n {
		ref := func() any { return map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)} }
		defs[fmt.Sprintf("d%d", i)] = map[string]any{kw: []any{ref(), ref()}}
	}
	defs[fmt.Sprintf("d%d", n)] = map[string]any{"const": "x"}
	return map[string]any{"$defs": defs, "properties": map[string]any{"status": map[string]any{"$ref": "#/$defs/d0"}}}
}

// TestReadFanOut checks that a schema whose references fan out is read
// once per schema object: the allocations stay linear in its size where a
// naive reading would make 2^n visits. (A oneOf of two equal branches
// matches nothing, so its chain admits no status.)
func TestReadFanOut(t *testing.T) { // not parallel: it counts allocations
	for _, kw := range []string{"allOf", "oneOf", "anyOf"} {
		schema := fanOut(kw, 15)
		want := []string{"x"}
		if kw == "oneOf" {
			want = []string{}
		}
		if got := roleschema.Statuses(schema); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Statuses = %q, want %q", kw, got, want)
		}
		if allocs := testing.AllocsPerRun(1, func() { roleschema.Read(schema) }); allocs > 2000 {
			t.Errorf("%s: Read made %.0f allocations for 15 definitions: not linear", kw, allocs)
		}
	}
}
