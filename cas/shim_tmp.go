package cas

// Temporary stand-ins until the jcs branch lands. DELETE on merge.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"gopkg.in/yaml.v3"
)

type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}
func (e *SyntaxError) Unwrap() error { return ErrInvalid }

func ParseJSON(data []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&v); err != nil {
		return nil, &SyntaxError{Msg: err.Error()}
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, &SyntaxError{Msg: "trailing data"}
	}
	return v, nil
}

func Canonical(v any) ([]byte, error) { return AppendCanonical(nil, v) }

func AppendCanonical(dst []byte, v any) ([]byte, error) {
	v, err := ToValue(v)
	if err != nil {
		return nil, err
	}
	return appendShim(dst, v)
}

func appendShim(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			kb, _ := json.Marshal(k)
			dst = append(dst, kb...)
			dst = append(dst, ':')
			var err error
			if dst, err = appendShim(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendShim(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimSpace(b.Bytes())...), nil
}

func ToValue(v any) (any, error) {
	switch v.(type) {
	case nil, bool, float64, string:
		return v, nil
	case map[string]any:
		m := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, e := range m {
			c, err := ToValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		s := v.([]any)
		out := make([]any, len(s))
		for i, e := range s {
			c, err := ToValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case Hash:
		return v.(Hash).String(), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ParseJSON(b)
}

func ParseYAML(data []byte) (any, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, &SyntaxError{Msg: err.Error()}
	}
	return YAMLValue(&n)
}

func YAMLValue(n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return ToValue(v)
}

const MaxDepth = 1000
