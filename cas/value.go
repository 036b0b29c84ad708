package cas

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/uncaged/uwf/internal/jsonpointer"
)

// ToValue converts v to plain JSON values (the types [ParseJSON] returns:
// nil, bool, float64, string, []any, map[string]any) with the conversions
// of [Canonical]: [Hash] to its text form, integers to float64, structs
// through encoding/json, nil slices, maps and pointers to nil, and so on,
// so that Canonical(ToValue(v)) equals Canonical(v).
//
// A value that is already plain is returned as is, without copying; it is
// checked with one walk that does not allocate. Otherwise only the
// containers on the way to a converted value are copied; plain sub-trees
// are shared with v.
//
// The errors are those of Canonical, and wrap [ErrInvalid]: numbers must
// be finite, strings and keys valid UTF-8, nesting at most [MaxDepth],
// and every value one Canonical supports.
func ToValue(v any) (any, error) {
	out, _, err := toValue(v, 0)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// toValue returns v converted and whether it differs from v.
func toValue(v any, depth int) (any, bool, error) {
	switch x := v.(type) {
	case nil, bool:
		return v, false, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, false, invalidString(x)
		}
		return v, false, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			_, err := appendNumber(nil, x)
			return nil, false, err
		}
		return v, false, nil
	case []any:
		if x == nil {
			return nil, true, nil
		}
		if depth >= MaxDepth {
			return nil, false, errTooDeep()
		}
		var out []any
		for i, e := range x {
			c, changed, err := toValue(e, depth+1)
			if err != nil {
				return nil, false, atIndex(err, i)
			}
			if changed && out == nil {
				out = make([]any, len(x))
				copy(out, x[:i])
			}
			if out != nil {
				out[i] = c
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case map[string]any:
		if x == nil {
			return nil, true, nil
		}
		if depth >= MaxDepth {
			return nil, false, errTooDeep()
		}
		var out map[string]any
		for k, e := range x {
			if !utf8.ValidString(k) {
				return nil, false, atKey(invalidString(k), k)
			}
			c, changed, err := toValue(e, depth+1)
			if err != nil {
				return nil, false, atKey(err, k)
			}
			if changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = c
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case float32:
		f, err := float32Value(x)
		if err != nil {
			return nil, false, err
		}
		return f, true, nil
	}
	pv, err := convertOther(v)
	if err != nil {
		return nil, false, err
	}
	// pv is plain but not yet checked (strings of a []string, for one).
	out, _, err := toValue(pv, depth)
	return out, true, err
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// convertOther converts a value that is not a plain JSON value (nor a
// float32) to plain values. The result may still hold invalid UTF-8 or be
// too deep: the caller checks it as it walks it.
func convertOther(v any) (any, error) {
	switch x := v.(type) {
	case Hash:
		return x.String(), nil
	case json.RawMessage:
		if x == nil {
			return nil, nil
		}
		pv, err := ParseJSON(x)
		if err != nil {
			return nil, &valueError{msg: "json.RawMessage: " + err.Error(), err: err}
		}
		return pv, nil
	case json.Number:
		if x == "" {
			return 0.0, nil // as encoding/json writes it
		}
		pv, err := ParseJSON([]byte(x))
		if _, ok := pv.(float64); err != nil || !ok || strings.TrimSpace(string(x)) != string(x) || x[0] == '\xef' {
			return nil, &valueError{msg: fmt.Sprintf("json.Number %q is not a JSON number", string(clip([]byte(x))))}
		}
		return pv, nil
	case []string:
		if x == nil {
			return nil, nil
		}
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, nil
	case []Hash:
		if x == nil {
			return nil, nil
		}
		out := make([]any, len(x))
		for i, h := range x {
			out[i] = h.String()
		}
		return out, nil
	case map[string]string:
		if x == nil {
			return nil, nil
		}
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uintptr:
		return float64(x), nil
	case json.Marshaler:
		if isNilPointer(v) {
			return nil, nil
		}
		b, err := x.MarshalJSON()
		if err != nil {
			return nil, &valueError{msg: fmt.Sprintf("%T.MarshalJSON: %s", v, err), err: err}
		}
		pv, err := ParseJSON(b)
		if err != nil {
			return nil, &valueError{msg: fmt.Sprintf("%T.MarshalJSON: %s", v, err), err: err}
		}
		return pv, nil
	case encoding.TextMarshaler:
		if isNilPointer(v) {
			return nil, nil
		}
		b, err := x.MarshalText()
		if err != nil {
			return nil, &valueError{msg: fmt.Sprintf("%T.MarshalText: %s", v, err), err: err}
		}
		return string(b), nil
	}
	// Named basic types (type Status string) need no encoding/json.
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), nil
	case reflect.Float64:
		return rv.Float(), nil
	case reflect.Float32:
		return float32Value(float32(rv.Float()))
	}
	if err := checkType(reflect.TypeOf(v)); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &valueError{msg: "encoding/json: " + strings.TrimPrefix(err.Error(), "json: "), err: err}
	}
	// encoding/json writes invalid UTF-8 as the escape \ufffd, and a real
	// U+FFFD raw: the escape means it repaired a string.
	if bytes.Contains(b, []byte(`\ufffd`)) {
		return nil, &valueError{msg: fmt.Sprintf("%T holds a string that is not valid UTF-8", v)}
	}
	pv, err := ParseJSON(b)
	if err != nil {
		return nil, &valueError{msg: fmt.Sprintf("%T: %s", v, err), err: err}
	}
	return pv, nil
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// typeChecks caches checkType's verdict per type: the problem's
// description, "" if none.
var typeChecks sync.Map // reflect.Type -> string

// checkType reports the first part of t that Canonical refuses although
// encoding/json might encode it: funcs, chans, complex numbers, unsafe
// pointers, and maps whose keys are neither strings nor TextMarshalers.
// Fields json ignores (unexported, `json:"-"`) and types that marshal
// themselves are not inspected; interface values are left to
// encoding/json.
func checkType(t reflect.Type) error {
	r, ok := typeChecks.Load(t)
	if !ok {
		r, _ = typeChecks.LoadOrStore(t, walkType(t, map[reflect.Type]bool{}))
	}
	if msg := r.(string); msg != "" {
		return &valueError{msg: msg} // a new one: callers add to its path
	}
	return nil
}

func walkType(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) {
		return ""
	}
	if pt := reflect.PointerTo(t); pt.Implements(jsonMarshalerType) || pt.Implements(textMarshalerType) {
		return ""
	}
	switch t.Kind() {
	case reflect.Func, reflect.Chan, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return "unsupported type " + t.String()
	case reflect.Map:
		k := t.Key()
		if k.Kind() != reflect.String && !k.Implements(textMarshalerType) {
			return "unsupported map key type " + k.String() + " in " + t.String() + " (keys must be strings)"
		}
		return walkType(t.Elem(), seen)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return walkType(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			ft := f.Type
			if f.Anonymous && ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !f.IsExported() && !(f.Anonymous && ft.Kind() == reflect.Struct) {
				continue
			}
			if f.Tag.Get("json") == "-" {
				continue
			}
			if msg := walkType(f.Type, seen); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// valueError reports a value that Canonical or ToValue cannot encode, and
// where it is (a JSON Pointer). It wraps ErrInvalid and, if set, err.
type valueError struct {
	path []string // segments, innermost first
	msg  string
	err  error
}

func (e *valueError) Error() string {
	if len(e.path) == 0 {
		return "invalid JSON value: " + e.msg
	}
	var b strings.Builder
	b.WriteString("invalid JSON value at ")
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(e.path[i])
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

func (e *valueError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrInvalid, e.err}
	}
	return []error{ErrInvalid}
}

// atKey records that err happened under the object key k.
func atKey(err error, k string) error {
	if ve, ok := err.(*valueError); ok {
		if !utf8.ValidString(k) {
			k = strings.ToValidUTF8(k, "\ufffd")
		}
		ve.path = append(ve.path, jsonpointer.Escape(k))
	}
	return err
}

// atIndex records that err happened at the array index i.
func atIndex(err error, i int) error {
	if ve, ok := err.(*valueError); ok {
		ve.path = append(ve.path, strconv.Itoa(i))
	}
	return err
}

func errTooDeep() error {
	return &valueError{msg: "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels"}
}

func invalidString(s string) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return &valueError{msg: fmt.Sprintf("string is not valid UTF-8 (byte 0x%02x at offset %d)", s[i], i)}
		}
		i += size
	}
	return &valueError{msg: "string is not valid UTF-8"}
}
