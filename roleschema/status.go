package roleschema

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Reading is what a role schema says about the "status" of its output.
type Reading struct {
	// Pinned reports whether the schema limits status to a finite set of
	// strings. An unpinned schema lets status be any string (or leaves it
	// out).
	Pinned bool
	// Statuses is that set, in schema order without repeats. It is empty
	// when the schema is pinned yet admits no status at all, as
	// {"const": "a", "enum": ["b"]} does: no output can validate.
	Statuses []string
	// NonString lists, without repeats, the const and enum values given
	// for status that are not strings (a status is always a string).
	NonString []any
}

// Read reads how root pins the "status" of its output. The answer is the
// schema's own: status must satisfy every constraint on it, so
//
//   - a const or an enum (after "$ref"s and "allOf"s are folded in) gives
//     its strings, and both together give the strings they share;
//   - a "oneOf" or "anyOf" gives the union of its branches (each seeing the
//     keywords beside the union), pinned only when every branch pins: at
//     the top (variants of the whole output) and inside the status property
//     ({"oneOf": [{"const": "a"}, {"const": "b"}]}) alike;
//   - but a "oneOf" needs exactly one branch to match, so a status that two
//     or more of its branches allow (an open branch allows every status)
//     drops out, unless one of them, B, is told apart from all the others
//     that allow it: each of the others requires a property that no
//     instance made for B has (one that neither B, nor the schema around
//     the union, nor any union within them requires). Inside the status
//     property nothing tells two branches apart;
//   - several of these together give the strings all of them allow;
//   - a false schema, a "type" without "string", a "not" of every value,
//     and strings cut by "not" (of the status, or of an object schema
//     holding only properties.status), "pattern", "minLength" or
//     "maxLength" drop out.
//
// Keywords it does not read (format, if/then/else, ...) can only narrow
// the set further, so a status it returns may still fail there; callers
// validate outputs with cas.
func Read(root any) Reading {
	r := newReader(root)
	s := r.object(root, 0, "")
	out := Reading{Pinned: !s.all, NonString: r.nonString}
	if !s.all {
		out.Statuses = s.vals
		if out.Statuses == nil {
			out.Statuses = []string{}
		}
	}
	return out
}

// Statuses returns the statuses root allows (see [Read]), in schema order
// without repeats; nil when root does not pin status, empty when it pins
// it to no value.
func Statuses(root any) []string { return Read(root).Statuses }

// StatusesOf is [Statuses] for m, a schema inside root (a [Variant]'s, for
// instance): its "$ref"s resolve against root.
func StatusesOf(root any, m map[string]any) []string {
	r := newReader(root)
	s := r.object(m, 0, "")
	if s.all {
		return nil
	}
	if s.vals == nil {
		return []string{}
	}
	return s.vals
}

// Variant is one branch of a schema's top-level "oneOf" or "anyOf".
type Variant struct {
	Index  int            // its index in the union, as in the schema path "/oneOf/<Index>"
	Schema map[string]any // the branch merged with the keywords beside the union
	// Statuses are the statuses an output matching the branch may carry
	// (see [Read]): for a "oneOf", without those another branch allows
	// too unless a required property tells this one apart (an output
	// matching two branches fails the oneOf). nil when it does not pin
	// status, empty when it admits none.
	Statuses []string
}

// Variants returns the keyword ("oneOf" or "anyOf") and the branches of the
// union at the top of root (after [Merge]), each merged with the keywords
// beside the union. It returns "", nil when root has no such union.
func Variants(root any) (string, []Variant) {
	m := Merge(root, root)
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, ok := m[kw].([]any)
		if !ok {
			continue
		}
		parent := without(m, kw)
		out := make([]Variant, len(branches))
		r := newReader(root)
		inner := nameSet("", r.requiredIn(parent))
		for i, b := range branches {
			vm := Merge(root, map[string]any{"allOf": []any{parent, b}})
			out[i] = Variant{Index: i, Schema: vm, Statuses: StatusesOf(root, vm)}
			if kw == "oneOf" && out[i].Statuses != nil {
				// A status another branch allows too is this variant's
				// only if an output made for it fails that branch.
				out[i].Statuses = slices.DeleteFunc(out[i].Statuses, func(v string) bool {
					var allow []int
					for j, b := range branches {
						if bs := r.object(b, 1, inner); bs.all || slices.Contains(bs.vals, v) {
							allow = append(allow, j)
						}
					}
					return !slices.Contains(allow, i) || !r.apart(m, branches, i, allow, "")
				})
			}
		}
		return kw, out
	}
	return "", nil
}

// set is a set of strings in insertion order, or every string.
type set struct {
	all  bool
	vals []string
}

var anyString = set{all: true}

func (s set) and(o set) set {
	switch {
	case s.all:
		return o
	case o.all:
		return s
	}
	var out []string
	for _, v := range s.vals {
		if slices.Contains(o.vals, v) {
			out = append(out, v)
		}
	}
	return set{vals: out}
}

