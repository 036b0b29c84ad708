package cas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// TestViolationLocations: each violation names the payload path, the
// keyword location through every $ref (JSON pointers, with names that need
// escaping written as the pointer says), the offending value and what is
// wrong; violations come sorted by payload path, the same every time.
func TestViolationLocations(t *testing.T) {
	s, err := cas.CompileSchema(mustJSON(t, `{"$ref":"#/$defs/t","$defs":{"t":{
		"properties":{"a b%/~":{"type":"string"},"e":{"enum":[]},"r":{"format":"cas_ref"},"m":{"maxLength":2}},
		"additionalProperties":{"anyOf":[{"type":"number"},{"$ref":"#/$defs/t"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	payload := mustJSON(t, `{"m":"long","z":{"q":{"a b%/~":true}},"r":"xyz","e":2,"a b%/~":1}`)
	want := []struct{ path, schema, msg, value string }{
		{"/a b%~1~0", "/$ref/properties/a b%~1~0/type", "want string", `1`},
		{"/e", "/$ref/properties/e/enum", "the enum is empty", `2`},
		{"/m", "/$ref/properties/m/maxLength", "maxLength", `"long"`},
		{"/r", "/$ref/properties/r/format", "not valid cas_ref", `"xyz"`},
		{"/z", "/$ref/additionalProperties/anyOf/0/type", "want number", `{"q":{"a b%/~":true}}`},
		{"/z/q", "/$ref/additionalProperties/anyOf/1/$ref/additionalProperties/anyOf/0/type", "want number", `{"a b%/~":true}`},
		{"/z/q/a b%~1~0", "/$ref/additionalProperties/anyOf/1/$ref/additionalProperties/anyOf/1/$ref/properties/a b%~1~0/type", "want string", `true`},
	}
	var first string
	for range 20 { // the validator visits members in map order
		err := s.Validate(payload)
		var ve *cas.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, cas.ErrInvalid) {
			t.Fatalf("Validate = %v, want a *ValidationError wrapping ErrInvalid", err)
		}
		if first == "" {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("message changed between runs:\n%s\n%s", first, err)
		}
		if len(ve.Violations) != len(want) {
			t.Fatalf("violations:\n%s\nwant %d", err, len(want))
		}
		for i, w := range want {
			v := ve.Violations[i]
			if v.Path != w.path || v.SchemaPath != w.schema || !strings.Contains(v.Message, w.msg) {
				t.Errorf("violation %d = %+v, want at %s, schema %s, saying %q", i, v, w.path, w.schema, w.msg)
			}
			if !strings.Contains(v.String(), "value "+w.value+";") {
				t.Errorf("violation %d = %s, want the value %s", i, v, w.value)
			}
		}
	}
}

// TestCompileSchemaMessages: a schema the compiler refuses gets a message
// naming where in the schema, without the validator's internal URL.
func TestCompileSchemaMessages(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"type":12}`, "not a valid JSON Schema: at /type: value must be one of"},
		{`{"properties":{"a b":{"pattern":"(("}}}`, "not a valid JSON Schema: at /properties/a b/pattern: '((' is not valid regex"},
		{`{"$ref":"#/nope"}`, "$ref /nope points to nothing in the schema"},
		{`{"$ref":"#nope"}`, `$ref "#nope" names no anchor in the schema`},
		{`{"$ref":"http://example.com/a"}`, `$ref "http://example.com/a" is outside the schema (remote and file loading are off)`},
		{`{"$ref":"other.json"}`, `$ref "other.json" is outside the schema`},
		{`{"items":{"$ref":"#/$defs/x"},"$defs":{"x":{"minLength":-1}}}`, "not a valid JSON Schema: at /$defs/x/minLength"},
	}
	for _, tc := range tests {
		_, err := cas.CompileSchema(mustJSON(t, tc.schema))
		if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CompileSchema(%s) = %v, want ErrInvalid containing %q", tc.schema, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "uwf:///") {
			t.Errorf("CompileSchema(%s) = %v: the internal URL leaks", tc.schema, err)
		}
	}
}

// TestCompileSchemaLoops: subschemas applied to the same value in a cycle
// are refused at registration (validation would never end); recursion
// through a part of the value is a recursive schema and compiles.
func TestCompileSchemaLoops(t *testing.T) {
	loops := map[string]struct{ schema, where string }{
		"self ref":       {`{"$ref":"#"}`, "/ -> /"},
		"two refs":       {`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, "/$defs/a -> /$defs/b -> /$defs/a"},
		"through allOf":  {`{"items":{"$ref":"#/$defs/a"},"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}}}`, "/$defs/a -> /$defs/a/allOf/0 -> /$defs/a"},
		"through anyOf":  {`{"anyOf":[{"type":"string"},{"not":{"$ref":"#"}}]}`, "/ -> /anyOf/1 -> /anyOf/1/not -> /"},
		"through else":   {`{"if":{"type":"string"},"else":{"$ref":"#"}}`, "/ -> /else -> /"},
		"inside a child": {`{"properties":{"a":{"$ref":"#/properties/a"}}}`, "/properties/a -> /properties/a"},
	}
	for name, tc := range loops {
		t.Run(name, func(t *testing.T) {
			_, err := cas.CompileSchema(mustJSON(t, tc.schema))
			if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "the subschemas "+tc.where+" apply to the same value in a loop") {
				t.Errorf("CompileSchema(%s) = %v, want a loop %s", tc.schema, err, tc.where)
			}
		})
	}
	recursive := []string{
		treeSchema,
		`{"properties":{"next":{"$ref":"#"}}}`,
		`{"items":{"$ref":"#"},"unevaluatedProperties":{"$ref":"#"}}`,
		`{"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}],"$defs":{"a":{"type":"object"}}}`, // a diamond, no cycle
	}
	for _, s := range recursive {
		if _, err := cas.CompileSchema(mustJSON(t, s)); err != nil {
			t.Errorf("CompileSchema(%s) = %v, want it compiled", s, err)
		}
	}
}
