package moderator_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/moderator"
)

// output is a role output with a bit of everything, as decoded from JSON.
var output = map[string]any{
	"status":  "done",
	"summary": "Added the flag.",
	"steps":   []any{"Parse the config", "Add a flag"},
	"count":   3.0,
	"ratio":   2.5,
	"big":     1e21,
	"tiny":    1e-7,
	"neg":     -0.25,
	"ok":      true,
	"no":      false,
	"none":    nil,
	"empty":   []any{},
	"blank":   map[string]any{},
	"text":    "",
	"review": map[string]any{
		"comments": "Needs tests.",
		"score":    4.0,
		"files":    []any{"a.go", "b.go"},
	},
	"matrix":    []any{[]any{1.0, 2.0}, []any{}, "x"},
	"issues":    []any{map[string]any{"file": "a.go", "line": 12.0}, map[string]any{"file": "b.go", "notes": []any{"n1", "n2"}}},
	"multiline": []any{"first\nsecond", "third\n\nfifth"},
	"my-key":    "hyphen",
	"under_key": "underscore",
	"0":         "zero key",
	"Ünï":       "unicode",
	"deep":      map[string]any{"a": map[string]any{"b": map[string]any{"c": "leaf"}}},
}

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		template string
		output   any
		want     string
	}{
		{"no fields", "Plan this task.", output, "Plan this task."},
		{"empty template", "", output, ""},
		{"string", "Summary: {{ summary }}", output, "Summary: Added the flag."},
		{"no spaces", "{{summary}}", output, "Added the flag."},
		{"many spaces", "{{   summary   }}", output, "Added the flag."},
		{"tabs and newlines", "{{\tsummary\n}}", output, "Added the flag."},
		{"uneven spaces", "{{summary }}/{{ summary}}", output, "Added the flag./Added the flag."},
		{"repeated field", "{{ count }}+{{ count }}", output, "3+3"},
		{"nested field", "{{ review.comments }}", output, "Needs tests."},
		{"deep field", "{{ deep.a.b.c }}", output, "leaf"},
		{"array index", "{{ steps.0 }} then {{ steps.1 }}", output, "Parse the config then Add a flag"},
		{"nested array index", "{{ review.files.1 }}", output, "b.go"},
		{"index into object in array", "{{ issues.0.line }}", output, "12"},
		{"index into nested array", "{{ matrix.0.1 }}", output, "2"},
		{"digit key of object", "{{ 0 }}", output, "zero key"},
		{"hyphen key", "{{ my-key }}", output, "hyphen"},
		{"underscore key", "{{under_key}}", output, "underscore"},
		{"unicode key", "{{ Ünï }}", output, "unicode"},
		{"integer", "{{ count }}", output, "3"},
		{"fraction", "{{ ratio }}", output, "2.5"},
		{"large", "{{ big }}", output, "1e+21"},
		{"small", "{{ tiny }}", output, "1e-7"},
		{"negative", "{{ neg }}", output, "-0.25"},
		{"large integer below 1e21", "{{ n }}", map[string]any{"n": 123456789012345680000.0}, "123456789012345680000"},
		{"true", "{{ ok }}", output, "true"},
		{"false", "{{ no }}", output, "false"},
		{"null", "[{{ none }}]", output, "[null]"},
		{"empty string", "[{{ text }}]", output, "[]"},
		{"empty array", "steps: {{ empty }}", output, "steps: []"},
		{"empty object", "obj: {{ blank }}", output, "obj: {}"},
		{"array as bullets", "Steps: {{ steps }}", output, "Steps:\n- Parse the config\n- Add a flag"},
		{"blanks before a block dropped", "Steps: \t {{ steps }}", output, "Steps:\n- Parse the config\n- Add a flag"},
		{"block at start", "{{ steps }}", output, "\n- Parse the config\n- Add a flag"},
		{"block followed by text", "{{ steps }}\nDone.", output, "\n- Parse the config\n- Add a flag\nDone."},
		{"object sorted keys", "Review: {{ review }}", output, "Review:\ncomments: Needs tests.\nfiles:\n  - a.go\n  - b.go\nscore: 4"},
		{"array of objects", "{{ issues }}", output, "\n- file: a.go\n  line: 12\n- file: b.go\n  notes:\n    - n1\n    - n2"},
		{"nested arrays", "{{ matrix }}", output, "\n- - 1\n  - 2\n- []\n- x"},
		{"multi-line strings in a list", "{{ multiline }}", output, "\n- first\n  second\n- third\n\n  fifth"},
		{"multi-line string under a key", "{{ o }}", map[string]any{"o": map[string]any{"k": "a\nb", "e": ""}}, "\ne:\nk: a\n  b"},
		{"null and bools in a list", "{{ l }}", map[string]any{"l": []any{nil, true, 1e21, map[string]any{}}}, "\n- null\n- true\n- 1e+21\n- {}"},
		{"multi-line string as-is", "{{ s }}", map[string]any{"s": "a\nb"}, "a\nb"},
		{"lone braces", "a { b } c {x} }} {", output, "a { b } c {x} }} {"},
		{"single braces around a field", "{ {{ count }} }", output, "{ 3 }"},
		{"json-looking text", `{"a": {"b": 1}}`, output, `{"a": {"b": 1}}`},
		{"closing braces run on", "{{ count }}}", output, "3}"},
		{"text between fields", "a{{count}}b{{ratio}}c", output, "a3b2.5c"},
		{"non-object root", "{{ 1 }}", []any{"x", "y"}, "y"},
		{"typed Go values", "{{ s }} {{ n }} {{ m }}", map[string]any{
			"s": []string{"a", "b"},
			"n": 7,
			"m": map[string]int{"y": 2, "x": 1},
		}, "\n- a\n- b 7\nx: 1\ny: 2"},
		{"typed Go path", "{{ s.1 }} {{ m.x }}", map[string]any{"s": []string{"a", "b"}, "m": map[string]int{"x": 1}}, "b 1"},
		{"float32", "{{ f }}", map[string]any{"f": float32(0.1)}, "0.1"},
		{"NaN", "{{ f }}", map[string]any{"f": math.NaN()}, "NaN"},
		{"pointer", "{{ p }}", map[string]any{"p": new(int)}, "0"},
		{"unsigned and array", "{{ u }} {{ a }}", map[string]any{"u": uint8(5), "a": [2]string{"x", "y"}}, "5\n- x\n- y"},
		{"struct uses %v", "{{ s }}", map[string]any{"s": struct{ A int }{1}}, "{1}"},
		{"named string and bool", "{{ s }} {{ b }}", map[string]any{"s": level("high"), "b": flag(true)}, "high true"},
		{"nil typed slice and map", "{{ s }} {{ m }}", map[string]any{"s": []string(nil), "m": map[string]int(nil)}, "[] {}"},
		{"nil pointer", "{{ p }}", map[string]any{"p": (*int)(nil)}, "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := moderator.Render(tc.template, tc.output)
			if err != nil {
				t.Fatalf("Render(%q) error = %v", tc.template, err)
			}
			if got != tc.want {
				t.Errorf("Render(%q) = %q, want %q", tc.template, got, tc.want)
			}
		})
	}
}

