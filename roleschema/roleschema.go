package roleschema

import (
	"reflect"
	"slices"
	"strings"

	"github.com/uncaged/uwf/internal/jsonpointer"
)

// maxHops bounds how many "$ref"s Resolve follows, and how deep Merge
// recurses, so a cyclic schema cannot loop.
const maxHops = 32

// Resolve follows node's local "$ref" (a JSON pointer into root, such as
// "#/$defs/x") until it reaches a schema without one, and returns that
// schema. Keywords beside a "$ref" are dropped: use [Merge] to keep them. A
// reference it cannot follow (remote, anchors, a cycle) returns the last
// schema reached.
func Resolve(root, node any) any {
	for range maxHops {
		m, ok := node.(map[string]any)
		if !ok {
			return node
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return node
		}
		target, ok := jsonpointer.Lookup(root, ref)
		if !ok {
			return node
		}
		node = target
	}
	return node
}

// Merge returns one schema object equivalent, as far as it can tell, to
// node with its "$ref" and "allOf" folded in: properties are merged (a
// property named by several members becomes an "allOf" of their schemas),
// "required" lists are joined, numeric and length bounds keep the tightest,
// "type"s and "enum"s intersect, a false "additionalProperties" wins, and
// for other keywords the first member that has one wins. A second
// "oneOf"/"anyOf" that cannot be folded is kept under "allOf". true, nil
// and {} give an empty map; false gives {"not": {}}. The result is new;
// nested schemas are shared with node, not copied.
func Merge(root, node any) map[string]any {
	return (&merger{root: root}).merge(node, 0)
}

// merger merges the schemas of one document, once each: a schema reached
// again (two "$ref"s to one definition, allOf members naming it) reuses
// its merged form, so work stays linear in the document's size however
// its references fan out.
type merger struct {
	root any
	done map[uintptr]map[string]any // by the address of a schema object of root
}

func (g *merger) merge(node any, depth int) map[string]any {
	switch n := node.(type) {
	case bool:
		if !n {
			return map[string]any{"not": map[string]any{}}
		}
		return map[string]any{}
	case map[string]any:
		if depth > maxHops {
			return n
		}
		key := addr(n)
		if m, ok := g.done[key]; ok {
			return m
		}
		out := map[string]any{}
		var rest []any
		for _, k := range sortedKeys(n) {
			switch k {
			case "$ref", "allOf":
				continue
			}
			out[k] = n[k]
		}
		if ref, ok := n["$ref"].(string); ok {
			if target, ok := jsonpointer.Lookup(g.root, ref); ok && strings.HasPrefix(ref, "#") {
				mergeInto(out, g.merge(target, depth+1), &rest)
			} else {
				out["$ref"] = ref
			}
		}
		if all, ok := n["allOf"].([]any); ok {
			for _, member := range all {
				mergeInto(out, g.merge(member, depth+1), &rest)
			}
		}
		if len(rest) > 0 {
			out["allOf"] = rest
		}
		if g.done == nil {
			g.done = map[uintptr]map[string]any{}
		}
		g.done[key] = out
		return out
	}
	return map[string]any{}
}

