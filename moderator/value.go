package moderator

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// maxDepth bounds how deep values are rendered (and pointers followed); what
// lies deeper is rendered as "...". Decoded JSON never gets near it; it stops
// a cyclic Go value from overflowing the stack.
const maxDepth = 100

// Text renders a value as a template field renders it (see the package
// doc): scalars as text, arrays and objects as indented lines. Unlike a
// template field, a block does not start with a line break. Text is what
// thread uses to show a step's output to people and agents.
func Text(v any) string { return strings.TrimPrefix(text(v), "\n") }

// text renders a value found by a template field (see the package doc).
func text(v any) string {
	v = plain(v, 0)
	switch c := v.(type) {
	case []any:
		if len(c) == 0 {
			return "[]"
		}
	case map[string]any:
		if len(c) == 0 {
			return "{}"
		}
	default:
		return scalarText(c)
	}
	var b strings.Builder
	writeBlock(&b, v, "", 0)
	return b.String()
}

// writeBlock writes a non-empty array or object as lines, each starting with
// "\n" and indent: "- item" for array items, "key: value" for object entries
// (sorted by key), nested containers indented by two more spaces.
func writeBlock(b *strings.Builder, v any, indent string, depth int) {
	inner := indent + "  "
	switch c := v.(type) {
	case []any:
		for _, item := range c {
			item = plain(item, depth+1)
			if !isBlock(item, depth+1) {
				writeScalar(b, indent+"- ", inner, item, depth+1)
				continue
			}
			// Write the nested block one level in, then put the "- " on its
			// first line: "- key: v\n  key2: v2", "- - a\n  - b".
			var nested strings.Builder
			writeBlock(&nested, item, inner, depth+1)
			s := nested.String()
			b.WriteString("\n" + indent + "- ")
			b.WriteString(s[1+len(inner):])
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			item := plain(c[k], depth+1)
			if !isBlock(item, depth+1) {
				writeScalar(b, indent+k+": ", inner, item, depth+1)
				continue
			}
			b.WriteString("\n" + indent + k + ":")
			writeBlock(b, item, inner, depth+1)
		}
	}
}

// isBlock reports whether v is rendered as indented lines: a non-empty array
// or object not past maxDepth.
func isBlock(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := v.(type) {
	case []any:
		return len(c) > 0
	case map[string]any:
		return len(c) > 0
	}
	return false
}

// writeScalar writes "\n" + first + the scalar's first line, then any further
// lines of a multi-line string each as "\n" + cont + line. Trailing spaces of
// a line are not written when its text is empty.
func writeScalar(b *strings.Builder, first, cont string, v any, depth int) {
	var s string
	switch c := v.(type) {
	case []any:
		s = "[]"
	case map[string]any:
		s = "{}"
	default:
		s = scalarText(c)
	}
	if depth > maxDepth {
		s = "..."
	}
	for i, line := range strings.Split(s, "\n") {
		prefix := cont
		if i == 0 {
			prefix = first
		}
		if line == "" {
			prefix = strings.TrimRight(prefix, " ")
		}
		b.WriteString("\n" + prefix + line)
	}
}

// scalarText renders a scalar: strings as-is, numbers as JSON writes them,
// true/false, null. Anything else (not a plain JSON value) uses fmt's %v.
func scalarText(v any) string {
	switch c := v.(type) {
	case nil:
		return "null"
	case string:
		return c
	case bool:
		return strconv.FormatBool(c)
	case float64:
		return formatFloat(c, 64)
	case float32:
		return formatFloat(float64(c), 32)
	case int64:
		return strconv.FormatInt(c, 10)
	case uint64:
		return strconv.FormatUint(c, 10)
	}
	return fmt.Sprint(v)
}

// formatFloat writes f as encoding/json (and JavaScript) do: the shortest
// representation, in exponent form only below 1e-6 or from 1e21 on.
func formatFloat(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	s := strconv.FormatFloat(f, format, -1, bits)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	return s
}

// typeName names a value's JSON type for messages: "a string", "a bool",
// "a number", "an array", "an object", "null".
func typeName(v any) string {
	switch plain(v, 0).(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case float64, float32, int64, uint64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// plain returns v itself if it is a plain JSON value, and otherwise its
// nearest plain form read through reflection: pointers followed, named
// strings and bools unwrapped, integers as int64 or uint64, floats as
// float64 (float32 kept for its shortest form), slices and arrays as []any,
// maps with string keys as map[string]any. The conversion is shallow.
// Other values are returned unchanged and rendered with %v.
func plain(v any, depth int) any {
	switch v.(type) {
	case nil, string, bool, float64, []any, map[string]any:
		return v
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		if depth++; depth > maxDepth {
			return v
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32:
		return float32(rv.Float())
	case reflect.Float64:
		return rv.Float()
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return []any(nil)
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = valueOf(rv.Index(i))
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[it.Key().String()] = valueOf(it.Value())
		}
		return out
	}
	if rv.CanInterface() {
		return rv.Interface()
	}
	return v
}

// valueOf returns the interface value of an element, or nil if reflection
// may not expose it.
func valueOf(rv reflect.Value) any {
	if !rv.CanInterface() {
		return nil
	}
	return rv.Interface()
}
