package cas

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/uncaged/uwf/internal/jsonpointer"
	"github.com/uncaged/uwf/internal/jsonschema"
	"github.com/uncaged/uwf/internal/jsonschema/kind"
)

// Draft2020 is the only JSON Schema dialect uwf accepts as a "$schema".
const Draft2020 = "https://json-schema.org/draft/2020-12/schema"

// FormatRef is the JSON Schema format of a string that holds a hash: an edge
// of the Merkle graph.
const FormatRef = "cas_ref"

// schemaURL is where a compiled schema pretends to live; nothing is ever
// loaded from it.
const schemaURL = "uwf:///schema.json"

// Schema is a compiled schema node: a JSON Schema (draft 2020-12) that
// validates payloads and finds their edges. A Schema is immutable and safe
// for concurrent use.
type Schema struct {
	doc     any // the schema node's payload
	s       *jsonschema.Schema
	meta    bool // the meta-schema: payloads are schemas
	hasRefs bool // some cas_ref is reachable where edges are followed
	// holds are the subschemas through which an edge can be reached;
	// the edge walker validates a branch only if it is one.
	holds map[*jsonschema.Schema]bool
	// probes answer, for each branch of anyOf, oneOf and if that holds
	// an edge, whether a value validates against it (see probeBranches).
	probes map[*jsonschema.Schema]*jsonschema.Schema
	// dynamic: some subschema has a $dynamicRef or $recursiveRef, whose
	// target depends on the way there, so the edge walker validates
	// every branch on its own rather than infer which one a value takes.
	dynamic bool
}

// CompileSchema compiles a schema node's payload: a JSON Schema, draft
// 2020-12 only ("$schema", wherever it appears, must name it), with remote
// and file loading switched off, so a "$ref" may only point inside the
// schema. The format "cas_ref" is asserted, and a schema that puts it
// anywhere edges are not followed (under "not", "contains",
// "propertyNames", "dependentSchemas", "unevaluatedProperties",
// "unevaluatedItems", "$dynamicRef", ...) is rejected. Errors wrap
// [ErrInvalid].
func CompileSchema(payload any) (*Schema, error) {
	doc, err := ToValue(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrInvalid, err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("%w: a schema is a JSON object or a boolean, not %s", ErrInvalid, jsonKind(doc))
	}
	if err := checkDialect(doc, ""); err != nil {
		return nil, err
	}
	if err := checkRefPlacement(doc, "", true); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: FormatRef, Validate: validateRef})
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: schema: %s", ErrInvalid, schemaErrorText(err))
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %s", ErrInvalid, schemaErrorText(err))
	}
	if err := checkLoops(s); err != nil {
		return nil, err
	}
	sc := &Schema{doc: doc, s: s}
	w := refWalker{seen: map[refVisit]bool{}}
	if err := w.walk(s, true); err != nil {
		return nil, err
	}
	sc.hasRefs = w.found
	if sc.hasRefs {
		sc.holds = edgeHolders(s)
		if sc.probes, err = probeBranches(c, s, sc.holds); err != nil {
			return nil, err
		}
		for _, sub := range allSchemas(s) {
			if sub.DynamicRef != nil || sub.RecursiveRef != nil {
				sc.dynamic = true
			}
		}
	}
	return sc, nil
}

// probeBranches compiles a probe schema {"if": {"$ref": b}, "else": false}
// for the root and for each branch b of anyOf, oneOf and if that the edge
// walker may have to validate (one in holds): valid exactly when b is.
// The validator checks an "if" for its verdict only and builds no error
// paths on the way, whereas validating b itself copies the payload path
// at every subschema that fails.
func probeBranches(c *jsonschema.Compiler, root *jsonschema.Schema, holds map[*jsonschema.Schema]bool) (map[*jsonschema.Schema]*jsonschema.Schema, error) {
	// The root too: whether the payload is valid starts the walk.
	todo := []*jsonschema.Schema{root}
	for _, s := range allSchemas(root) {
		for _, b := range slices.Concat(s.AnyOf, s.OneOf) {
			if holds[b] {
				todo = append(todo, b)
			}
		}
		if s.If != nil && (holds[s.If] || holds[s.Then] || holds[s.Else]) {
			todo = append(todo, s.If)
		}
	}
	probes := map[*jsonschema.Schema]*jsonschema.Schema{}
	for _, b := range todo {
		if _, ok := probes[b]; ok {
			continue
		}
		url := "uwf:///probe/" + strconv.Itoa(len(probes)) + ".json"
		doc := map[string]any{"if": map[string]any{"$ref": b.Location}, "else": false}
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("%w: schema: %s", ErrInvalid, schemaErrorText(err))
		}
		p, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("%w: schema: %s", ErrInvalid, schemaErrorText(err))
		}
		probes[b] = p
	}
	return probes, nil
}

