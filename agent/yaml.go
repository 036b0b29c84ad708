package agent

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/uncaged/uwf/cas"
)

// writeYAML writes a plain JSON value as block-style YAML, every line
// indented by indent spaces: mappings with "status" first and the other
// keys sorted, sequences with "- ", strings plain when YAML cannot misread
// them and double-quoted (with escapes for what YAML cannot hold as is)
// otherwise. cas.ParseYAML reads the
// result back as the same value.
func writeYAML(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString(pad + "{}\n")
			return
		}
		for _, k := range yamlKeys(x) {
			key := yamlString(k)
			if len(key) > maxImplicitKey {
				// YAML caps implicit keys at 1024 characters: make it explicit.
				b.WriteString(pad + "? " + key + "\n")
				key = ""
			}
			b.WriteString(pad + key + ":")
			writeYAMLValue(b, x[k], indent+2)
		}
	case []any:
		if len(x) == 0 {
			b.WriteString(pad + "[]\n")
			return
		}
		for _, e := range x {
			b.WriteString(pad + "-")
			writeYAMLItem(b, e, indent+2)
		}
	default:
		b.WriteString(pad + yamlScalar(v) + "\n")
	}
}

// maxImplicitKey is the longest key written as "key: value"; YAML allows
// implicit keys of up to 1024 characters.
const maxImplicitKey = 1000

// writeYAMLValue writes a mapping value after "key:".
func writeYAMLValue(b *strings.Builder, v any, indent int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			b.WriteString("\n")
			writeYAML(b, x, indent)
			return
		}
	case []any:
		if len(x) > 0 {
			b.WriteString("\n")
			writeYAML(b, x, indent)
			return
		}
	}
	b.WriteString(" " + yamlScalar(v) + "\n")
}

// writeYAMLItem writes a sequence item after "-": a mapping's first key on
// the dash's line, the rest indented to it.
func writeYAMLItem(b *strings.Builder, v any, indent int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			var inner strings.Builder
			writeYAML(&inner, x, indent)
			b.WriteString(" " + strings.TrimPrefix(inner.String(), strings.Repeat(" ", indent)))
			return
		}
	case []any:
		if len(x) > 0 {
			var inner strings.Builder
			writeYAML(&inner, x, indent)
			b.WriteString(" " + strings.TrimPrefix(inner.String(), strings.Repeat(" ", indent)))
			return
		}
	}
	b.WriteString(" " + yamlScalar(v) + "\n")
}

// yamlKeys orders a mapping's keys: "status" first, then sorted.
func yamlKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "status" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if _, ok := m["status"]; ok {
		keys = append([]string{"status"}, keys...)
	}
	return keys
}

// yamlScalar renders a scalar (or, in flow style, an empty or odd value).
func yamlScalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		return yamlString(x)
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
	case []any:
		if len(x) == 0 {
			return "[]"
		}
	}
	b, err := cas.Canonical(v)
	if err != nil {
		return yamlString(fmt.Sprint(v))
	}
	return string(b)
}

// yamlSpecial are the plain scalars YAML (1.1 or 1.2) may read as
// something other than a string.
var yamlSpecial = map[string]bool{
	"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true, "y": true, "n": true,
	"null": true, "~": true, ".inf": true, "-.inf": true, "+.inf": true, ".nan": true, "<<": true,
}

// yamlString renders s plain when that is safe, else double-quoted.
func yamlString(s string) string {
	if plainSafe(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case yamlPrintable(r):
			b.WriteRune(r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// yamlPrintable reports whether r may appear as itself in a YAML
// double-quoted scalar: YAML's printable set, less the characters YAML 1.1
// reads as line breaks (NEL, LS, PS) and the byte order mark.
func yamlPrintable(r rune) bool {
	switch {
	case r == 0x85, r == 0x2028, r == 0x2029, r == 0xFEFF, r == utf8.RuneError:
		return false
	case r >= 0x20 && r <= 0x7E, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// plainSafe reports whether s reads back as the same string when written
// as a plain YAML scalar, by a conservative rule: it starts with a letter,
// "$", "_", "<" or "/", holds only letters, digits, spaces and
// ".,;_-/()'<>$+=?!", does not end with a space and is no special word.
func plainSafe(s string) bool {
	if s == "" || yamlSpecial[strings.ToLower(s)] || strings.HasSuffix(s, " ") {
		return false
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r):
		case i == 0 && !strings.ContainsRune("$_</", r):
			return false
		case unicode.IsDigit(r) && r < 128, strings.ContainsRune(" .,;_-/()'<>$+=?!", r):
		default:
			return false
		}
	}
	return true
}