type (
	level string
	flag  bool
)

func TestRenderCycle(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	got, err := moderator.Render("{{ self }}", m)
	if err != nil {
		t.Fatalf("Render of a cyclic value: %v", err)
	}
	if !strings.HasSuffix(got, "self: ...") {
		t.Errorf("Render of a cyclic value = ...%q, want it to end in %q", got[max(0, len(got)-40):], "self: ...")
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name     string
		template string
		output   any
		wantErr  error
		field    string
		offset   int
		msg      string
	}{
		{"missing field", "Fix: {{ comments }}", output, moderator.ErrMissingField, "comments", 5,
			`moderator: template field "comments" missing from output`},
		{"first missing field reported", "{{ a }} {{ b }}", output, moderator.ErrMissingField, "a", 0, `"a"`},
		{"missing nested field", "{{ review.author }}", output, moderator.ErrMissingField, "review.author", 0,
			`template field "review.author" missing from output ("review" has no field "author")`},
		{"index out of range", "{{ steps.2 }}", output, moderator.ErrMissingField, "steps.2", 0, `("steps" has 2 items)`},
		{"index not a number", "{{ steps.first }}", output, moderator.ErrMissingField, "steps.first", 0,
			`("steps" is an array and "first" is not an index)`},
		{"index with leading zero", "{{ steps.01 }}", output, moderator.ErrMissingField, "steps.01", 0, `"01" is not an index`},
		{"into a string", "{{ summary.x }}", output, moderator.ErrMissingField, "summary.x", 0, `("summary" is a string)`},
		{"into null", "{{ none.x }}", output, moderator.ErrMissingField, "none.x", 0, `("none" is null)`},
		{"into a number", "{{ count.0 }}", output, moderator.ErrMissingField, "count.0", 0, `("count" is a number)`},
		{"root not an object", "{{ a }}", "text", moderator.ErrMissingField, "a", 0, `(output is a string)`},
		{"root null", "{{ a }}", nil, moderator.ErrMissingField, "a", 0, `(output is null)`},
		{"unclosed", "Fix: {{ comments", output, moderator.ErrBadTemplate, "", 5,
			`moderator: bad template at offset 5: unclosed "{{"`},
		{"unclosed after a field", "{{ count }} {{", output, moderator.ErrBadTemplate, "", 12, `unclosed`},
		{"single closing brace", "{{ count }", output, moderator.ErrBadTemplate, "", 0, `unclosed`},
		{"empty field", "a {{}} b", output, moderator.ErrBadTemplate, "", 2, `empty field`},
		{"blank field", "{{   }}", output, moderator.ErrBadTemplate, "", 0, `empty field`},
		{"empty segment", "{{ a..b }}", output, moderator.ErrBadTemplate, "a..b", 0, `bad field path "a..b": empty segment`},
		{"leading dot", "{{ .summary }}", output, moderator.ErrBadTemplate, ".summary", 0, `empty segment`},
		{"trailing dot", "{{ summary. }}", output, moderator.ErrBadTemplate, "summary.", 0, `empty segment`},
		{"space in path", "{{ a b }}", output, moderator.ErrBadTemplate, "a b", 0, `unexpected ' '`},
		{"brackets", "{{ steps[0] }}", output, moderator.ErrBadTemplate, "steps[0]", 0, `unexpected '['`},
		{"triple braces", "{{{ count }}}", output, moderator.ErrBadTemplate, "{ count", 0, `unexpected '{'`},
		{"nested braces", "{{ a {{ b }} }}", output, moderator.ErrBadTemplate, "a {{ b", 0, `bad field path`},
		{"invalid UTF-8", "{{ a\xff }}", output, moderator.ErrBadTemplate, "a\xff", 0, `invalid UTF-8`},
		{"bad template beats missing field", "{{ nope }} {{", output, moderator.ErrBadTemplate, "", 11, `unclosed`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := moderator.Render(tc.template, tc.output)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Render(%q) = %q, %v, want error %v", tc.template, got, err, tc.wantErr)
			}
			var e *moderator.Error
			if !errors.As(err, &e) {
				t.Fatalf("Render(%q) error %T is not a *moderator.Error", tc.template, err)
			}
			if e.Field != tc.field || e.Offset != tc.offset || e.Role != "" || e.Status != "" {
				t.Errorf("Render(%q) error field %q offset %d role %q status %q, want field %q offset %d and no edge",
					tc.template, e.Field, e.Offset, e.Role, e.Status, tc.field, tc.offset)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Render(%q) error = %q, want it to contain %q", tc.template, err, tc.msg)
			}
			if tc.wantErr == moderator.ErrBadTemplate {
				if _, ferr := moderator.Fields(tc.template); !errors.Is(ferr, moderator.ErrBadTemplate) {
					t.Errorf("Fields(%q) error = %v, want %v like Render", tc.template, ferr, moderator.ErrBadTemplate)
				}
			}
		})
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		template string
		want     []string
	}{
		{"Plan this task.", nil},
		{"", nil},
		{"a { b } }}", nil},
		{"{{ steps }}", []string{"steps"}},
		{"{{summary}} and {{ review.comments }} and {{steps.0}}", []string{"summary", "review.comments", "steps.0"}},
		{"{{ b }} {{ a }} {{b}} {{  a  }} {{ c }}", []string{"b", "a", "c"}},
		{"{{ a.b }} {{ a }}", []string{"a.b", "a"}},
		{"{ {{ x }} }", []string{"x"}},
	}
	for _, tc := range tests {
		t.Run(tc.template, func(t *testing.T) {
			got, err := moderator.Fields(tc.template)
			if err != nil {
				t.Fatalf("Fields(%q) error = %v", tc.template, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Fields(%q) = %q, want %q", tc.template, got, tc.want)
			}
		})
	}
}

