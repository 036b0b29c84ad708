package registry

import (
	"slices"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/roleschema"
)

// How a role schema pins its status is package roleschema's to say
// (docs/WORKFLOWS.md, "Statuses"): validation, the agents and extract read
// it the same way. This file adds what validation needs on top: the
// statuses sorted for messages, and prompt fields looked up in the
// variants that hold an edge's status.

// statusInfo is what a role schema says about its status.
type statusInfo struct {
	roleschema.Reading
	root     any                  // the schema as plain JSON values
	kw       string               // "oneOf" or "anyOf" when the schema is a union of variants
	variants []roleschema.Variant // its variants
}

// analyse reads how schema pins the status. A schema built in Go with
// typed values ([]string, map[string]string, ...) is read as its plain
// JSON values.
func analyse(schema any) statusInfo {
	if v, err := cas.ToValue(schema); err == nil {
		schema = v
	}
	si := statusInfo{Reading: roleschema.Read(schema), root: schema}
	si.kw, si.variants = roleschema.Variants(schema)
	return si
}

// statuses returns the statuses, sorted; nil when unpinned.
func (si statusInfo) statuses() []string {
	if !si.Pinned {
		return nil
	}
	out := slices.Clone(si.Statuses)
	slices.Sort(out)
	return out
}

// scopes returns the schemas a prompt field of an edge for status must be
// in: every variant that may output status when the schema is a union of
// pinned variants, else the whole schema. Each scope is a schema with the
// branches of its unions (a field in any branch counts).
func (si statusInfo) scopes(status string) [][]map[string]any {
	if si.Pinned && si.kw != "" {
		var out [][]map[string]any
		for _, v := range si.variants {
			if slices.Contains(v.Statuses, status) {
				out = append(out, roleschema.Alternatives(si.root, v.Schema))
			}
		}
		return out
	}
	return [][]map[string]any{roleschema.Alternatives(si.root, si.root)}
}

// findField follows a template path through properties (and items, for a
// numeric segment) of the schemas ps. It returns -1 if the path exists,
// else the index of the first segment that does not.
func findField(root any, ps []map[string]any, segs []string) int {
	cur := ps
	for i, seg := range segs {
		var next []any
		idx, isIndex := moderator.Index(seg)
		for _, p := range cur {
			if props, ok := p["properties"].(map[string]any); ok {
				if s, ok := props[seg]; ok {
					next = append(next, s)
				}
			}
			if isIndex {
				if pi, ok := p["prefixItems"].([]any); ok && idx < len(pi) {
					next = append(next, pi[idx])
				}
				if it, ok := p["items"]; ok {
					next = append(next, it)
				}
			}
		}
		if len(next) == 0 {
			return i
		}
		cur = roleschema.Alternatives(root, next...)
	}
	return -1
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
