package roleschema_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/roleschema"
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

func TestResolveOrder(t *testing.T) {
	t.Parallel()
	root := doc(t, `{"$defs": {"a/b": {"x": [1, {"~y": 2}]}, "r": {"$ref": "#/$defs/s"}, "s": {"type": "string"}},
		"properties": {"z": {}, "status": {}, "b": {}, "a": {}}, "required": ["b", "status"]}`)
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

func TestAlternatives(t *testing.T) {
	t.Parallel()
	root := doc(t, `{"$defs": {"b": {"properties": {"b": {}}, "anyOf": [{"properties": {"c": {}}}]}},
		"properties": {"a": {}},
		"oneOf": [{"$ref": "#/$defs/b"}, {"$ref": "#/$defs/b"}, {"properties": {"d": {}}}]}`)
	var names []string
	for _, m := range roleschema.Alternatives(root, root) {
		props, _ := m["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		names = append(names, strings.Join(keys, "+"))
	}
	// The root, each branch (the two $refs are two objects, but the
	// definition's own anyOf branch is taken once), then "d".
	want := []string{"a", "b", "c", "b", "d"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("Alternatives() properties = %q, want %q", names, want)
	}
}
