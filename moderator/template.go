package moderator

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Render fills template's {{ field }} references from output and returns the
// text. A field is a dot-separated path: {{ summary }}, {{ review.comments }},
// {{ steps.0 }} (a decimal segment indexes an array, or names an object key
// made of digits). Whitespace inside the braces is optional. Text outside
// {{ }}, lone "{" and "}" included, is copied unchanged, except that spaces
// and tabs just before a field rendered as a block are dropped. Values are rendered
// as the package documentation describes: strings as-is, numbers as JSON
// writes them, arrays as bullet lists, objects as indented "key: value"
// lines.
//
// output is a plain JSON value (nil, bool, float64, string, []any,
// map[string]any); other Go values are read through reflection.
//
// The error is an [*Error] (Role and Status empty) that wraps
// [ErrBadTemplate] if template has an unclosed "{{", an empty field or a
// malformed path, and [ErrMissingField], naming the first missing field, if
// output lacks a field the template names. Render is safe for concurrent use.
func Render(template string, output any) (string, error) {
	parts, err := parse(template)
	if err != nil {
		return "", err
	}
	if len(parts) == 1 && parts[0].segs == nil {
		return template, nil
	}
	var b []byte
	for _, p := range parts {
		if p.segs == nil {
			b = append(b, p.text...)
			continue
		}
		v, detail, ok := lookup(output, p.segs)
		if !ok {
			return "", &Error{Kind: KindMissingField, Field: p.text, Offset: p.off, Detail: detail}
		}
		s := text(v)
		if strings.HasPrefix(s, "\n") {
			// A block starts on a new line: drop the blanks before it.
			b = bytes.TrimRight(b, " \t")
		}
		b = append(b, s...)
	}
	return string(b), nil
}

// Fields returns the field paths template names, in order of first use and
// without duplicates, each as written but without surrounding whitespace
// ("steps.0"); nil if it names none. Path segments never contain ".", so
// strings.Split(path, ".") gives them. The error is an [*Error] wrapping
// [ErrBadTemplate] if the template is malformed; [Render] accepts exactly
// the templates Fields accepts.
func Fields(template string) ([]string, error) {
	parts, err := parse(template)
	if err != nil {
		return nil, err
	}
	var fields []string
	seen := make(map[string]bool)
	for _, p := range parts {
		if p.segs != nil && !seen[p.text] {
			seen[p.text] = true
			fields = append(fields, p.text)
		}
	}
	return fields, nil
}

// part is a piece of a parsed template: literal text (segs nil) or a field
// reference (text is its trimmed path, segs its segments).
type part struct {
	text string
	segs []string
	off  int // byte offset of the field's "{{"
}

// parse splits a template into literal text and field references.
func parse(tpl string) ([]part, error) {
	var parts []part
	for i := 0; ; {
		j := strings.Index(tpl[i:], "{{")
		if j < 0 {
			return append(parts, part{text: tpl[i:], off: i}), nil
		}
		j += i
		if j > i {
			parts = append(parts, part{text: tpl[i:j], off: i})
		}
		k := strings.Index(tpl[j+2:], "}}")
		if k < 0 {
			return nil, &Error{Kind: KindBadTemplate, Offset: j, Detail: `unclosed "{{"`}
		}
		field := strings.TrimSpace(tpl[j+2 : j+2+k])
		if field == "" {
			return nil, &Error{Kind: KindBadTemplate, Offset: j, Detail: `empty field in "{{ }}"`}
		}
		segs := strings.Split(field, ".")
		for _, s := range segs {
			if reason := badSegment(s); reason != "" {
				return nil, &Error{Kind: KindBadTemplate, Field: field, Offset: j,
					Detail: fmt.Sprintf("bad field path %q: %s", field, reason)}
			}
		}
		parts = append(parts, part{text: field, segs: segs, off: j})
		i = j + 2 + k + 2
	}
}

// badSegment says what is wrong with one path segment, or "" if nothing:
// a segment is a non-empty run of letters, digits, '_' and '-'.
func badSegment(s string) string {
	if s == "" {
		return "empty segment"
	}
	for _, r := range s {
		if r == utf8.RuneError {
			return "invalid UTF-8"
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return "unexpected " + strconv.QuoteRune(r) + " (a path is names and indexes joined by '.')"
		}
	}
	return ""
}

// lookup follows segs from v. If a field is missing it returns false and a
// detail saying where the path broke off ("" when the first field is simply
// absent from an object).
func lookup(v any, segs []string) (any, string, bool) {
	for i, seg := range segs {
		at := "output"
		if i > 0 {
			at = strconv.Quote(strings.Join(segs[:i], "."))
		}
		switch c := plain(v, 0).(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				if i == 0 {
					return nil, "", false
				}
				return nil, fmt.Sprintf("%s has no field %q", at, seg), false
			}
			v = next
		case []any:
			n, ok := Index(seg)
			if !ok {
				return nil, fmt.Sprintf("%s is an array and %q is not an index", at, seg), false
			}
			if n >= len(c) {
				return nil, fmt.Sprintf("%s has %d items", at, len(c)), false
			}
			v = c[n]
		default:
			return nil, fmt.Sprintf("%s is %s", at, typeName(c)), false
		}
	}
	return v, "", true
}

// Index parses a template path segment as an array index, as [Render]
// reads it: canonical decimal digits, no sign, no leading zero except "0"
// itself, within int. Package registry checks templates against role
// schemas with it, so validation and rendering agree on what an index is.
func Index(s string) (int, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return n, true
}