func (s set) or(o set) set {
	if s.all || o.all {
		return anyString
	}
	out := slices.Clone(s.vals)
	for _, v := range o.vals {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return set{vals: out}
}

func (s set) filter(keep func(string) bool) set {
	if s.all {
		return s
	}
	var out []string
	for _, v := range s.vals {
		if keep(v) {
			out = append(out, v)
		}
	}
	return set{vals: out}
}

// reader reads statuses in one schema, noting the non-string literals. It
// reads each schema object once (see [merger]).
type reader struct {
	root      any
	m         *merger
	done      map[readKey]set
	nonString []any
}

// readKey names a schema object read as an output (obj, within ctx) or as
// a status.
type readKey struct {
	addr uintptr
	obj  bool
	ctx  string
}

func newReader(root any) *reader {
	return &reader{root: root, m: &merger{root: root}, done: map[readKey]set{}}
}

// memo returns the set read for node before, or reads it with read.
func (r *reader) memo(node any, obj bool, ctx string, read func() set) set {
	n, ok := node.(map[string]any)
	if !ok {
		return read()
	}
	k := readKey{addr(n), obj, ctx}
	if s, ok := r.done[k]; ok {
		return s
	}
	s := read()
	r.done[k] = s
	return s
}

// object returns the statuses an output schema allows in its "status".
// ctx lists (see [nameSet]) the properties that the schemas around node
// may require of an instance, so that a "oneOf" within node does not take
// one of them for a property only some of its branches require.
func (r *reader) object(node any, depth int, ctx string) set {
	if depth > maxHops {
		return anyString
	}
	return r.memo(node, true, ctx, func() set { return r.readObject(node, depth, ctx) })
}

func (r *reader) readObject(node any, depth int, ctx string) set {
	m := r.m.merge(node, 0)
	if never(m) {
		return set{}
	}
	s := anyString
	if props, ok := m["properties"].(map[string]any); ok {
		if p, ok := props["status"]; ok {
			s = r.value(p, depth+1)
		}
	}
	if n, ok := m["not"]; ok {
		// {"not": {"properties": {"status": X}}} forbids the statuses X
		// allows (and its absence); with any other keyword it says less.
		nm := r.m.merge(n, 0)
		if props, ok := nm["properties"].(map[string]any); ok && len(nm) == 1 && len(props) == 1 && props["status"] != nil {
			if excluded := r.value(props["status"], depth+1); !excluded.all {
				s = s.filter(func(v string) bool { return !slices.Contains(excluded.vals, v) })
			}
		}
	}
	_, hasOne := m["oneOf"]
	_, hasAny := m["anyOf"]
	_, hasRest := m["allOf"]
	if !hasOne && !hasAny && !hasRest {
		return s
	}
	s = s.and(r.objectUnions(m, depth, ctx))
	if branches, ok := m["oneOf"].([]any); ok && !s.all {
		inner := nameSet(ctx, r.requiredIn(without(m, "oneOf")))
		s = s.filter(func(v string) bool { return r.onlyOneObject(m, branches, v, depth, ctx, inner) })
	}
	return s
}

// objectUnions is [reader.unions] for the output schema m read within ctx:
// the branches of each union, and each member kept under "allOf", are read
// within ctx and what the rest of m (and any union in it) may require.
func (r *reader) objectUnions(m map[string]any, depth int, ctx string) set {
	s := anyString
	for _, kw := range []string{"oneOf", "anyOf"} {
		if branches, ok := m[kw].([]any); ok {
			inner := nameSet(ctx, r.requiredIn(without(m, kw)))
			u := set{}
			for _, b := range branches {
				u = u.or(r.object(b, depth+1, inner))
			}
			s = s.and(u)
		}
	}
	rest := asSlice(m["allOf"])
	for k, member := range rest {
		others := without(m, "allOf")
		if len(rest) > 1 {
			others["allOf"] = slices.Delete(slices.Clone(rest), k, k+1)
		}
		s = s.and(r.object(member, depth+1, nameSet(ctx, r.requiredIn(others))))
	}
	return s
}

// onlyOneObject reports whether an output with status v can match exactly
// one of branches, the "oneOf" of the merged schema m (read within ctx;
// inner is what its branches were read within): whether at most one branch
// allows v, or one of those that do, B, has an instance (the status and
// only the properties required around and within B) that every other
// such branch rejects by requiring a property the instance lacks.
func (r *reader) onlyOneObject(m map[string]any, branches []any, v string, depth int, ctx, inner string) bool {
	var allow []int
	for i, b := range branches {
		if bs := r.object(b, depth+1, inner); bs.all || slices.Contains(bs.vals, v) {
			allow = append(allow, i)
		}
	}
	if len(allow) <= 1 {
		return true
	}
	return slices.ContainsFunc(allow, func(i int) bool { return r.apart(m, branches, i, allow, ctx) })
}

// apart reports whether an instance made for branch i of the "oneOf" of m
// (the status and only the properties required around and within the
// branch, or by ctx) is rejected by every other branch in allow, each
// requiring a property it lacks.
func (r *reader) apart(m map[string]any, branches []any, i int, allow []int, ctx string) bool {
	has := append(r.requiredIn(without(m, "oneOf"), branches[i]), "status")
	has = append(has, splitNames(ctx)...)
	for _, j := range allow {
		if j == i {
			continue
		}
		req := Merge(r.root, branches[j])["required"]
		if !slices.ContainsFunc(asSlice(req), func(n any) bool { s, ok := n.(string); return ok && !slices.Contains(has, s) }) {
			return false
		}
	}
	return true
}

// requiredIn lists the property names that nodes, or any branch of a
// union within them, require (see [Alternatives]).
func (r *reader) requiredIn(nodes ...any) []string {
	var out []string
	for _, a := range Alternatives(r.root, nodes...) {
		for _, n := range asSlice(a["required"]) {
			if s, ok := n.(string); ok && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// nameSet joins the property names of ctx (a set made by nameSet) and
// names into one set, as a sorted string usable as a key.
func nameSet(ctx string, names []string) string {
	all := append(splitNames(ctx), names...)
	slices.Sort(all)
	return strings.Join(slices.Compact(all), "\x00")
}

// splitNames returns the property names of a set made by [nameSet].
func splitNames(ctx string) []string {
	if ctx == "" {
		return nil
	}
	return strings.Split(ctx, "\x00")
}

// unions intersects what each union in m ("oneOf", "anyOf", and those
// Merge kept under "allOf") allows, by each's branches read with read. It
// does not drop what two branches of a "oneOf" both allow: its callers do.
func (r *reader) unions(m map[string]any, depth int, read func(any, int) set) set {
	s := anyString
	for _, kw := range []string{"oneOf", "anyOf"} {
		if branches, ok := m[kw].([]any); ok {
			u := set{}
			for _, b := range branches {
				u = u.or(read(b, depth+1))
			}
			s = s.and(u)
		}
	}
	for _, rest := range asSlice(m["allOf"]) {
		s = s.and(read(rest, depth+1))
	}
	return s
}

// value returns the strings a value schema allows, anyString when it does
// not pin them.
func (r *reader) value(node any, depth int) set {
	if depth > maxHops {
		return anyString
	}
	return r.memo(node, false, "", func() set { return r.readValue(node, depth) })
}

func (r *reader) readValue(node any, depth int) set {
	m := r.m.merge(node, 0)
	if never(m) {
		return set{}
	}
	s := anyString
	if c, ok := m["const"]; ok {
		s = r.literals([]any{c})
	}
	if e, ok := m["enum"].([]any); ok {
		s = s.and(r.literals(e))
	}
	if types := Types(m); types != nil && !slices.Contains(types, "string") {
		return set{}
	}
	if n, ok := m["not"]; ok {
		if excluded := r.value(n, depth+1); !excluded.all {
			s = s.filter(func(v string) bool { return !slices.Contains(excluded.vals, v) })
		}
	}
	if lo, ok := m["minLength"].(float64); ok {
		s = s.filter(func(v string) bool { return float64(utf8.RuneCountInString(v)) >= lo })
	}
	if hi, ok := m["maxLength"].(float64); ok {
		s = s.filter(func(v string) bool { return float64(utf8.RuneCountInString(v)) <= hi })
	}
	if p, ok := m["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil {
			s = s.filter(re.MatchString)
		}
	}
	s = s.and(r.unions(m, depth, r.value))
	if branches, ok := m["oneOf"].([]any); ok && !s.all {
		// A string matches a branch exactly when the branch allows it (an
		// open branch allows every string): it must be allowed by one.
		s = s.filter(func(v string) bool {
			n := 0
			for _, b := range branches {
				if bs := r.value(b, depth+1); bs.all || slices.Contains(bs.vals, v) {
					n++
				}
			}
			return n <= 1
		})
	}
	return s
}

// literals returns the strings among a const's or an enum's values,
// noting the others.
func (r *reader) literals(vals []any) set {
	out := set{vals: []string{}}
	for _, v := range vals {
		if s, ok := v.(string); ok {
			if !slices.Contains(out.vals, s) {
				out.vals = append(out.vals, s)
			}
		} else if !slices.ContainsFunc(r.nonString, func(o any) bool { return reflect.DeepEqual(o, v) }) {
			r.nonString = append(r.nonString, v)
		}
	}
	return out
}

// never reports whether a merged schema admits no value: false, or a
// "not" of every value.
func never(m map[string]any) bool {
	n, ok := m["not"]
	if !ok {
		return false
	}
	switch n := n.(type) {
	case bool:
		return n
	case map[string]any:
		return len(n) == 0
	}
	return false
}

// without returns a copy of m without key k.
func without(m map[string]any, k string) map[string]any {
	out := make(map[string]any, len(m))
	for key, v := range m {
		if key != k {
			out[key] = v
		}
	}
	return out
}
