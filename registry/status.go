package registry

import (
	"slices"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// How a role schema pins its status (docs/WORKFLOWS.md, "Statuses"):
//
//   - properties.status has a const or an enum (after following a local
//     $ref, and through allOf): one variant;
//   - or the schema has a oneOf (else an anyOf) whose every branch pins
//     status that way: one variant per branch, each seeing the schema's own
//     properties and the branch's. If the schema pins status too, each
//     branch's statuses are cut down to those.
//
// Prompt fields are looked up in the variants that hold the edge's status.

// maxSchemaDepth bounds $ref and allOf chains followed while reading a
// schema.
const maxSchemaDepth = 32

// variant is one shape of a role's output: the statuses it pins and the
// schemas whose properties it has.
type variant struct {
	statuses []string
	parts    []map[string]any
}

// statusInfo is what a role schema says about its status.
type statusInfo struct {
	variants  []variant
	pinned    bool
	nonString []any            // const/enum values that are not strings
	all       []map[string]any // every part, branches included, for lenient lookups
	root      any              // the schema as plain JSON values
}

func variants(schema any) ([]variant, bool) {
	si := analyse(schema)
	return si.variants, si.pinned
}

// analyse reads how schema pins the status. A schema built in Go with
// typed values ([]string, map[string]string, ...) is read as its plain
// JSON values.
func analyse(schema any) statusInfo {
	if v, err := cas.ToValue(schema); err == nil {
		schema = v
	}
	si := statusInfo{root: schema}
	base := parts(schema, schema, 0)
	si.all = slices.Clone(base)
	top, topFound := pin(schema, base, &si)
	var branches []any
	for _, p := range base {
		if b, ok := p["oneOf"].([]any); ok {
			branches = b
			break
		}
	}
	if branches == nil {
		for _, p := range base {
			if b, ok := p["anyOf"].([]any); ok {
				branches = b
				break
			}
		}
	}
	var vs []variant
	allPinned := len(branches) > 0
	for _, b := range branches {
		bp := parts(schema, b, 0)
		si.all = append(si.all, bp...)
		st, ok := pin(schema, bp, &si)
		if !ok {
			allPinned = false
			continue
		}
		if topFound {
			st = slices.DeleteFunc(st, func(s string) bool { return !slices.Contains(top, s) })
		}
		vs = append(vs, variant{statuses: st, parts: append(slices.Clone(base), bp...)})
	}
	switch {
	case allPinned:
		si.variants, si.pinned = vs, true
	case topFound:
		si.variants, si.pinned = []variant{{statuses: top, parts: si.all}}, true
	}
	return si
}

// statuses returns the union of the variants' statuses, sorted.
func (si statusInfo) statuses() []string {
	var out []string
	for _, v := range si.variants {
		out = append(out, v.statuses...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parts returns s with the schemas it includes through a local $ref and
// allOf, recursively; nil if s is not an object schema.
func parts(root, s any, depth int) []map[string]any {
	m, ok := s.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return nil
	}
	out := []map[string]any{m}
	if ref, ok := m["$ref"].(string); ok {
		out = append(out, parts(root, deref(root, ref), depth+1)...)
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, a := range all {
			out = append(out, parts(root, a, depth+1)...)
		}
	}
	return out
}

// deref resolves a local $ref ("#", "#/$defs/x") in root; nil if it cannot.
func deref(root any, ref string) any {
	if ref == "#" {
		return root
	}
	frag, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	cur := root
	for _, seg := range strings.Split(frag, "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// pin returns the statuses that the first properties.status among ps pins
// with a const or an enum, and whether one does. Values that are not
// strings are left out and noted in si.
func pin(root any, ps []map[string]any, si *statusInfo) ([]string, bool) {
	for _, p := range ps {
		props, _ := p["properties"].(map[string]any)
		st, ok := props["status"]
		if !ok {
			continue
		}
		for _, sp := range parts(root, st, 0) {
			var vals []any
			if c, ok := sp["const"]; ok {
				vals = []any{c}
			} else if e, ok := sp["enum"].([]any); ok {
				vals = e
			} else {
				continue
			}
			var out []string
			for _, v := range vals {
				if s, ok := v.(string); ok {
					out = append(out, s)
				} else {
					si.nonString = append(si.nonString, v)
				}
			}
			slices.Sort(out)
			return slices.Compact(out), true
		}
	}
	return nil, false
}

// hasStatus reports whether v pins status.
func (v variant) hasStatus(status string) bool { return slices.Contains(v.statuses, status) }

// findField follows a template path through properties (and items, for a
// numeric segment) of the schemas ps. It returns -1 if the path exists,
// else the index of the first segment that does not.
func findField(root any, ps []map[string]any, segs []string) int {
	cur := ps
	for i, seg := range segs {
		var next []map[string]any
		idx, isIndex := index(seg)
		for _, p := range cur {
			if props, ok := p["properties"].(map[string]any); ok {
				if s, ok := props[seg]; ok {
					next = append(next, parts(root, s, 0)...)
				}
			}
			if isIndex {
				if pi, ok := p["prefixItems"].([]any); ok && idx < len(pi) {
					next = append(next, parts(root, pi[idx], 0)...)
				}
				if it, ok := p["items"]; ok {
					next = append(next, parts(root, it, 0)...)
				}
			}
		}
		if len(next) == 0 {
			return i
		}
		cur = withBranches(root, next)
	}
	return -1
}

// withBranches adds the parts of the oneOf and anyOf branches of ps: below
// the top level, a field in any branch counts.
func withBranches(root any, ps []map[string]any) []map[string]any {
	out := ps
	for _, p := range ps {
		for _, kw := range []string{"oneOf", "anyOf"} {
			if bs, ok := p[kw].([]any); ok {
				for _, b := range bs {
					out = append(out, parts(root, b, 0)...)
				}
			}
		}
	}
	return out
}

// propertyNames lists the property names of ps, sorted.
func propertyNames(ps []map[string]any) []string {
	var out []string
	for _, p := range ps {
		if props, ok := p["properties"].(map[string]any); ok {
			for k := range props {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// index parses a template segment as an array index: decimal, no leading
// zeros (as moderator reads it).
func index(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
