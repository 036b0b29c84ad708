package agent_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
)

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// oneOfSchema is a reviewer whose fields depend on its status.
const oneOfSchema = `
$defs:
  severity: {type: integer, minimum: 1, maximum: 5, description: "How bad it is, 1 to 5."}
oneOf:
  - type: object
    description: The change is good.
    properties:
      status: {const: approved}
      comments: {type: string, description: What you liked.}
    required: [status]
    additionalProperties: false
  - type: object
    properties:
      status: {const: rejected}
      comments: {type: string, minLength: 1, description: What must change.}
      issues:
        type: array
        minItems: 1
        items:
          type: object
          properties:
            file: {type: string}
            line: {type: integer, minimum: 1}
            severity: {$ref: "#/$defs/severity"}
          required: [file, severity]
      blocking: {type: [boolean, "null"]}
      score: {oneOf: [{type: number, exclusiveMinimum: 0, maximum: 10}, {const: n/a}]}
    required: [status, comments, issues]
    additionalProperties: false
`

// richSchema exercises every phrase of the format instruction.
const richSchema = `
type: object
description: A planner's plan.
properties:
  status: {enum: [done, blocked, "true"]}
  steps: {type: array, items: {type: string, maxLength: 120}, minItems: 1, maxItems: 10, description: "The plan, one step per item."}
  owner: {type: string, format: email}
  tags: {type: array, uniqueItems: true, items: {enum: [backend, frontend, docs]}}
  estimate: {type: number, exclusiveMinimum: 0, multipleOf: 0.5}
  ticket: {type: string, pattern: "^[A-Z]+-[0-9]+$"}
  base: {type: string, format: cas_ref, description: The commit to start from.}
  pair: {type: array, prefixItems: [{type: string}, {type: integer}]}
  meta: {type: object}
  anything: {}
required: [status, steps, estimate]
`

func TestAssembleGolden(t *testing.T) {
	t.Parallel()
	roles := reviewLoop(t)
	thread := "### step 1: planner (done)\n\nsteps:\n- parse the input\n- write the output\n"
	tests := []struct {
		role  string
		parts agent.PromptParts
	}{
		{"planner", agent.PromptParts{EdgePrompt: "Plan this task.", Thread: "(this is the first step)"}},
		{"developer", agent.PromptParts{
			EdgePrompt: "Implement these steps:\n- parse the input\n- write the output",
			Resume:     "Use the standard library only.",
			Thread:     thread,
			Correction: "Your previous answer could not be used: it has no frontmatter block.\n\nAnswer again, starting with a frontmatter block.",
		}},
		{"reviewer", agent.PromptParts{EdgePrompt: "Review this change: parsed and wrote it.", Thread: thread}},
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			r := roles[tc.role]
			p := tc.parts
			p.Workflow, p.Role, p.Goal, p.Procedure, p.Output, p.Schema = "review-loop", tc.role, r.Goal, r.Procedure, r.Output, r.Schema
			golden(t, "assemble-"+tc.role+".md", agent.Assemble(p))
		})
	}
}

func TestAssembleOrder(t *testing.T) {
	t.Parallel()
	got := agent.Assemble(agent.PromptParts{
		Workflow: "w", Role: "r", Goal: "\n\nGOAL\n\n", Procedure: "PROCEDURE", Output: "OUTPUT", Schema: nil,
		EdgePrompt: "TASK", Resume: "RESUME", Thread: "THREAD", Correction: "CORRECTION  \n",
	})
	last := -1
	for _, want := range []string{"# Role: r (workflow w)", "## Goal\n\nGOAL\n", "## Procedure\n\nPROCEDURE\n", "## Output\n\nOUTPUT\n",
		"## Output format\n\n", "status: $SUSPEND", "## Task\n\nTASK\n", "## Note from a human\n\nRESUME\n",
		"## The thread so far\n\nTHREAD\n", "## Correction\n\nCORRECTION\n"} {
		i := strings.Index(got, want)
		if i <= last {
			t.Fatalf("Assemble() has %q at %d, after %d; want the parts in order:\n%s", want, i, last, got)
		}
		last = i
	}
	if !strings.HasSuffix(got, "CORRECTION\n") {
		t.Errorf("Assemble() should end with the correction and one newline:\n%q", got)
	}
	bare := agent.Assemble(agent.PromptParts{Role: "r"})
	for _, absent := range []string{"## Goal", "## Task", "## Correction", "## The thread so far", "(workflow"} {
		if strings.Contains(bare, absent) {
			t.Errorf("Assemble() with empty parts has %q:\n%s", absent, bare)
		}
	}
}

