package agent_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
)

// role is one role of a workflow file.
type role struct {
	Goal, Procedure, Output string
	Schema                  any
}

// reviewLoop reads the review-loop workflow of SPEC §6 from testdata.
func reviewLoop(t testing.TB) map[string]role {
	t.Helper()
	data, err := os.ReadFile("testdata/review-loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v, err := cas.ParseYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]role{}
	for name, r := range v.(map[string]any)["roles"].(map[string]any) {
		m := r.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		out[name] = role{Goal: str("goal"), Procedure: str("procedure"), Output: str("output"), Schema: m["frontmatter"]}
	}
	return out
}

// mustYAML parses a YAML (or JSON) schema.
func mustYAML(t testing.TB, text string) any {
	t.Helper()
	v, err := cas.ParseYAML([]byte(text))
	if err != nil {
		t.Fatalf("ParseYAML(%q): %v", text, err)
	}
	return v
}

// frontmatter parses the frontmatter of a synth output.
func frontmatter(t *testing.T, raw string) map[string]any {
	t.Helper()
	rest, ok := strings.CutPrefix(raw, "---\n")
	front, body, ok2 := strings.Cut(rest, "\n---\n")
	if !ok || !ok2 || body == "" || !strings.HasSuffix(body, "\n") {
		t.Fatalf("output is not ---, frontmatter, ---, body:\n%s", raw)
	}
	v, err := cas.ParseYAML([]byte(front))
	if err != nil {
		t.Fatalf("frontmatter does not parse: %v\n%s", err, raw)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("frontmatter is %T, want a mapping:\n%s", v, raw)
	}
	return m
}

// synthValid runs synth and checks its output against schema.
func synthValid(t *testing.T, s *agent.Synth, req *agent.Request) map[string]any {
	t.Helper()
	res, err := s.Run(t.Context(), req)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	m := frontmatter(t, res.Raw)
	if req.Schema != nil {
		sc, err := cas.CompileSchema(req.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Validate(m); err != nil {
			t.Fatalf("synth output is invalid: %v\n%s", err, res.Raw)
		}
	}
	return m
}

func TestSynthReviewLoop(t *testing.T) {
	t.Parallel()
	roles := reviewLoop(t)
	s := agent.NewSynth(7)
	for _, name := range []string{"planner", "developer", "reviewer"} {
		for runs := range 4 {
			req := &agent.Request{Thread: "01JCQ5S7Q7T7Y3V0Z3K5W8M9AB", Role: name, Schema: roles[name].Schema, RoleRuns: runs}
			synthValid(t, s, req)
		}
	}
	// The reviewer walks its statuses in turn: rejected runs make the loop go round.
	var got []any
	for runs := range 4 {
		m := synthValid(t, s, &agent.Request{Role: "reviewer", Schema: roles["reviewer"].Schema, RoleRuns: runs})
		got = append(got, m["status"])
	}
	if want := []any{"approved", "rejected", "approved", "rejected"}; !equalJSON(got, want) {
		t.Errorf("statuses of runs 0..3 = %v, want %v", got, want)
	}
	// Statuses given by the caller set the order.
	got = nil
	for runs := range 3 {
		m := synthValid(t, s, &agent.Request{Role: "reviewer", Schema: roles["reviewer"].Schema, RoleRuns: runs, Statuses: []string{"rejected", "rejected", "approved"}})
		got = append(got, m["status"])
	}
	if want := []any{"rejected", "rejected", "approved"}; !equalJSON(got, want) {
		t.Errorf("statuses with Statuses given = %v, want %v", got, want)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := cas.Canonical(a)
	y, err2 := cas.Canonical(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func TestSynthDeterministic(t *testing.T) {
	t.Parallel()
	schema := mustYAML(t, `
type: object
properties:
  status: {enum: [a, b, c]}
  text: {type: string}
  n: {type: integer}
  flag: {type: boolean}
  tags: {type: array, items: {type: string}}
  extra: {type: string}
required: [status, text, n]
`)
	req := &agent.Request{Thread: "T", Role: "r", Schema: schema, RoleRuns: 1, StepIndex: 4}
	a, err := agent.NewSynth(1).Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := agent.NewSynth(1).Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if a.Raw != b.Raw {
		t.Errorf("two runs differ:\n%s\n%s", a.Raw, b.Raw)
	}
	differs := false
	for seed := int64(2); seed < 6; seed++ {
		c, err := agent.NewSynth(seed).Run(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		differs = differs || c.Raw != a.Raw
	}
	if !differs {
		t.Errorf("other seeds all gave the same output as seed 1:\n%s", a.Raw)
	}
	if !strings.Contains(a.Raw, "status: b\n") {
		t.Errorf("RoleRuns 1 should pick the second status:\n%s", a.Raw)
	}
}

func TestSynthTrickySchemas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		check  func(t *testing.T, m map[string]any)
	}{
		{name: "oneOf status variants", schema: `
oneOf:
  - {type: object, properties: {status: {const: approved}}, required: [status], additionalProperties: false}
  - type: object
    properties: {status: {const: rejected}, comments: {type: string, minLength: 1}, severity: {enum: [1, 2, 3]}}
    required: [status, comments, severity]
    additionalProperties: false`},
		{name: "nested arrays of objects with minItems", schema: `
type: object
properties:
  status: {const: done}
  groups:
    type: array
    minItems: 2
    items:
      type: object
      properties:
        name: {type: string, maxLength: 12}
        members:
          type: array
          minItems: 3
          maxItems: 3
          items: {type: object, properties: {id: {type: integer, minimum: 100}}, required: [id], additionalProperties: false}
      required: [name, members]
required: [status, groups]`,
			check: func(t *testing.T, m map[string]any) {
				if n := len(m["groups"].([]any)); n < 2 {
					t.Errorf("%d groups, want at least 2", n)
				}
			}},
		{name: "integer and number bounds", schema: `
type: object
properties:
  a: {type: integer, exclusiveMinimum: 0, exclusiveMaximum: 3}
  b: {type: integer, minimum: 10, maximum: 10}
  c: {type: integer, minimum: -50, maximum: -40}
  d: {type: integer, multipleOf: 7, minimum: 20, maximum: 30}
  e: {type: number, multipleOf: 0.25, exclusiveMinimum: 1, maximum: 1.3}
  f: {type: number, exclusiveMinimum: 0, exclusiveMaximum: 1}
  g: {type: integer, multipleOf: 0.5, minimum: 1.2}
  h: {type: number, maximum: -1000}
required: [a, b, c, d, e, f, g, h]`,
			check: func(t *testing.T, m map[string]any) {
				if m["b"] != 10.0 || m["e"] != 1.25 || m["f"] != 0.5 {
					t.Errorf("b, e, f = %v, %v, %v; want 10, 1.25, 0.5", m["b"], m["e"], m["f"])
				}
			}},
		{name: "enum of numbers", schema: `
type: object
properties:
  any: {enum: [1, 2.5, 3]}
  int: {type: integer, enum: [2.5, 4]}
  mixed: {type: [string, "null"], enum: [1, null, "x"]}
required: [any, int, mixed]`,
			check: func(t *testing.T, m map[string]any) {
				if m["int"] != 4.0 {
					t.Errorf("int = %v, want 4 (the only integer)", m["int"])
				}
			}},
		{name: "const anywhere", schema: `
type: object
properties:
  status: {const: done}
  version: {const: 2}
  obj: {const: {a: [1, true, null]}}
required: [status, version, obj]`},
		{name: "$ref and $defs", schema: `
$defs:
  status: {enum: [ok, retry]}
  item: {type: object, properties: {id: {$ref: "#/$defs/id"}, label: {type: string}}, required: [id, label]}
  id: {type: integer, minimum: 1, maximum: 9}
  node: {type: object, properties: {name: {type: string}, children: {type: array, items: {$ref: "#/$defs/node"}}}, required: [name]}
type: object
properties:
  status: {$ref: "#/$defs/status"}
  items: {type: array, minItems: 2, items: {$ref: "#/$defs/item"}}
  tree: {$ref: "#/$defs/node"}
required: [status, items, tree]`},
		{name: "allOf merges", schema: `
allOf:
  - {type: object, properties: {status: {const: done}, a: {type: string}}, required: [status, a]}
  - {type: object, properties: {b: {type: string, minLength: 3, maxLength: 5}}, required: [b]}
  - {properties: {a: {maxLength: 10}}}`,
			check: func(t *testing.T, m map[string]any) {
				if len(m["a"].(string)) > 10 || len(m["b"].(string)) > 5 {
					t.Errorf("a = %q, b = %q: allOf bounds ignored", m["a"], m["b"])
				}
			}},
		{name: "anyOf and type lists", schema: `
type: object
properties:
  maybe: {anyOf: [{type: "null"}, {type: string, minLength: 2}]}
  either: {type: ["null", integer], minimum: 5}
required: [maybe, either]`,
			check: func(t *testing.T, m map[string]any) {
				if m["maybe"] == nil || m["either"] == nil {
					t.Errorf("maybe = %v, either = %v; want non-null values preferred", m["maybe"], m["either"])
				}
			}},
		{name: "string formats, patterns and lengths", schema: `
type: object
properties:
  when: {type: string, format: date-time}
  day: {type: string, format: date}
  mail: {type: string, format: email}
  id: {type: string, format: uuid}
  code: {type: string, pattern: "^[a-z]{2,4}-\\d+$"}
  ticket: {type: string, pattern: "[A-Z]+-[0-9]{3}", minLength: 10}
  long: {type: string, minLength: 100}
  short: {type: string, maxLength: 3}
  empty: {type: string, maxLength: 0}
required: [when, day, mail, id, code, ticket, long, short, empty]`},
		{name: "unique items from a small enum", schema: `
type: object
properties:
  picks: {type: array, minItems: 3, uniqueItems: true, items: {enum: [red, green, blue]}}
required: [picks]`},
		{name: "prefixItems and closed tuples", schema: `
type: object
properties:
  pair: {type: array, prefixItems: [{type: string}, {type: integer, minimum: 3}], items: false, minItems: 2}
required: [pair]`},
		{name: "minProperties and additionalProperties", schema: `
type: object
properties:
  status: {const: done}
  opt1: {type: string}
  opt2: {type: boolean}
additionalProperties: {type: integer}
minProperties: 5
required: [status, must]`},
		{name: "optional cas_ref is left out", schema: `
type: object
properties:
  status: {const: done}
  link: {type: string, format: cas_ref}
required: [status]`,
			check: func(t *testing.T, m map[string]any) {
				if _, ok := m["link"]; ok {
					t.Errorf("link = %v, want no made-up hash", m["link"])
				}
			}},
		{name: "backtracks past an impossible branch", schema: `
type: object
properties:
  x:
    oneOf:
      - {type: integer, minimum: 5, maximum: 1}
      - {type: object, properties: {y: {type: string, pattern: "^y[0-9]$", minLength: 3}}, required: [y]}
      - {type: string, const: fallback}
required: [x]`},
		{name: "no schema", schema: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema := mustYAML(t, tc.schema)
			for seed := range int64(3) {
				for runs := range 3 {
					m := synthValid(t, agent.NewSynth(seed), &agent.Request{Thread: "T", Role: "r", Schema: schema, RoleRuns: runs})
					if tc.check != nil && seed == 0 && runs == 0 {
						tc.check(t, m)
					}
				}
			}
		})
	}
}

func TestSynthErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		schema   string
		statuses []string
		want     string
	}{
		{name: "impossible string", schema: `{"type":"string","minLength":5,"maxLength":2}`,
			want: "at schema path /: minLength 5 exceeds maxLength 2"},
		{name: "impossible nested string", schema: `{type: object, properties: {s: {type: string, minLength: 5, maxLength: 2}}, required: [s]}`,
			want: "at schema path /properties/s: minLength 5 exceeds maxLength 2"},
		{name: "required cas_ref", schema: `{type: object, properties: {link: {type: string, format: cas_ref}}, required: [link]}`,
			want: "at schema path /properties/link/format: a required cas_ref (the hash of a stored node) cannot be made up"},
		{name: "required but not allowed", schema: `{type: object, properties: {a: {type: string}}, required: [a, b], additionalProperties: false}`,
			want: `at schema path /required: required property "b" is not allowed by additionalProperties false`},
		{name: "no integer in range", schema: `{type: object, properties: {n: {type: integer, exclusiveMinimum: 1, exclusiveMaximum: 2}}, required: [n]}`,
			want: "at schema path /properties/n: no integer lies within (1, 2)"},
		{name: "not an object", schema: `{type: array}`,
			want: "the schema does not describe an object"},
		{name: "a status the schema rejects", schema: `{type: object, properties: {status: {const: done}}, required: [status]}`, statuses: []string{"other"},
			want: "at schema path /properties/status/const: value must be 'done'"},
		{name: "does not compile", schema: `{type: 12}`, want: "the schema of role r does not compile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := agent.NewSynth(0).Run(t.Context(), &agent.Request{Role: "r", Schema: mustYAML(t, tc.schema), Statuses: tc.statuses})
			re := runErr(t, err)
			if !strings.Contains(err.Error(), tc.want) || re.Result.ExitCode != agent.ExitFailure {
				t.Errorf("Run() error = %q, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, agent.ErrFailed) {
				t.Errorf("error does not wrap ErrFailed")
			}
		})
	}
}
