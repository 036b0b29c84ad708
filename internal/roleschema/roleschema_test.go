package roleschema_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/uncaged/uwf/internal/roleschema"
)

// doc parses a JSON schema.
func doc(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"const", `{"properties": {"status": {"const": "done"}}}`, []string{"done"}},
		{"enum", `{"properties": {"status": {"enum": ["approved", "rejected", "approved", 3]}}}`, []string{"approved", "rejected"}},
		{"oneOf variants in order", `{"oneOf": [
			{"properties": {"status": {"const": "b"}}},
			{"properties": {"status": {"enum": ["a", "c"]}}}]}`, []string{"b", "a", "c"}},
		{"anyOf of consts inside status", `{"properties": {"status": {"anyOf": [{"const": "x"}, {"const": "y"}]}}}`, []string{"x", "y"}},
		{"$ref to the status", `{"$defs": {"s": {"enum": ["p", "q"]}}, "properties": {"status": {"$ref": "#/$defs/s"}}}`, []string{"p", "q"}},
		{"$ref at the root", `{"$defs": {"root": {"properties": {"status": {"const": "r"}}}}, "$ref": "#/$defs/root"}`, []string{"r"}},
		{"allOf member pins it", `{"allOf": [{"properties": {"x": {}}}, {"properties": {"status": {"const": "m"}}}]}`, []string{"m"}},
		{"const inside an enum", `{"properties": {"status": {"enum": ["a", "b"]}}, "allOf": [{"properties": {"status": {"const": "b"}}}]}`, []string{"b"}},
		{"unpinned", `{"properties": {"status": {"type": "string"}}}`, nil},
		{"no status", `{"type": "object"}`, nil},
		{"a cycle", `{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := roleschema.Statuses(doc(t, tc.schema)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Statuses(%s) = %q, want %q", tc.schema, got, tc.want)
			}
		})
	}
	if got := roleschema.Statuses(nil); got != nil {
		t.Errorf("Statuses(nil) = %q, want nil", got)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	root := doc(t, `{
		"$defs": {"base": {"type": ["object", "null"], "properties": {"a": {"type": "string"}}, "required": ["a"], "minProperties": 1}},
		"allOf": [
			{"$ref": "#/$defs/base"},
			{"type": "object", "properties": {"a": {"maxLength": 3}, "b": {"type": "integer"}}, "required": ["b", "a"],
			 "additionalProperties": false, "minProperties": 2, "maxProperties": 5},
			{"maxProperties": 4, "enum": [1, 2], "description": "second"}
		],
		"description": "first",
		"enum": [2, 3]
	}`)
	got := roleschema.Merge(root, root)
	want := doc(t, `{
		"$defs": {"base": {"type": ["object", "null"], "properties": {"a": {"type": "string"}}, "required": ["a"], "minProperties": 1}},
		"type": "object",
		"properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 3}]}, "b": {"type": "integer"}},
		"required": ["a", "b"],
		"additionalProperties": false,
		"minProperties": 2,
		"maxProperties": 4,
		"description": "first",
		"enum": [2]
	}`)
	if !reflect.DeepEqual(any(got), want) {
		a, _ := json.Marshal(got)
		t.Errorf("Merge() = %s", a)
	}
	if got := roleschema.Merge(nil, false); !reflect.DeepEqual(got, map[string]any{"not": map[string]any{}}) {
		t.Errorf("Merge(false) = %v", got)
	}
	if got := roleschema.Merge(nil, true); len(got) != 0 {
		t.Errorf("Merge(true) = %v", got)
	}
	conflict := doc(t, `{"allOf": [{"const": "a"}, {"const": "b"}, {"type": "string"}, {"type": "integer"}]}`)
	if got := roleschema.Merge(conflict, conflict); !reflect.DeepEqual(got["enum"], []any{}) || !reflect.DeepEqual(got["type"], []any{}) {
		t.Errorf("Merge(conflicting consts and types) = %v; want an empty enum and type", got)
	}
}

func TestVariants(t *testing.T) {
	t.Parallel()
	root := doc(t, `{"type": "object", "required": ["status"], "oneOf": [
		{"properties": {"status": {"const": "a"}}},
		{"properties": {"status": {"const": "b"}, "x": {}}, "required": ["x"]}]}`)
	kw, vs := roleschema.Variants(root)
	if kw != "oneOf" || len(vs) != 2 {
		t.Fatalf("Variants() = %q, %d variants", kw, len(vs))
	}
	if vs[1].Index != 1 || !reflect.DeepEqual(vs[1].Statuses, []string{"b"}) || vs[1].Schema["type"] != "object" ||
		!reflect.DeepEqual(vs[1].Schema["required"], []any{"status", "x"}) {
		t.Errorf("variant 1 = %+v", vs[1])
	}
	if kw, vs := roleschema.Variants(doc(t, `{"type": "object"}`)); kw != "" || vs != nil {
		t.Errorf("Variants(no union) = %q, %v", kw, vs)
	}
}

func TestLookupResolveOrder(t *testing.T) {
	t.Parallel()
	root := doc(t, `{"$defs": {"a/b": {"x": [1, {"~y": 2}]}, "r": {"$ref": "#/$defs/s"}, "s": {"type": "string"}},
		"properties": {"z": {}, "status": {}, "b": {}, "a": {}}, "required": ["b", "status"]}`)
	if v, ok := roleschema.Lookup(root, "#/$defs/a~1b/x/1/~0y"); !ok || v != 2.0 {
		t.Errorf("Lookup() = %v, %v", v, ok)
	}
	for _, bad := range []string{"#/nope", "/$defs/a~1b/x/9", "/$defs/a~1b/x/-1", "nope"} {
		if _, ok := roleschema.Lookup(root, bad); ok {
			t.Errorf("Lookup(%q) found something", bad)
		}
	}
	if got := roleschema.Resolve(root, map[string]any{"$ref": "#/$defs/r"}); !reflect.DeepEqual(got, map[string]any{"type": "string"}) {
		t.Errorf("Resolve() = %v", got)
	}
	m := root.(map[string]any)
	if got, want := roleschema.OrderedKeys(m), []string{"status", "b", "a", "z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OrderedKeys() = %q, want %q", got, want)
	}
	if !roleschema.Required(m, "b") || roleschema.Required(m, "z") {
		t.Errorf("Required() wrong")
	}
	if got := roleschema.Types(map[string]any{"type": []any{"string", "null"}}); !reflect.DeepEqual(got, []string{"string", "null"}) {
		t.Errorf("Types() = %q", got)
	}
}