func TestFormatInstructionGolden(t *testing.T) {
	t.Parallel()
	golden(t, "format-oneof.md", agent.FormatInstruction(mustYAML(t, oneOfSchema)))
	golden(t, "format-rich.md", agent.FormatInstruction(mustYAML(t, richSchema)))
	golden(t, "format-any.md", agent.FormatInstruction(nil))
}

// exampleBlock finds the example frontmatter blocks of a format instruction.
var exampleBlock = regexp.MustCompile("(?s)Example:\n\n```markdown\n---\n(.*?)---\n")

// TestFormatInstructionExamplesValid checks that every example a format
// instruction shows is valid against its schema.
func TestFormatInstructionExamplesValid(t *testing.T) {
	t.Parallel()
	schemas := map[string]any{"oneOf": mustYAML(t, oneOfSchema)}
	for name, r := range reviewLoop(t) {
		schemas[name] = r.Schema
	}
	for name, schema := range schemas {
		sc, err := cas.CompileSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		blocks := exampleBlock.FindAllStringSubmatch(agent.FormatInstruction(schema), -1)
		if len(blocks) == 0 {
			t.Errorf("%s: no example", name)
		}
		for _, b := range blocks {
			v, err := cas.ParseYAML([]byte(b[1]))
			if err != nil {
				t.Errorf("%s: example does not parse: %v\n%s", name, err, b[1])
				continue
			}
			if err := sc.Validate(v); err != nil {
				t.Errorf("%s: example is invalid: %v\n%s", name, err, b[1])
			}
		}
	}
}

func TestWriteYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	strs := []string{"", "plain", "yes", "No", "null", "~", "true", "1.10", "0o17", "12", "-x", " lead", "trail ", "a: b", "#x", "a #b",
		"multi\nline", "tab\there", "quote\"s", "back\\slash", "émoji 😀", "$SUSPEND", "<comments>", "@at", "&anchor", "*alias",
		"!tag", "%dir", "[x]", "{x}", "a,b", "2025-01-31", "\u2028", "<<", ".inf", "x\x00y"}
	m := map[string]any{}
	var list []any
	for i, s := range strs {
		m[s] = s
		list = append(list, s, float64(i)*1.5)
	}
	v := map[string]any{
		"status": "done", "strings": m, "list": list,
		"numbers":  []any{0.0, -0.5, 1e21, 1e-7, 9007199254740991.0, -3.0},
		"empty":    map[string]any{"m": map[string]any{}, "l": []any{}, "s": ""},
		"nested":   []any{[]any{[]any{"deep"}}, map[string]any{"k": []any{map[string]any{"a": nil, "b": true}}}},
		"booleans": []any{true, false, nil},
	}
	text := agent.WriteYAML(v)
	got, err := cas.ParseYAML([]byte(text))
	if err != nil {
		t.Fatalf("ParseYAML: %v\n%s", err, text)
	}
	if !equalJSON(got, v) {
		a, _ := cas.Canonical(got)
		b, _ := cas.Canonical(v)
		t.Errorf("round trip differs:\n%s\ngot  %s\nwant %s", text, a, b)
	}
}

func FuzzWriteYAML(f *testing.F) {
	for _, s := range []string{"", "a", "yes", "a: b", "- x", "1e3", "\t", "'", "\"", "\\", "? x", "x\n", "|", ">"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, '\uFEFF') {
			return // synth and the format instruction write valid UTF-8 only
		}
		v := map[string]any{"k": s, "l": []any{s, map[string]any{"n": s}}}
		if s != "" {
			v[s] = "key"
		}
		text := agent.WriteYAML(v)
		got, err := cas.ParseYAML([]byte(text))
		if err != nil {
			t.Fatalf("ParseYAML(%q): %v", text, err)
		}
		if !equalJSON(got, v) {
			t.Fatalf("round trip of %q differs:\n%s", s, text)
		}
	})
}

// TestFormatInstructionSkipsImpossibleVariants checks that a variant whose
// status the keywords beside the union cut away (it can never validate) is
// not shown, and the others are still described by status.
func TestFormatInstructionSkipsImpossibleVariants(t *testing.T) {
	t.Parallel()
	got := agent.FormatInstruction(mustYAML(t, `{type: object, required: [status],
  properties: {status: {enum: [ok, again]}},
  oneOf: [{properties: {status: {const: ok}}}, {properties: {status: {const: never}}}, {properties: {status: {const: again}}}]}`))
	for _, want := range []string{"### Status `ok`\n", "### Status `again`\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("format instruction lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "never") || strings.Contains(got, "### Shape") {
		t.Errorf("format instruction shows the impossible variant:\n%s", got)
	}
}
