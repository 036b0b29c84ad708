package registry_test

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// example returns an example workflow file's bytes.
func example(t testing.TB, name string) []byte {
	t.Helper()
	data, err := fs.ReadFile(examples.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t testing.TB, name string, data []byte) *registry.Workflow {
	t.Helper()
	w, err := registry.Parse(name, data)
	if err != nil {
		t.Fatalf("Parse(%s):\n%v", name, err)
	}
	return w
}

// TestParseInvalid parses every testdata/invalid/*.yaml and compares the
// error with the .want file next to it: every problem, with file:line:col.
func TestParseInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("only %d invalid files", len(files))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			w, err := registry.Parse(name, data)
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", name, w)
			}
			var ve *registry.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, cas.ErrInvalid) {
				t.Fatalf("Parse(%s) error %T does not wrap a *ValidationError and cas.ErrInvalid", name, err)
			}
			if !slices.IsSortedFunc(ve.Problems, func(a, b registry.Problem) int {
				if a.Line != b.Line {
					return a.Line - b.Line
				}
				return a.Column - b.Column
			}) {
				t.Errorf("problems not sorted by position: %v", ve.Problems)
			}
			if err := registry.Validate(name, data); err == nil || err.Error() != ve.Error() {
				t.Errorf("Validate disagrees with Parse: %v", err)
			}
			got := err.Error() + "\n"
			wantFile := strings.TrimSuffix(file, ".yaml") + ".want"
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Parse(%s) error:\n%s\nwant:\n%s", name, got, want)
			}
		})
	}
}

// TestParseProblems pins single messages the brief and SPEC spell out.
func TestParseProblems(t *testing.T) {
	const base = `name: mini
roles:
  worker:
    frontmatter:
      properties:
        status: { const: STATUS }
graph:
  $START: { new: { role: worker, prompt: Start. } }
  worker: { STATUS: { role: $END, prompt: Done. } }
`
	tests := []struct {
		status string
		want   string
	}{
		{"true", `t.yaml:6:26: status value true is a boolean to YAML: quote it ("true")`},
		{"null", `t.yaml:6:26: status value null is null to YAML: quote it ("null")`},
		{"~", `t.yaml:6:26: status value ~ is null to YAML: quote it ("~")`},
		{"1.10", `t.yaml:6:26: status value 1.10 is a number to YAML: quote it ("1.10")`},
		{"0o17", `t.yaml:6:26: status value 0o17 is an integer to YAML: quote it ("0o17")`},
		{"12", `t.yaml:6:26: status value 12 is an integer to YAML: quote it ("12")`},
	}
	for _, tc := range tests {
		t.Run(tc.status, func(t *testing.T) {
			data := strings.Replace(base, "STATUS", tc.status, 1)
			data = strings.Replace(data, "STATUS", `"`+tc.status+`"`, 1)
			_, err := registry.Parse("t.yaml", []byte(data))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse = %v, want %s", err, tc.want)
			}
		})
	}
	// Quoted, the same file is valid.
	data := strings.ReplaceAll(base, "STATUS", `"true"`)
	if _, err := registry.Parse("t.yaml", []byte(data)); err != nil {
		t.Errorf("quoted status: %v", err)
	}
}