func TestFieldsErrors(t *testing.T) {
	tests := []struct {
		template string
		msg      string
	}{
		{"{{ a", `moderator: bad template at offset 0: unclosed "{{"`},
		{"x {{ }}", `moderator: bad template at offset 2: empty field in "{{ }}"`},
		{"{{ a..b }}", `bad field path "a..b": empty segment`},
		{"{{ a/b }}", `bad field path "a/b": unexpected '/'`},
	}
	for _, tc := range tests {
		t.Run(tc.template, func(t *testing.T) {
			got, err := moderator.Fields(tc.template)
			if !errors.Is(err, moderator.ErrBadTemplate) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Fields(%q) = %q, %v, want %v containing %q", tc.template, got, err, moderator.ErrBadTemplate, tc.msg)
			}
		})
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"plain", "plain"},
		{3.5, "3.5"},
		{nil, "null"},
		{[]any{}, "[]"},
		{[]any{"a", "b"}, "- a\n- b"},
		{map[string]any{"status": "done", "steps": []any{"x"}}, "status: done\nsteps:\n  - x"},
	} {
		if got := moderator.Text(tc.in); got != tc.want {
			t.Errorf("Text(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIndex(t *testing.T) {
	for _, c := range []struct {
		seg  string
		want int
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"42", 42, true},
		{"1234567890", 1234567890, true},
		{"", 0, false},
		{"01", 0, false},
		{"00", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1a", 0, false},
		{"x", 0, false},
		{"99999999999999999999999", 0, false}, // beyond int
	} {
		got, ok := moderator.Index(c.seg)
		if got != c.want || ok != c.ok {
			t.Errorf("Index(%q) = %d, %v; want %d, %v", c.seg, got, ok, c.want, c.ok)
		}
	}
}
