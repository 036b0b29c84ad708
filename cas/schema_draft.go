package cas

import (
	"net/url"
	"reflect"
	"strings"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The validator (jsonschema v5.3.1, pinned) departs from draft 2020-12 in
// two ways, which fixDraft corrects on the compiled schema, so that a
// schema node validates as the standard says:
//
//   - "enum": [] is skipped (it checks enum only when the list is
//     non-empty), so it accepts every value; the draft says no value is
//     equal to one of none, so it rejects every value. fixDraft makes such
//     a schema reject everything, and [Schema.Validate] says why.
//   - a schema resource's dynamic anchors, which "$dynamicRef" looks up in
//     each resource of the dynamic scope, include those of the resources
//     nested in it (everything under its location), so a "$dynamicRef"
//     finds an anchor of an intermediate resource the evaluation never
//     entered. fixDraft keeps, for each resource, only the anchors of that
//     resource itself: not those below a nested "$id".
//
// The second fix writes an unexported field of the validator's Schema
// through reflection; the module is pinned in go.sum, and the draft's own
// tests (testdata/jsonschema) fail if a new version changes the field.

// compiledSchemas returns every schema reachable from root, each once.
func compiledSchemas(root *jsonschema.Schema) []*jsonschema.Schema {
	schemaType := reflect.TypeFor[*jsonschema.Schema]()
	seen := map[*jsonschema.Schema]bool{}
	var out []*jsonschema.Schema
	var visit func(v reflect.Value)
	visit = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || v.Type() != schemaType {
				return
			}
			s := v.Interface().(*jsonschema.Schema)
			if seen[s] {
				return
			}
			seen[s] = true
			out = append(out, s)
			e := v.Elem()
			for i := range e.NumField() {
				if e.Type().Field(i).IsExported() {
					visit(e.Field(i))
				}
			}
		case reflect.Interface:
			if !v.IsNil() {
				visit(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				visit(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				visit(it.Value())
			}
		}
	}
	visit(reflect.ValueOf(root))
	return out
}

// fixDraft corrects the compiled schema root of document doc as the
// comment above says and returns the locations (JSON pointers into doc) of
// the schemas with an empty enum.
func fixDraft(root *jsonschema.Schema, doc any) map[string]bool {
	all := compiledSchemas(root)
	empty := map[string]bool{}
	never := false
	for _, s := range all {
		ptr := schemaLocation(s)
		m, _ := lookupSchema(doc, ptr).(map[string]any)
		if e, ok := m["enum"].([]any); ok && len(e) == 0 {
			s.Always = &never
			empty[ptr] = true
		}
	}
	for _, s := range all {
		fixDynamicAnchors(s, doc)
	}
	return empty
}

// fixDynamicAnchors drops from s's dynamic anchors those that lie inside a
// resource nested in s.
func fixDynamicAnchors(s *jsonschema.Schema, doc any) {
	f := reflect.ValueOf(s).Elem().FieldByName("dynamicAnchors")
	if !f.IsValid() || f.Type() != reflect.TypeFor[[]*jsonschema.Schema]() || f.Len() == 0 {
		return
	}
	field := (*[]*jsonschema.Schema)(unsafe.Pointer(f.UnsafeAddr()))
	at := schemaLocation(s)
	kept := make([]*jsonschema.Schema, 0, len(*field))
	for _, da := range *field {
		if ownAnchor(doc, at, schemaLocation(da)) {
			kept = append(kept, da)
		}
	}
	*field = kept
}

// ownAnchor reports whether the schema at pointer q belongs to the
// resource at pointer p itself: no schema strictly below p, down to q
// included, has an "$id".
func ownAnchor(doc any, p, q string) bool {
	if p == "/" {
		p = ""
	}
	if q == "/" {
		q = ""
	}
	if q == p {
		return true
	}
	if !strings.HasPrefix(q, p+"/") {
		return true // not below: leave the validator's view alone
	}
	for x := q; len(x) > len(p); x = x[:strings.LastIndexByte(x, '/')] {
		if m, ok := lookupSchema(doc, x).(map[string]any); ok {
			if _, ok := m["$id"]; ok {
				return false
			}
		}
	}
	return true
}

// lookupSchema returns the value at a location as the validator writes
// it: a JSON pointer whose tokens are also URL path-escaped. It returns nil
// if there is none.
func lookupSchema(doc any, ptr string) any {
	if ptr == "/" || ptr == "" {
		return doc
	}
	cur := doc
	for tok := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		if u, err := url.PathUnescape(tok); err == nil {
			tok = u
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i := 0
			for _, ch := range tok {
				if ch < '0' || ch > '9' {
					return nil
				}
				i = i*10 + int(ch-'0')
				if i > len(c) {
					return nil
				}
			}
			if tok == "" || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}