// metaSchema is the [Schema] of the meta-schema: a payload is valid if it
// compiles as a schema.
var metaSchema = &Schema{meta: true}

// validateRef is the format cas_ref: a string must be a canonical hash;
// other values are not strings and pass, as for every format.
func validateRef(v any) error {
	if s, ok := v.(string); ok && !IsCanonicalHash(s) {
		return errors.New("not a canonical hash (13 characters of Crockford base32)")
	}
	return nil
}

// noLoader refuses every URL: a "$ref" may only point inside the schema.
// (The draft's own meta-schemas are built into the validator and never
// loaded.)
type noLoader struct{}

func (noLoader) Load(string) (any, error) {
	return nil, errors.New("is outside the schema (remote and file loading are off)")
}

// checkDialect rejects a "$schema" other than draft 2020-12 in any schema
// of doc: it walks schema positions only, as [checkRefPlacement] does, so a
// property named "$schema" or a const holding one is not a dialect.
func checkDialect(doc any, at string) error {
	switch d := doc.(type) {
	case map[string]any:
		if v, ok := d["$schema"]; ok {
			s, _ := v.(string)
			if strings.TrimSuffix(s, "#") != Draft2020 {
				where := ""
				if at != "" {
					where = " at " + at
				}
				return fmt.Errorf("%w: schema: $schema%s is %s: only draft 2020-12 (%s) is supported", ErrInvalid, where, short(v), Draft2020)
			}
		}
		for _, k := range sortedKeys(d) {
			v, p := d[k], at+"/"+jsonpointer.Escape(k)
			switch {
			case dataKeywords[k] || k == "$schema":
			case k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions" || k == "dependentSchemas":
				m, _ := v.(map[string]any)
				for _, name := range sortedKeys(m) {
					if err := checkDialect(m[name], p+"/"+jsonpointer.Escape(name)); err != nil {
						return err
					}
				}
			default:
				if err := checkDialect(v, p); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, v := range d {
			if err := checkDialect(v, at+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Keywords whose values are data, not schemas: never searched for cas_ref.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// checkRefPlacement rejects "format": "cas_ref" in the schema document
// anywhere but under the keywords edges are followed through. It reads the
// document as written, so it also sees keywords the compiler ignores;
// [refWalker] covers what $ref and $dynamicRef lead to.
func checkRefPlacement(doc any, at string, allowed bool) error {
	switch d := doc.(type) {
	case []any:
		for i, v := range d {
			if err := checkRefPlacement(v, at+"/"+strconv.Itoa(i), allowed); err != nil {
				return err
			}
		}
	case map[string]any:
		if f, _ := d["format"].(string); f == FormatRef && !allowed {
			where := at
			if where == "" {
				where = "/"
			}
			return refPlacementError(where)
		}
		for _, k := range sortedKeys(d) {
			v, p := d[k], at+"/"+jsonpointer.Escape(k)
			if dataKeywords[k] {
				continue
			}
			switch k {
			case "properties", "patternProperties", "$defs", "definitions":
				m, ok := v.(map[string]any)
				if !ok {
					continue // the compiler reports it
				}
				for _, name := range sortedKeys(m) {
					if err := checkRefPlacement(m[name], p+"/"+jsonpointer.Escape(name), allowed); err != nil {
						return err
					}
				}
			case "additionalProperties", "items", "if", "then", "else", "prefixItems", "anyOf", "oneOf", "allOf":
				if err := checkRefPlacement(v, p, allowed); err != nil {
					return err
				}
			default:
				if err := checkRefPlacement(v, p, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func refPlacementError(where string) error {
	return fmt.Errorf("%w: schema: %q at %s is where edges are not followed (only properties, patternProperties, additionalProperties, items, prefixItems, $ref/$defs, anyOf, oneOf, allOf and if/then/else are)",
		ErrInvalid, "format: "+FormatRef, where)
}

// printer renders the validator's messages: each kind of violation
// formats itself through a message.Printer, the only way to have one
// violation's message without the whole tree's. It is made on first use.
var printer = sync.OnceValue(func() *message.Printer { return message.NewPrinter(language.English) })

// schemaErrorText turns the compiler's errors into messages about the
// schema document: locations are JSON pointers into it, and the resource
// URL, which is ours, is left out.
func schemaErrorText(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		var vs []Violation
		collectViolations(ve, nil, "", "", &vs)
		sortViolations(vs)
		if len(vs) > 0 {
			return fmt.Sprintf("not a valid JSON Schema: at %s: %s", pointerOrRoot(vs[0].Path), vs[0].Message)
		}
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		// A relative reference is resolved against schemaURL: show it
		// as written.
		return fmt.Sprintf("$ref %q %s", strings.TrimPrefix(le.URL, "uwf:///"), le.Err)
	}
	var re *jsonschema.InvalidRegexError
	if errors.As(err, &re) {
		return fmt.Sprintf("not a valid JSON Schema: at %s: invalid regular expression %q: %v", pointerOrRoot(urlFragment(re.URL)), re.Regex, re.Err)
	}
	var pe *jsonschema.JSONPointerNotFoundError
	if errors.As(err, &pe) {
		return fmt.Sprintf("$ref %s points to nothing in the schema", pointerOrRoot(urlFragment(pe.URL)))
	}
	var ae *jsonschema.AnchorNotFoundError
	if errors.As(err, &ae) {
		return fmt.Sprintf("$ref %q names no anchor in the schema", strings.TrimPrefix(ae.Reference, schemaURL))
	}
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "jsonschema: ", "")
	msg = strings.ReplaceAll(msg, schemaURL+"#", "#")
	msg = strings.ReplaceAll(msg, schemaURL, "")
	return msg
}

// urlFragment returns the JSON pointer in a location of the schema
// document, as the validator writes it (uwf:///schema.json#/a%20b).
func urlFragment(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	return frag
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// checkLoops rejects a schema in which subschemas apply to the same value
// in a cycle ({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}}}):
// validation would never end, and the draft leaves it undefined. A cycle
// that goes through a keyword applied to a part of the value (properties,
// items, ...) is a recursive schema, not a loop.
func checkLoops(root *jsonschema.Schema) error {
	const (
		onPath = 1
		done   = 2
	)
	state := map[*jsonschema.Schema]int{}
	var path []*jsonschema.Schema
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		switch state[s] {
		case done:
			return nil
		case onPath:
			i := len(path) - 1
			for path[i] != s {
				i--
			}
			locs := make([]string, 0, len(path)-i+1)
			for _, p := range path[i:] {
				locs = append(locs, schemaLocation(p))
			}
			locs = append(locs, schemaLocation(s))
			return fmt.Errorf("%w: schema: the subschemas %s apply to the same value in a loop (through $ref, $dynamicRef, allOf, anyOf, oneOf, not, if/then/else or dependentSchemas): validation would never end",
				ErrInvalid, strings.Join(locs, " -> "))
		}
		state[s] = onPath
		path = append(path, s)
		for _, c := range inPlaceChildren(s) {
			if err := visit(c); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[s] = done
		return nil
	}
	for _, s := range allSchemas(root) {
		if err := visit(s); err != nil {
			return err
		}
	}
	return nil
}

// inPlaceChildren are the subschemas applied to the same value as s.
func inPlaceChildren(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, k := range sortedKeys(s.DependentSchemas) {
		out = append(out, s.DependentSchemas[k])
	}
	for _, k := range sortedKeys(s.Dependencies) {
		if ds, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			out = append(out, ds)
		}
	}
	return slices.DeleteFunc(out, func(c *jsonschema.Schema) bool { return c == nil })
}

// allSchemas returns every schema reachable from root, each once, in a
// fixed order.
func allSchemas(root *jsonschema.Schema) []*jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{root: true}
	out := []*jsonschema.Schema{root}
	for i := 0; i < len(out); i++ {
		s := out[i]
		next := inPlaceChildren(s)
		next = append(next, s.PropertyNames, s.Items2020, s.Contains, s.UnevaluatedProperties, s.UnevaluatedItems, s.ContentSchema)
		for _, k := range sortedKeys(s.Properties) {
			next = append(next, s.Properties[k])
		}
		patterns := make([]string, 0, len(s.PatternProperties))
		byPattern := map[string]*jsonschema.Schema{}
		for re, p := range s.PatternProperties {
			patterns = append(patterns, re.String())
			byPattern[re.String()] = p
		}
		sort.Strings(patterns)
		for _, re := range patterns {
			next = append(next, byPattern[re])
		}
		if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			next = append(next, ap)
		}
		if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			next = append(next, ai)
		}
		switch it := s.Items.(type) {
		case *jsonschema.Schema:
			next = append(next, it)
		case []*jsonschema.Schema:
			next = append(next, it...)
		}
		next = append(next, s.PrefixItems...)
		for _, c := range next {
			if c != nil && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// refVisit is a (schema, allowed) pair already walked by refWalker.
type refVisit struct {
	s       *jsonschema.Schema
	allowed bool
}

// refWalker looks for "format": "cas_ref" in a compiled schema: allowed
// where edges are followed, an error anywhere else.
type refWalker struct {
	seen  map[refVisit]bool
	found bool
}

func (w *refWalker) walk(s *jsonschema.Schema, allowed bool) error {
	if s == nil || w.seen[refVisit{s, allowed}] {
		return nil
	}
	w.seen[refVisit{s, allowed}] = true
	if isRef(s) {
		if !allowed {
			return refPlacementError(schemaLocation(s))
		}
		w.found = true
	}
	follow := []*jsonschema.Schema{s.Ref, s.Items2020, s.If, s.Then, s.Else}
	follow = append(follow, s.PrefixItems...)
	follow = append(follow, s.AllOf...)
	follow = append(follow, s.AnyOf...)
	follow = append(follow, s.OneOf...)
	for _, k := range sortedKeys(s.Properties) {
		follow = append(follow, s.Properties[k])
	}
	for _, p := range s.PatternProperties {
		follow = append(follow, p)
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		follow = append(follow, ap)
	}
	for _, c := range follow {
		if err := w.walk(c, allowed); err != nil {
			return err
		}
	}
	closed := []*jsonschema.Schema{s.Not, s.PropertyNames, s.UnevaluatedProperties, s.Contains,
		s.UnevaluatedItems, s.ContentSchema, s.RecursiveRef}
	if s.DynamicRef != nil {
		closed = append(closed, s.DynamicRef.Ref)
	}
	if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		closed = append(closed, ai)
	}
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		closed = append(closed, it)
	case []*jsonschema.Schema:
		closed = append(closed, it...)
	}
	for _, k := range sortedKeys(s.DependentSchemas) {
		closed = append(closed, s.DependentSchemas[k])
	}
	for _, d := range s.Dependencies {
		if ds, ok := d.(*jsonschema.Schema); ok {
			closed = append(closed, ds)
		}
	}
	for _, c := range closed {
		if err := w.walk(c, false); err != nil {
			return err
		}
	}
	return nil
}

// isRef reports whether a schema says "format": "cas_ref".
func isRef(s *jsonschema.Schema) bool { return s.Format != nil && s.Format.Name == FormatRef }

// schemaLocation is a compiled schema's JSON pointer in the schema
// document ("/" for the document itself).
func schemaLocation(s *jsonschema.Schema) string { return pointerOrRoot(urlFragment(s.Location)) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Doc returns the schema's JSON document (the schema node's payload); nil
// for the meta-schema. The caller must not modify it.
func (s *Schema) Doc() any { return s.doc }

// HasEdges reports whether payloads of this schema can hold edges (some
// "cas_ref" is reachable where edges are followed).
func (s *Schema) HasEdges() bool { return s.hasRefs }

// Validate checks a payload (plain JSON values) against the schema. For the
// meta-schema, the payload must compile with [CompileSchema]. The error is
// a *[ValidationError] (wrapping [ErrInvalid]) listing every violation.
func (s *Schema) Validate(payload any) error {
	if s.meta {
		_, err := CompileSchema(payload)
		return err
	}
	err := s.s.Validate(payload)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out := &ValidationError{}
	collectViolations(ve, payload, "", "", &out.Violations)
	sortViolations(out.Violations)
	return out
}

// ValidationError reports a payload that its schema rejects. It wraps
// [ErrInvalid]. Schema is set by the typed layer ([Repo]) when it knows the
// schema node's hash.
type ValidationError struct {
	Schema     Hash
	Violations []Violation
}

// Violation is one way a value fails its schema.
type Violation struct {
	Path       string // JSON pointer to the offending value in the payload ("" for the payload itself)
	SchemaPath string // JSON pointer to the failing keyword in the schema
	Message    string // what is wrong, from the validator
	Value      any    // the offending value
}

func (v Violation) String() string {
	at := v.Path
	if at == "" {
		at = "/"
	}
	return fmt.Sprintf("at %s: %s (value %s; schema %s)", at, v.Message, short(v.Value), v.SchemaPath)
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("payload does not match schema")
	if !e.Schema.IsZero() {
		b.WriteString(" " + e.Schema.String())
	}
	for i, v := range e.Violations {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Unwrap returns [ErrInvalid].
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// collectViolations flattens the validator's tree into its leaves, the
// most specific reasons, without repeating one. A violation's schema path
// is its keyword location: the way evaluation took through the schema,
// "$ref"s included, as in the draft's output formats. base and kw are the
// parent's schema URL and keyword location ("" at the root).
func collectViolations(ve *jsonschema.ValidationError, payload any, base, kw string, out *[]Violation) {
	ref, isRefKind := ve.ErrorKind.(*kind.Reference)
	if base != "" {
		if rest, ok := strings.CutPrefix(ve.SchemaURL, base); ok {
			kw += urlFragment("#" + strings.TrimPrefix(rest, "#"))
		}
		if isRefKind {
			kw += pointer(ref.KeywordPath())
		}
	}
	base = ve.SchemaURL
	if isRefKind {
		base = ref.URL
	}
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collectViolations(c, payload, base, kw, out)
		}
		return
	}
	if !isRefKind {
		kw += pointer(ve.ErrorKind.KeywordPath())
	}
	path := pointer(ve.InstanceLocation)
	v := Violation{Path: path, SchemaPath: pointerOrRoot(kw), Message: ve.ErrorKind.LocalizedString(printer())}
	if e, ok := ve.ErrorKind.(*kind.Enum); ok && len(e.Want) == 0 {
		v.Message = "the enum is empty: no value is allowed"
	}
	v.Value, _ = jsonpointer.Lookup(payload, path)
	for _, o := range *out {
		if o.Path == v.Path && o.SchemaPath == v.SchemaPath && o.Message == v.Message {
			return
		}
	}
	*out = append(*out, v)
}

// sortViolations orders violations by payload path (as edges are), then
// schema path and message: the validator visits an object's members in
// map order, and one payload must always get the same message.
func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		if c := comparePointers(vs[i].Path, vs[j].Path); c != 0 {
			return c < 0
		}
		if vs[i].SchemaPath != vs[j].SchemaPath {
			return vs[i].SchemaPath < vs[j].SchemaPath
		}
		return vs[i].Message < vs[j].Message
	})
}

// pointer joins tokens into a JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + jsonpointer.Escape(t))
	}
	return b.String()
}

// short renders a value for an error message, cut to a readable length.
func short(v any) string {
	b, err := Canonical(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	const max = 80
	if len(b) > max {
		return string(b[:max-3]) + "..."
	}
	return string(b)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// Edges returns the edges in a payload that is valid against the schema:
// every string reached through properties, patternProperties,
// additionalProperties, items, prefixItems and $ref, and through the
// branches of anyOf, oneOf, allOf and if/then/else that the value validates
// against, whose schema says "format": "cas_ref". Paths are JSON pointers
// below the payload; edges come in path order (object keys sorted, array
// items by index), each hash once. An invalid payload gives no error, only
// the edges found; a string that is not a canonical hash is skipped.
func (s *Schema) Edges(payload any) []Edge {
	if s.meta || !s.hasRefs {
		return nil
	}
	var out []Edge
	w := edgeWalker{out: &out, seen: map[edgeVisit]bool{}, holds: s.holds, probes: s.probes}
	w.collect(s.s, payload, "", !s.dynamic && w.valid(s.s, payload))
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return comparePointers(out[i].Path, out[j].Path) < 0 })
	seen := make(map[Hash]bool, len(out))
	kept := out[:0]
	for _, e := range out {
		if !seen[e.Hash] {
			seen[e.Hash] = true
			kept = append(kept, e)
		}
	}
	return kept
}

// edgeVisit is a schema applied at a payload path: collecting it twice can
// only find the same edges, so the walker skips it (a $ref cycle that does
// not descend into the payload ends there).
type edgeVisit struct {
	s    *jsonschema.Schema
	path string
}

// edgeWalker collects edges. Its recursion is bounded by the payload's depth
// (at most MaxDepth, as decoded) times the schema's size, never cut short:
// an edge it missed would be an edge Put does not check and GC does not
// keep.
type edgeWalker struct {
	out    *[]Edge
	seen   map[edgeVisit]bool
	holds  map[*jsonschema.Schema]bool
	probes map[*jsonschema.Schema]*jsonschema.Schema
}

// valid reports whether v validates against the branch b, through b's
// probe (the same verdict as b.Validate, without the error paths).
func (w *edgeWalker) valid(b *jsonschema.Schema, v any) bool {
	if p, ok := w.probes[b]; ok {
		return p.Validate(v) == nil
	}
	return b.Validate(v) == nil
}

// collect finds the edges of v under s. known says that v is known to
// validate against s (it does when the payload does and every schema on
// the way here is one v's validity implies; never with dynamic refs): then an anyOf or oneOf with
// a single branch whose "type" admits v has that branch valid with no
// validation at all, which keeps the walk of a payload nested n deep
// under a recursive schema linear in n instead of validating n nested
// subtrees.
func (w *edgeWalker) collect(s *jsonschema.Schema, v any, path string, known bool) {
	if s == nil || w.seen[edgeVisit{s, path}] {
		return
	}
	w.seen[edgeVisit{s, path}] = true
	if isRef(s) {
		if str, ok := v.(string); ok {
			if h, err := ParseCanonicalHash(str); err == nil {
				*w.out = append(*w.out, Edge{Hash: h, Path: path})
			}
		}
	}
	w.collect(s.Ref, v, path, known)
	switch x := v.(type) {
	case map[string]any:
		if len(s.Properties) == 0 && len(s.PatternProperties) == 0 && s.AdditionalProperties == nil {
			break
		}
		for _, k := range sortedKeys(x) {
			child := x[k]
			cp := path + "/" + jsonpointer.Escape(k)
			matched := false
			if ps, ok := s.Properties[k]; ok {
				matched = true
				w.collect(ps, child, cp, known)
			}
			for re, ps := range s.PatternProperties {
				if matchPattern(re, k) {
					matched = true
					w.collect(ps, child, cp, known)
				}
			}
			if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !matched {
				w.collect(ap, child, cp, known)
			}
		}
	case []any:
		for i, child := range x {
			cp := path + "/" + strconv.Itoa(i)
			if i < len(s.PrefixItems) {
				w.collect(s.PrefixItems[i], child, cp, known)
			} else if s.Items2020 != nil {
				w.collect(s.Items2020, child, cp, known)
			}
		}
	}
	for _, b := range s.AllOf {
		w.collect(b, v, path, known)
	}
	// A branch that cannot hold an edge is not validated: collecting
	// it would find nothing, and validation is the walker's cost.
	for _, branches := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
		if known {
			if b := onlyAdmitting(branches, v); b != nil {
				w.collect(b, v, path, true)
				continue
			}
		}
		for _, b := range branches {
			if w.holds[b] && w.valid(b, v) {
				w.collect(b, v, path, true)
			}
		}
	}
	if s.If != nil && (w.holds[s.If] || w.holds[s.Then] || w.holds[s.Else]) {
		if w.valid(s.If, v) {
			w.collect(s.If, v, path, true)
			w.collect(s.Then, v, path, known)
		} else {
			w.collect(s.Else, v, path, known)
		}
	}
}

// onlyAdmitting returns the one branch whose "type" (or boolean schema)
// does not rule v out, nil if there are none or several. When v is known
// to validate against the anyOf or oneOf of these branches, that branch
// is the one it validates against.
func onlyAdmitting(branches []*jsonschema.Schema, v any) *jsonschema.Schema {
	var only *jsonschema.Schema
	for _, b := range branches {
		if rulesOut(b, v) {
			continue
		}
		if only != nil {
			return nil
		}
		only = b
	}
	return only
}

// rulesOut reports whether s is false or has a "type" that v is not.
// It errs only towards false: an "integer" admits every number.
func rulesOut(s *jsonschema.Schema, v any) bool {
	if s.Bool != nil {
		return !*s.Bool
	}
	if s.Types == nil || s.Types.IsEmpty() {
		return false
	}
	var kind string
	switch v.(type) {
	case nil:
		kind = "null"
	case bool:
		kind = "boolean"
	case float64:
		kind = "number"
	case string:
		kind = "string"
	case []any:
		kind = "array"
	case map[string]any:
		kind = "object"
	default:
		return false
	}
	for _, t := range s.Types.ToStrings() {
		if t == kind || (t == "integer" && kind == "number") {
			return false
		}
	}
	return true
}

func matchPattern(re jsonschema.Regexp, s string) bool { return re.MatchString(s) }

// edgeHolders returns the schemas reachable from root through which the
// edge walker can reach a "format": "cas_ref": those with the format, and
// those with a child (as the walker follows them) that is one.
func edgeHolders(root *jsonschema.Schema) map[*jsonschema.Schema]bool {
	parents := map[*jsonschema.Schema][]*jsonschema.Schema{}
	seen := map[*jsonschema.Schema]bool{}
	var queue []*jsonschema.Schema
	stack := []*jsonschema.Schema{root}
	seen[root] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if isRef(s) {
			queue = append(queue, s)
		}
		for _, c := range edgeChildren(s) {
			parents[c] = append(parents[c], s)
			if !seen[c] {
				seen[c] = true
				stack = append(stack, c)
			}
		}
	}
	holds := map[*jsonschema.Schema]bool{}
	for _, s := range queue {
		holds[s] = true
	}
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, p := range parents[s] {
			if !holds[p] {
				holds[p] = true
				queue = append(queue, p)
			}
		}
	}
	return holds
}

// edgeChildren are the subschemas the edge walker may descend into.
func edgeChildren(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(c *jsonschema.Schema) {
		if c != nil {
			out = append(out, c)
		}
	}
	add(s.Ref)
	add(s.Items2020)
	add(s.If)
	add(s.Then)
	add(s.Else)
	for _, c := range s.PrefixItems {
		add(c)
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, c := range list {
			add(c)
		}
	}
	for _, c := range s.Properties {
		add(c)
	}
	for _, c := range s.PatternProperties {
		add(c)
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		add(ap)
	}
	return out
}

// comparePointers orders JSON pointers segment by segment, numbers
// (array indexes) numerically.
func comparePointers(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(as[i], bs[i])
	}
	return len(as) - len(bs)
}