func TestParseExamples(t *testing.T) {
	tests := []struct {
		file     string
		name     string
		maxSteps int
		statuses map[string][]string
	}{
		{"review-loop.yaml", "review-loop", 20, map[string][]string{
			"planner": {"done"}, "developer": {"done"}, "reviewer": {"approved", "rejected"},
		}},
		{"develop.yaml", "develop", 40, map[string][]string{
			"planner": {"planned"}, "coder": {"continue", "done"}, "reviewer": {"approved", "rejected"},
			"tester": {"failed", "passed"}, "committer": {"committed"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			w := mustParse(t, tc.file, example(t, tc.file))
			if w.Name != tc.name || w.MaxSteps != tc.maxSteps {
				t.Errorf("name %q maxSteps %d, want %q %d", w.Name, w.MaxSteps, tc.name, tc.maxSteps)
			}
			if got, want := w.RoleNames(), slices.Sorted(mapsKeys(tc.statuses)); !slices.Equal(got, want) {
				t.Errorf("roles %v, want %v", got, want)
			}
			for role, want := range tc.statuses {
				if got := w.Statuses(role); !slices.Equal(got, want) {
					t.Errorf("Statuses(%s) = %v, want %v", role, got, want)
				}
				if got := w.Graph.Statuses(role); !slices.Equal(got, want) {
					t.Errorf("graph statuses of %s = %v, want %v", role, got, want)
				}
			}
			if err := w.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestParseReviewLoopContent(t *testing.T) {
	w := mustParse(t, "review-loop.yaml", example(t, "review-loop.yaml"))
	if w.Description != "Plan, implement, review until approved" {
		t.Errorf("description %q", w.Description)
	}
	p := w.Roles["planner"]
	if p.Goal != "You are a planning agent." || p.Procedure != "Analyse the task and write a plan." {
		t.Errorf("planner %+v", p)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status": map[string]any{"const": "done"},
			"steps":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []any{"status", "steps"},
	}
	got, _ := cas.Canonical(p.Frontmatter)
	wantb, _ := cas.Canonical(want)
	if string(got) != string(wantb) {
		t.Errorf("planner frontmatter %s, want %s", got, wantb)
	}
	if e := w.Graph["reviewer"]["approved"]; e != (moderator.Edge{Role: moderator.End, Prompt: "Approved: {{ comments }}"}) {
		t.Errorf("reviewer/approved = %+v", e)
	}
}

func TestParseTooLarge(t *testing.T) {
	data := make([]byte, registry.MaxWorkflowSize+1)
	for i := range data {
		data[i] = ' '
	}
	_, err := registry.Parse("big.yaml", data)
	if !errors.Is(err, cas.ErrTooLarge) {
		t.Fatalf("Parse(1 MiB + 1) = %v, want ErrTooLarge", err)
	}
	if !strings.HasPrefix(err.Error(), "big.yaml: ") {
		t.Errorf("error %q does not name the file", err)
	}
}

// TestBillionLaughsIsQuick makes sure alias bombs are refused before they
// are expanded, even deep ones.
func TestBillionLaughsIsQuick(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: lol\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 40; i++ {
		b.WriteString("l" + itoa(i) + ": &l" + itoa(i) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	_, err := registry.Parse("lol.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than 10000 nodes") {
		t.Fatalf("Parse = %v, want the alias bound", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Parse took %v", d)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestAnchorsWithinBound: modest reuse of anchors is fine.
func TestAnchorsWithinBound(t *testing.T) {
	data := `name: mini
roles:
  a:
    frontmatter: &schema
      type: object
      properties:
        status: { const: done }
        note: { type: string }
  b:
    frontmatter: *schema
graph:
  $START: { new: { role: a, prompt: Start. } }
  a: { done: &next { role: b, prompt: "Next: {{ note }}" } }
  b: { done: { role: $END, prompt: "{{ note }}" } }
`
	w := mustParse(t, "a.yaml", []byte(data))
	if w.Graph["a"]["done"].Role != "b" || w.Roles["b"].Frontmatter == nil {
		t.Errorf("aliases not followed: %+v", w)
	}
}

// TestMergeKeys parses a workflow that shares parts through merge keys and
// the same workflow written out: they are the same workflow.
func TestMergeKeys(t *testing.T) {
	merged := `name: mini
roles:
  a: &role
    goal: Work.
    frontmatter: &schema
      type: object
      properties:
        status: { const: done }
  b:
    <<: *role
    goal: Review.
    frontmatter:
      <<: *schema
      required: [status]
graph:
  $START: { new: &edge { role: a, prompt: Start. } }
  a: { done: { <<: *edge, role: b } }
  b: { done: { <<: [{ role: $END }, *edge] } }
`
	written := `name: mini
roles:
  a:
    goal: Work.
    frontmatter:
      type: object
      properties:
        status: { const: done }
  b:
    goal: Review.
    frontmatter:
      type: object
      properties:
        status: { const: done }
      required: [status]
graph:
  $START: { new: { role: a, prompt: Start. } }
  a: { done: { role: b, prompt: Start. } }
  b: { done: { role: $END, prompt: Start. } }
`
	m, w := mustParse(t, "m.yaml", []byte(merged)), mustParse(t, "w.yaml", []byte(written))
	if !reflect.DeepEqual(m.Roles, w.Roles) || !reflect.DeepEqual(m.Graph, w.Graph) {
		t.Errorf("merged workflow differs from the one written out:\nroles %+v\ngraph %+v\nwant roles %+v\ngraph %+v", m.Roles, m.Graph, w.Roles, w.Graph)
	}
	if m.Roles["b"].Goal != "Review." {
		t.Errorf("a written key lost to a merged one: goal %q", m.Roles["b"].Goal)
	}
}

// TestValidateGo checks a workflow built in Go: problems have no position.
func TestValidateGo(t *testing.T) {
	w := &registry.Workflow{
		Name:     "go-built",
		MaxSteps: -1,
		Roles: map[string]*registry.Role{
			"worker": {Frontmatter: map[string]any{"properties": map[string]any{"status": map[string]any{"enum": []any{"done", true}}}}},
		},
		Graph: moderator.Graph{
			moderator.Start: {"new": {Role: "worker", Prompt: "Go."}},
			"worker":        {"done": {Role: "nobody", Prompt: "{{ missing }}"}},
		},
	}
	want := `maxSteps: must be a positive integer, not -1
roles.worker.frontmatter: status value true is not a string
graph.worker.done.role: unknown role "nobody" (roles: worker; or $END)
graph.worker.done.prompt: field "missing" is not in the worker schema (its properties: status)
graph: no edge leads to $END, so a thread could never finish`
	err := w.Validate()
	if err == nil || err.Error() != want {
		t.Errorf("Validate() =\n%v\nwant:\n%s", err, want)
	}
	if err := (&registry.Workflow{}).Validate(); err == nil || err.Error() != "missing name\nmissing roles\nmissing graph" {
		t.Errorf("empty workflow: %v", err)
	}

	// Typed Go values in a schema are read as JSON; a nil role is a role
	// without a schema.
	w = &registry.Workflow{
		Name: "typed",
		Roles: map[string]*registry.Role{
			"a": {Frontmatter: map[string]any{"properties": map[string]any{
				"status": map[string]any{"enum": []string{"done", "again"}},
				"note":   map[string]string{"type": "string"},
			}}},
			"b": nil,
		},
		Graph: moderator.Graph{
			moderator.Start: {"new": {Role: "a", Prompt: "Go."}},
			"a":             {"done": {Role: "b", Prompt: "{{ note }}"}, "again": {Role: "a", Prompt: "{{ note }}"}},
			"b":             {"done": {Role: moderator.End}},
		},
	}
	if got := w.Statuses("a"); !slices.Equal(got, []string{"again", "done"}) {
		t.Errorf("Statuses(a) = %v", got)
	}
	if err := w.Validate(); err == nil || err.Error() != "roles.b: missing frontmatter (the JSON Schema of the role's output)" {
		t.Errorf("Validate(nil role) = %v", err)
	}
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{
		"review-loop": true, "a": true, "A.b_c-9": true, "9lives": true,
		"": false, "-x": false, ".x": false, "_x": false, "a/b": false, "a b": false, "$START": false,
		"é": false, strings.Repeat("a", 190): true, strings.Repeat("a", 191): false,
	} {
		if got := registry.ValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
	}
}
