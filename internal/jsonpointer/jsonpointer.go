// Package jsonpointer reads and writes JSON pointers (RFC 6901) over plain
// JSON values (nil, bool, float64, string, []any, map[string]any): the one
// place their "~0"/"~1" escaping is spelled. Every function is pure.
package jsonpointer

import (
	"strconv"
	"strings"
)

// Lookup returns the value at ptr ("" or "#" for the root, "/a/0",
// "#/$defs/x") inside root, and whether it exists.
func Lookup(root any, ptr string) (any, bool) {
	ptr = strings.TrimPrefix(ptr, "#")
	if ptr == "" {
		return root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	v := root
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = Unescape(seg)
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Escape escapes one segment: "~" becomes "~0" and "/" becomes "~1".
func Escape(seg string) string {
	if !strings.ContainsAny(seg, "~/") {
		return seg
	}
	return strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1")
}

// Unescape undoes [Escape] for one segment.
func Unescape(seg string) string {
	if !strings.Contains(seg, "~") {
		return seg
	}
	return strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
}