// addr identifies a schema object by its address (maps are never moved).
func addr(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// mergeInto folds src into dst (both already merged), appending to rest
// what it cannot fold.
func mergeInto(dst, src map[string]any, rest *[]any) {
	for _, k := range sortedKeys(src) {
		sv := src[k]
		if k == "allOf" { // what src could not fold stays unfolded
			*rest = append(*rest, asSlice(sv)...)
			continue
		}
		dv, has := dst[k]
		if !has {
			dst[k] = sv
			continue
		}
		switch k {
		case "properties":
			dp, _ := dv.(map[string]any)
			sp, _ := sv.(map[string]any)
			props := make(map[string]any, len(dp)+len(sp))
			for name, s := range dp {
				props[name] = s
			}
			for name, s := range sp {
				if d, ok := props[name]; ok {
					props[name] = map[string]any{"allOf": []any{d, s}}
				} else {
					props[name] = s
				}
			}
			dst[k] = props
		case "required":
			req, _ := dv.([]any)
			req = slices.Clone(req)
			for _, r := range asSlice(sv) {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			dst[k] = req
		case "additionalProperties", "items":
			if b, ok := sv.(bool); ok && !b {
				dst[k] = false
			} else if b, ok := dv.(bool); ok && !b {
				// false already wins
			} else if !reflect.DeepEqual(dv, sv) {
				dst[k] = map[string]any{"allOf": []any{dv, sv}}
			}
		case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
			if a, b, ok := numbers(dv, sv); ok && b > a {
				dst[k] = sv
			}
		case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
			if a, b, ok := numbers(dv, sv); ok && b < a {
				dst[k] = sv
			}
		case "type":
			dst[k] = intersectTypes(dv, sv)
		case "enum":
			var both []any
			for _, e := range asSlice(dv) {
				if slices.ContainsFunc(asSlice(sv), func(o any) bool { return reflect.DeepEqual(e, o) }) {
					both = append(both, e)
				}
			}
			if both == nil {
				both = []any{}
			}
			dst[k] = both
		case "const":
			if !reflect.DeepEqual(dv, sv) {
				dst["enum"] = []any{} // nothing is equal to two different constants
			}
		case "oneOf", "anyOf":
			if !reflect.DeepEqual(dv, sv) {
				*rest = append(*rest, map[string]any{k: sv})
			}
		case "uniqueItems":
			if b, _ := sv.(bool); b {
				dst[k] = true
			}
		}
	}
}

func numbers(a, b any) (float64, float64, bool) {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	return x, y, ok1 && ok2
}

// intersectTypes intersects two "type" values (a string or a list);
// "integer" is within "number".
func intersectTypes(a, b any) any {
	as, bs := typeList(a), typeList(b)
	var out []any
	for _, x := range as {
		for _, y := range bs {
			switch {
			case x == y:
				out = append(out, x)
			case x == "integer" && y == "number", x == "number" && y == "integer":
				out = append(out, "integer")
			}
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	if out == nil {
		return []any{}
	}
	return out
}

// Types returns a schema's "type" keyword as a list of type names, nil when
// absent.
func Types(m map[string]any) []string {
	if _, ok := m["type"]; !ok {
		return nil
	}
	var out []string
	for _, t := range typeList(m["type"]) {
		if s, ok := t.(string); ok {
			out = append(out, s)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func typeList(v any) []any {
	switch t := v.(type) {
	case string:
		return []any{t}
	case []any:
		return t
	}
	return nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// OrderedKeys returns the property names of an object schema in the order
// people read them: "status" first, then the "required" ones in their
// order, then the others sorted.
func OrderedKeys(m map[string]any) []string {
	props, _ := m["properties"].(map[string]any)
	var out []string
	add := func(k string) {
		if _, ok := props[k]; ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	add("status")
	for _, r := range asSlice(m["required"]) {
		if s, ok := r.(string); ok {
			add(s)
		}
	}
	for _, k := range sortedKeys(props) {
		add(k)
	}
	return out
}

// Required reports whether an object schema m lists name in "required".
func Required(m map[string]any, name string) bool {
	return slices.Contains(asSlice(m["required"]), any(name))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Alternatives merges nodes (schemas within root) and adds, merged, every
// branch of their "oneOf"/"anyOf" unions (and of those [Merge] kept under
// "allOf"), recursively: the shapes an instance may take, for finding a
// field that counts when any branch has it. Each schema object is taken
// once, so the result stays linear in root's size however its references
// fan out.
func Alternatives(root any, nodes ...any) []map[string]any {
	g := &merger{root: root}
	seen := map[uintptr]bool{}
	var out []map[string]any
	var add func(node any, depth int)
	add = func(node any, depth int) {
		if n, ok := node.(map[string]any); ok {
			if seen[addr(n)] {
				return
			}
			seen[addr(n)] = true
		}
		m := g.merge(node, 0)
		out = append(out, m)
		if depth >= maxHops {
			return
		}
		var branches []any
		for _, kw := range []string{"oneOf", "anyOf", "allOf"} {
			branches = append(branches, asSlice(m[kw])...)
		}
		for _, b := range branches {
			add(b, depth+1)
		}
	}
	for _, n := range nodes {
		add(n, 0)
	}
	return out
}
