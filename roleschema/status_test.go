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
	// Variant 2 cannot carry a: an output made for it (status a and x)
	// matches variant 0 too, and a oneOf needs exactly one.
	for i, want := range [][]string{{"a"}, {}, {"b"}} {
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

// TestOneOfVariantStatuses checks that a oneOf variant carries only the
// statuses an output matching it alone can have.
func TestOneOfVariantStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema string
		want   [][]string
	}{
		{"shared by two variants", `{"oneOf": [{"properties": {"status": {"const": "a"}}}, {"properties": {"status": {"enum": ["a", "b"]}}}]}`,
			[][]string{{}, {"b"}}},
		{"told apart by a required field", `{"oneOf": [{"properties": {"status": {"const": "a"}}, "required": ["x"]}, {"properties": {"status": {"enum": ["a", "b"]}}}]}`,
			[][]string{{}, {"a", "b"}}},
		{"each requiring its own field", `{"oneOf": [{"properties": {"status": {"const": "a"}}, "required": ["x"]}, {"properties": {"status": {"enum": ["a", "b"]}}, "required": ["y"]}]}`,
			[][]string{{"a"}, {"a", "b"}}},
		{"an anyOf keeps them", `{"anyOf": [{"properties": {"status": {"const": "a"}}}, {"properties": {"status": {"enum": ["a", "b"]}}}]}`,
			[][]string{{"a"}, {"a", "b"}}},
		{"an open variant", `{"oneOf": [{"properties": {"status": {"const": "a"}}}, {"required": ["x"]}]}`,
			[][]string{{"a"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, vs := roleschema.Variants(doc(t, tc.schema))
			if len(vs) != len(tc.want) {
				t.Fatalf("%d variants, want %d", len(vs), len(tc.want))
			}
			for i, want := range tc.want {
				if !reflect.DeepEqual(vs[i].Statuses, want) {
					t.Errorf("variant %d statuses = %#v, want %#v", i, vs[i].Statuses, want)
				}
			}
		})
	}
}
