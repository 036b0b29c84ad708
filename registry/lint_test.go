package registry_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
)

// TestWarnings: a prompt field the schema does not require is reported
// where the prompt is, a required one is not, and the same holds through
// nested objects and unions; a field under an array index is not checked.
func TestWarnings(t *testing.T) {
	const head = "name: w\nroles:\n  a:\n    frontmatter:\n"
	const graph = "graph:\n  $START: { new: { role: a, prompt: go } }\n  a: { done: { role: $END, prompt: \"%s\" } }\n"
	for _, tc := range []struct {
		name, schema, prompt string
		want                 []string // substrings of the warnings, in order; none when empty
	}{
		{"required", "      type: object\n      properties: {status: {const: done}, x: {type: string}}\n      required: [status, x]\n", "{{ x }}", nil},
		{"optional", "      type: object\n      properties: {status: {const: done}, x: {type: string}}\n      required: [status]\n", "{{ x }}",
			[]string{`10:36: graph.a.done.prompt: field "x" is optional: no "required" of the a schema lists "x"`}},
		{"nested, the inner one optional", "      type: object\n      properties: {status: {const: done}, o: {type: object, properties: {y: {type: string}}}}\n      required: [status, o]\n", "{{ o.y }}",
			[]string{`field "o.y" is optional: no "required" of "o" in the a schema lists "y"`}},
		{"nested, both required", "      type: object\n      properties: {status: {const: done}, o: {type: object, properties: {y: {type: string}}, required: [y]}}\n      required: [status, o]\n", "{{ o.y }}", nil},
		{"an array index is not checked", "      type: object\n      properties: {status: {const: done}, l: {type: array, items: {type: string}}}\n      required: [status, l]\n", "{{ l.0 }}", nil},
		{"required in a union's branch", "      type: object\n      properties: {status: {const: done}}\n      required: [status]\n      oneOf: [{properties: {x: {type: string}}, required: [x]}]\n", "{{ x }}", nil},
		{"two fields, one optional", "      type: object\n      properties: {status: {const: done}, x: {type: string}, y: {type: string}}\n      required: [status, y]\n", "{{ y }} {{ x }}",
			[]string{`field "x" is optional`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := head + tc.schema + strings.Replace(graph, "%s", tc.prompt, 1)
			w, err := registry.Parse("w.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, src)
			}
			got := w.Warnings()
			if len(got) != len(tc.want) {
				t.Fatalf("Warnings() = %v, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, p := range got {
				if !strings.Contains(p.String(), tc.want[i]) {
					t.Errorf("warning %d = %q, want it to contain %q", i, p.String(), tc.want[i])
				}
			}
		})
	}
}

// TestWarningsExamples: the shipped examples give no warning.
func TestWarningsExamples(t *testing.T) {
	names, err := fs.Glob(examples.FS, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("examples: %v %v", names, err)
	}
	for _, name := range names {
		w := mustParse(t, name, example(t, name))
		if ws := w.Warnings(); len(ws) > 0 {
			t.Errorf("%s: %v", name, ws)
		}
	}
}
