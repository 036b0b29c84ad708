package agent_test

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/roleschema"
)

// freshStatus is a status no schema of the table names.
const freshStatus = "fresh-status-no-schema-names"

// TestReadingProvedBySchema proves every row of the role-schema table
// (../roleschema/testdata/read.json) against the schema itself, so the
// reading that validation, prompts, synth and extract share is the schema's:
// for every status the reader returns, synth makes an output with it that
// the compiled schema accepts; for every const or enum string it does not
// return, and for a fresh string, synth can make no valid output. When
// the reader says unpinned, an output with the fresh status validates.
func TestReadingProvedBySchema(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../roleschema/testdata/read.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name    string `json:"name"`
		Schema  any    `json:"schema"`
		Invalid bool   `json:"invalid"` // not a valid JSON Schema: validation refuses it first
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 25 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			// A role's output must carry its status: require it (the
			// reading does not change), or an empty output would prove
			// nothing.
			reading := roleschema.Read(tc.Schema)
			tc.Schema = requireStatus(t, tc.Schema)
			if again := roleschema.Read(tc.Schema); !reflect.DeepEqual(again, reading) {
				t.Fatalf("requiring status changed the reading: %+v, was %+v", again, reading)
			}
			schema, err := cas.CompileSchema(tc.Schema)
			switch {
			case tc.Invalid && err == nil:
				t.Fatal("the schema compiles; the table says it is invalid")
			case tc.Invalid:
				return
			case err != nil:
				t.Fatalf("schema does not compile: %v", err)
			}
			synth := agent.NewSynth(7)
			run := func(status string) (map[string]any, error) {
				res, err := synth.Run(t.Context(), &agent.Request{Thread: "T", Role: "r", Schema: tc.Schema, Statuses: []string{status}})
				if err != nil {
					return nil, err
				}
				return frontmatter(t, res.Raw), nil
			}
			if !reading.Pinned {
				m, err := run(freshStatus)
				if err != nil {
					t.Fatalf("unpinned, yet synth cannot make an output: %v", err)
				}
				m["status"] = freshStatus
				if err := schema.Validate(m); err != nil {
					t.Errorf("unpinned, yet an output with status %q is invalid: %v", freshStatus, err)
				}
				return
			}
			for _, s := range reading.Statuses {
				m, err := run(s)
				if err != nil {
					t.Errorf("status %q: read as allowed, but synth cannot make an output with it: %v", s, err)
					continue
				}
				if m["status"] != s {
					t.Errorf("status %q: synth made status %v", s, m["status"])
				}
				if err := schema.Validate(m); err != nil {
					t.Errorf("status %q: synth's output is invalid: %v", s, err)
				}
			}
			others := append(literals(tc.Schema), freshStatus)
			for _, s := range others {
				if slices.Contains(reading.Statuses, s) {
					continue
				}
				if m, err := run(s); err == nil {
					t.Errorf("status %q: read as not allowed, but synth made a valid output with it: %v", s, m)
				}
			}
		})
	}
}

// requireStatus returns a copy of the object schema root that also
// requires "status".
func requireStatus(t *testing.T, root any) any {
	t.Helper()
	m, ok := root.(map[string]any)
	if !ok {
		t.Fatalf("schema %v is not an object", root)
	}
	out := maps.Clone(m)
	req, _ := m["required"].([]any)
	out["required"] = append(slices.Clone(req), "status")
	return out
}

// literals returns every string a schema names under "const" or "enum".
func literals(schema any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				switch k {
				case "const":
					if s, ok := sub.(string); ok {
						out = append(out, s)
					}
				case "enum":
					for _, e := range sub.([]any) {
						if s, ok := e.(string); ok {
							out = append(out, s)
						}
					}
				}
				walk(sub)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(schema)
	slices.Sort(out)
	return slices.Compact(out)
}
