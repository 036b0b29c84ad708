package registry_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/uncaged/uwf/registry"
)

// TestStatusesFromSchema validates one-role workflows whose schema pins
// status in different ways: the statuses validation reads are those of
// package roleschema, so the graph must have exactly them.
func TestStatusesFromSchema(t *testing.T) {
	t.Parallel()
	const base = `name: mini
roles:
  worker:
    frontmatter:
SCHEMA
graph:
  $START: { new: { role: worker, prompt: Start. } }
  worker: { EDGES }
`
	tests := []struct {
		name     string
		schema   string // the frontmatter, indented by 6
		statuses []string
		want     string // the error; "" when valid
	}{
		{"oneOf of consts in status", `properties: { status: { oneOf: [{ const: a }, { const: b }] } }`, []string{"a", "b"}, ""},
		{"anyOf of a const and an enum", `properties: { status: { anyOf: [{ const: b }, { enum: [a, c] }] } }`, []string{"a", "b", "c"}, ""},
		{"const within an enum", `properties: { status: { const: a, enum: [a, b] } }`, []string{"a"}, ""},
		{"enum cut by allOf", "properties: { status: { enum: [a, b, c] } }\n      allOf: [{ properties: { status: { enum: [b, a] } } }]", []string{"a", "b"}, ""},
		{"variants cut by the status beside them", "properties: { status: { enum: [a, b] } }\n      oneOf: [{ properties: { status: { const: a } } }, { properties: { status: { const: c } } }]", []string{"a"}, ""},
		{"const and enum that share nothing", `properties: { status: { const: a, enum: [b] } }`, []string{"a"},
			`t.yaml:4:5: roles.worker.frontmatter: the schema admits no status for role worker: its const, enum and variants for status leave no string that one output could carry (they share none, or a oneOf allows each in more than one branch), so no output can validate`},
		{"a oneOf in status with an open branch", `properties: { status: { oneOf: [{ const: a }, { type: string }] } }`, []string{"a"},
			`t.yaml:4:5: roles.worker.frontmatter: the schema does not pin status to a const or an enum (nor is it a oneOf or anyOf of variants that each do)`},
		{"a graph status the schema cut", "properties: { status: { enum: [a, b] } }\n      not: { properties: { status: { const: b } } }", []string{"a", "b"},
			`t.yaml:9:47: graph.worker.b: status "b" is not in the worker schema (a)`},
		{"a graph status the status schema cut", `properties: { status: { enum: [a, b], not: { const: b } } }`, []string{"a", "b"},
			`t.yaml:8:47: graph.worker.b: status "b" is not in the worker schema (a)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			edges := make([]string, len(tc.statuses))
			for i, s := range tc.statuses {
				edges[i] = s + ": { role: $END, prompt: Done. }"
			}
			data := strings.Replace(base, "SCHEMA", "      "+tc.schema, 1)
			data = strings.Replace(data, "EDGES", strings.Join(edges, ", "), 1)
			w, err := registry.Parse("t.yaml", []byte(data))
			switch {
			case tc.want != "":
				if err == nil || err.Error() != tc.want {
					t.Errorf("Parse:\n%s\n= %v\nwant %s", data, err, tc.want)
				}
			case err != nil:
				t.Errorf("Parse:\n%s\n= %v", data, err)
			default:
				if got := w.Statuses("worker"); !reflect.DeepEqual(got, tc.statuses) {
					t.Errorf("Statuses(worker) = %q, want %q", got, tc.statuses)
				}
			}
		})
	}
}

// TestStatusesFanOut validates a workflow whose role schema names each of
// 30 definitions twice from the one before: read naively, 2^30 shapes.
// Validation reads each schema object once, so its allocations stay those
// of a small workflow.
func TestStatusesFanOut(t *testing.T) { // not parallel: it counts allocations
	var b strings.Builder
	b.WriteString("name: fan\nroles:\n  worker:\n    frontmatter:\n      $ref: '#/$defs/d0'\n      $defs:\n")
	const n = 30
	for i := range n {
		fmt.Fprintf(&b, "        d%d: { anyOf: [{ $ref: '#/$defs/d%d' }, { $ref: '#/$defs/d%d' }] }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "        d%d: { type: object, required: [status], properties: { status: { const: done }, note: { type: string } } }\n", n)
	b.WriteString("graph:\n  $START: { new: { role: worker, prompt: Go. } }\n  worker: { done: { role: $END, prompt: \"{{note}} {{nope}}\" } }\n")
	data := []byte(b.String())
	want := `wf.yaml:40:41: graph.worker.done.prompt: field "nope" is not in the worker schema for status "done" (its properties: note, status)`
	_, err := registry.Parse("wf.yaml", data)
	if err == nil || err.Error() != want {
		t.Fatalf("Parse = %v\nwant %s", err, want)
	}
	if allocs := testing.AllocsPerRun(1, func() { _, _ = registry.Parse("wf.yaml", data) }); allocs > 100000 {
		t.Errorf("Parse made %.0f allocations: not linear in the schema", allocs)
	}
}
