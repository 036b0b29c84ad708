package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/jsonpointer"
	"github.com/uncaged/uwf/roleschema"
)

// Synth is an agent that makes up schema-valid outputs, deterministically,
// for trying a workflow offline (SPEC §6). Its raw output is a frontmatter
// block generated from the role's schema, then a short markdown body; the
// same seed and request give the same bytes. It is safe for concurrent use.
//
// # Statuses
//
// Run picks the status req.Statuses[req.RoleRuns % len(req.Statuses)], so
// that successive runs of a role walk its statuses in turn and a workflow's
// loops are exercised; with no Statuses given, it walks those the schema
// pins as [roleschema.Read] reads them (the one reading workflow validation
// uses too), in schema order.
//
// # Generation
//
// Values follow the schema (after "$ref"s and "allOf"s are folded in):
//
//   - const and enum: the const; an enum value picked by the seed;
//   - oneOf/anyOf: the variant whose status matches first, then the others
//     in order, until one gives a valid output;
//   - object: every required property, each optional one when the seed
//     says so (never an optional "cas_ref": a hash cannot be made up, and a
//     required one is an error); minProperties is met with optional ones;
//   - string: "synth <field> <run> for <role>, <a few words>", with field
//     the dotted path of the value ("summary", "risks.1.what": items count
//     from 1) and run = RoleRuns+1, padded or cut to minLength/maxLength; a fixed sample for
//     known formats (date-time, date, email, uri, uuid, ...); for a
//     pattern, the shortest string the regular expression matches;
//   - number and integer: a small value within minimum/maximum (exclusive
//     too), a multiple of multipleOf, picked by the seed;
//   - array: minItems items, or one or two picked by the seed, within
//     maxItems, prefixItems first, distinct when uniqueItems;
//   - boolean by the seed; null; a schema without a type: a string (an
//     object at the top).
//
// The result is validated against the schema before it is returned; when
// the first choices fail, other variants and then only required fields are
// tried, within a bound.
type Synth struct {
	seed int64
}

var _ StepCounter = (*Synth)(nil)

// NewSynth returns a synth agent whose choices derive from seed.
func NewSynth(seed int64) *Synth { return &Synth{seed: seed} }

// CountsSteps marks Synth as a [StepCounter]: it reads the request's
// step counts.
func (s *Synth) CountsSteps() {}

// Name returns "synth".
func (s *Synth) Name() string { return "synth" }

// maxSynthTries bounds the attempts at a valid output, per mode.
const maxSynthTries = 64

// Run makes up an output for req from req.Schema (see [Synth]). The error
// is a *[RunError] ([ExitFailure]) naming the schema path that defeated it
// when no valid output can be made, or saying the schema does not compile.
func (s *Synth) Run(ctx context.Context, req *Request) (*Result, error) {
	start := time.Now()
	fail := func(reason string, err error) (*Result, error) {
		return nil, &RunError{Agent: s.Name(), Reason: reason, Result: &Result{ExitCode: ExitFailure, Duration: time.Since(start)}, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &RunError{Agent: s.Name(), Reason: "interrupted", Result: &Result{ExitCode: ExitInterrupted}, Err: err}
	}
	var schema *cas.Schema
	if req.Schema != nil {
		var err error
		if schema, err = cas.CompileSchema(req.Schema); err != nil {
			return fail("the schema of role "+req.Role+" does not compile: "+err.Error(), err)
		}
	}
	statuses := req.Statuses
	if len(statuses) == 0 {
		statuses = roleschema.Statuses(req.Schema)
	}
	status := ""
	if len(statuses) > 0 {
		status = statuses[max(req.RoleRuns, 0)%len(statuses)]
	}
	g := &generator{
		root: req.Schema, seed: s.seed, thread: req.Thread, role: req.Role, run: max(req.RoleRuns, 0) + 1,
		status: status, choices: map[int]int{},
	}
	value, err := g.search(schema)
	if err != nil {
		return fail("cannot make a valid output for role "+req.Role+": "+err.Error(), err)
	}
	var b strings.Builder
	b.WriteString("---\n")
	writeYAML(&b, value, 0)
	b.WriteString("---\n")
	fmt.Fprintf(&b, "# synth: %s, run %d\n\nMade up by the synth agent (seed %d) for step %d of thread %s", req.Role, g.run, s.seed, req.StepIndex+1, req.Thread)
	if status != "" {
		b.WriteString(", status " + status)
	}
	b.WriteString(".\n")
	return &Result{Raw: b.String(), ExitCode: ExitOK, Duration: time.Since(start)}, nil
}

// generator makes up one value; it is used by one Run.
type generator struct {
	root    any
	seed    int64
	thread  string
	role    string
	run     int
	status  string      // the status to force at the top ("" for none)
	minimal bool        // leave out every optional property
	choices map[int]int // decision point (by order in a pass) -> branch taken
	points  []int       // the number of branches of each decision point of this pass
}

// genError is a value the generator cannot make, at a schema path.
type genError struct {
	at  string
	why string
}

func (e *genError) Error() string {
	at := e.at
	if at == "" {
		at = "/"
	}
	return "at schema path " + at + ": " + e.why
}

// search generates values, changing the choices made at oneOf/anyOf and
// type decision points (last first, like an odometer), first with optional
// properties by the seed, then with required ones only, until one is valid
// against schema.
func (g *generator) search(schema *cas.Schema) (map[string]any, error) {
	var firstErr error
	for _, minimal := range []bool{false, true} {
		g.minimal = minimal
		clear(g.choices)
		for range maxSynthTries {
			g.points = g.points[:0]
			v, err := g.gen(g.root, "", "", "", 0)
			if err == nil {
				if m, ok := v.(map[string]any); !ok {
					err = &genError{why: "the schema does not describe an object, and frontmatter is a mapping"}
				} else if schema == nil {
					return m, nil
				} else if verr := schema.Validate(m); verr == nil {
					return m, nil
				} else {
					err = violationsError(verr)
				}
			}
			if firstErr == nil {
				firstErr = err
			}
			if !g.advance() {
				break
			}
		}
	}
	return nil, firstErr
}

// violationsError restates a validation error by schema path.
func violationsError(err error) error {
	var ve *cas.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return err
	}
	parts := make([]string, len(ve.Violations))
	for i, v := range ve.Violations {
		parts[i] = (&genError{at: v.SchemaPath, why: v.Message}).Error()
	}
	return errors.New(strings.Join(parts, "; "))
}

// advance moves to the next combination of choices; false when all were
// tried.
func (g *generator) advance() bool {
	for i := len(g.points) - 1; i >= 0; i-- {
		if g.choices[i]+1 < g.points[i] {
			g.choices[i]++
			for j := i + 1; j < len(g.points); j++ {
				delete(g.choices, j)
			}
			return true
		}
	}
	return false
}

// choose records a decision point with n branches and returns the branch
// taken in this pass.
func (g *generator) choose(n int) int {
	i := len(g.points)
	g.points = append(g.points, n)
	return g.choices[i]
}

// hash derives a number from the seed, the request and an instance path.
func (g *generator) hash(ipath string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%d\x00%s", g.seed, g.thread, g.role, g.run, ipath)
	return h.Sum64()
}

// maxGenDepth bounds nesting (a recursive schema).
const maxGenDepth = 24

// gen makes a value for node, at schema path spath and instance path ipath
// (JSON pointers); name labels made-up text.
func (g *generator) gen(node any, spath, ipath, name string, depth int) (any, error) {
	if depth > maxGenDepth {
		return nil, &genError{spath, "nesting deeper than " + strconv.Itoa(maxGenDepth) + " levels (a recursive schema?)"}
	}
	if b, ok := node.(bool); ok && !b {
		return nil, &genError{spath, "the schema false allows no value"}
	}
	m := roleschema.Merge(g.root, node)
	if not, ok := m["not"].(map[string]any); ok && len(not) == 0 {
		return nil, &genError{spath, "the schema allows no value"}
	}
	if ipath == "/status" && g.status != "" {
		return g.status, nil
	}
	if c, ok := m["const"]; ok {
		return c, nil
	}
	if e, ok := m["enum"].([]any); ok {
		return g.pickEnum(m, e, spath, ipath)
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, ok := m[kw].([]any)
		if !ok || len(branches) == 0 {
			continue
		}
		order := g.branchOrder(m, kw, branches, ipath)
		i := order[g.choose(len(order))]
		merged := map[string]any{"allOf": []any{without(m, kw), branches[i]}}
		return g.gen(merged, spath+"/"+kw+"/"+strconv.Itoa(i), ipath, name, depth+1)
	}
	types := roleschema.Types(m)
	switch {
	case types == nil:
		t := inferType(m)
		if t == "any" {
			t = "string"
			if ipath == "" {
				t = "object"
			}
		}
		types = []string{t}
	case len(types) == 0:
		return nil, &genError{spath + "/type", "no type is allowed (the types of allOf members do not intersect)"}
	}
	// Prefer non-null types, in order.
	order := slices.Clone(types)
	slices.SortStableFunc(order, func(a, b string) int {
		return boolInt(a == "null") - boolInt(b == "null")
	})
	t := order[0]
	if len(order) > 1 {
		t = order[g.choose(len(order))]
	}
	switch t {
	case "object":
		return g.object(m, spath, ipath, name, depth)
	case "array":
		return g.array(m, spath, ipath, name, depth)
	case "string":
		return g.str(m, spath, ipath, name)
	case "integer", "number":
		return g.number(m, spath, ipath, t == "integer")
	case "boolean":
		return g.hash(ipath)%2 == 0, nil
	case "null":
		return nil, nil
	}
	return nil, &genError{spath + "/type", "unknown type " + strconv.Quote(t)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// branchOrder lists a union's branches: at the top, those whose status
// matches the chosen one first; branches that allow only null last; the
// others in order.
func (g *generator) branchOrder(m map[string]any, kw string, branches []any, ipath string) []int {
	var first, rest, last []int
	for i, b := range branches {
		bm := roleschema.Merge(g.root, map[string]any{"allOf": []any{without(m, kw), b}})
		switch {
		case ipath == "" && g.status != "" && slices.Contains(roleschema.StatusesOf(g.root, bm), g.status):
			first = append(first, i)
		case onlyNull(bm):
			last = append(last, i)
		default:
			rest = append(rest, i)
		}
	}
	return append(append(first, rest...), last...)
}

// onlyNull reports whether a merged schema allows null and nothing else.
func onlyNull(m map[string]any) bool {
	if c, ok := m["const"]; ok {
		return c == nil
	}
	t := roleschema.Types(m)
	return len(t) == 1 && t[0] == "null"
}

// pickEnum picks an enum value of a type m allows, by the seed.
func (g *generator) pickEnum(m map[string]any, enum []any, spath, ipath string) (any, error) {
	types := roleschema.Types(m)
	var ok []any
	for _, v := range enum {
		if types == nil || slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return nil, &genError{spath + "/enum", "no enum value is allowed"}
	}
	return ok[g.hash(ipath)%uint64(len(ok))], nil
}

// hasType reports whether a JSON value is of JSON Schema type t.
func hasType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || (t == "integer" && x == math.Trunc(x))
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

// isRef reports whether a property schema is a cas_ref string.
func (g *generator) isRef(node any) bool {
	f, _ := roleschema.Merge(g.root, node)["format"].(string)
	return f == cas.FormatRef
}

// join appends a segment to a dotted label.
func join(label, seg string) string {
	if label == "" {
		return seg
	}
	return label + "." + seg
}

func (g *generator) object(m map[string]any, spath, ipath, name string, depth int) (any, error) {
	props, _ := m["properties"].(map[string]any)
	out := map[string]any{}
	var skipped []string
	for _, k := range roleschema.OrderedKeys(m) {
		if !roleschema.Required(m, k) && (g.minimal || g.isRef(props[k]) || g.hash(ipath+"/"+k+"?")%2 == 1) {
			if !g.isRef(props[k]) {
				skipped = append(skipped, k)
			}
			continue
		}
		v, err := g.gen(props[k], spath+"/properties/"+jsonpointer.Escape(k), ipath+"/"+jsonpointer.Escape(k), join(name, k), depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	ap, hasAP := m["additionalProperties"]
	apFalse := hasAP && ap == false
	required, _ := m["required"].([]any)
	for _, r := range required {
		k, _ := r.(string)
		if _, ok := props[k]; ok {
			continue
		}
		if apFalse {
			return nil, &genError{spath + "/required", "required property " + strconv.Quote(k) + " is not allowed by additionalProperties false"}
		}
		v, err := g.gen(orAny(ap, hasAP), spath+"/additionalProperties", ipath+"/"+jsonpointer.Escape(k), join(name, k), depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	if minP, ok := num(m, "minProperties"); ok {
		for i := 0; float64(len(out)) < minP; i++ {
			var k string
			var node any
			var sp string
			if len(skipped) > 0 {
				k, skipped = skipped[0], skipped[1:]
				node, sp = props[k], spath+"/properties/"+jsonpointer.Escape(k)
			} else if !apFalse {
				k, node, sp = "field"+strconv.Itoa(i+1), orAny(ap, hasAP), spath+"/additionalProperties"
				if _, taken := out[k]; taken {
					continue
				}
			} else {
				return nil, &genError{spath + "/minProperties", fmt.Sprintf("minProperties %s needs more properties than the schema allows", fmtNum(minP))}
			}
			v, err := g.gen(node, sp, ipath+"/"+jsonpointer.Escape(k), join(name, k), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
	}
	return out, nil
}

// orAny returns the additionalProperties schema, or an empty one.
func orAny(ap any, has bool) any {
	if !has {
		return map[string]any{}
	}
	return ap
}

func (g *generator) array(m map[string]any, spath, ipath, name string, depth int) (any, error) {
	minI, _ := num(m, "minItems")
	maxI, hasMax := num(m, "maxItems")
	if !hasMax {
		maxI = math.Inf(1)
	}
	prefix, _ := m["prefixItems"].([]any)
	items, hasItems := m["items"]
	if hasItems && items == false {
		maxI = min(maxI, float64(len(prefix)))
	}
	if minI > maxI {
		return nil, &genError{spath + "/minItems", fmt.Sprintf("minItems %s exceeds the %s items allowed", fmtNum(minI), fmtNum(maxI))}
	}
	n := minI
	if n == 0 && !g.minimal {
		n = float64(1 + g.hash(ipath+"#")%2)
	}
	n = min(n, maxI, 100)
	unique, _ := m["uniqueItems"].(bool)
	out := make([]any, 0, int(n))
	var seen []string
	for i := range int(n) {
		node, sp := any(map[string]any{}), spath+"/items"
		switch {
		case i < len(prefix):
			node, sp = prefix[i], spath+"/prefixItems/"+strconv.Itoa(i)
		case hasItems:
			node = items
		}
		label := join(name, strconv.Itoa(i+1))
		var v any
		for salt := 0; ; salt++ {
			ip := ipath + "/" + strconv.Itoa(i)
			if salt > 0 {
				ip += "~" + strconv.Itoa(salt)
			}
			var err error
			if v, err = g.gen(node, sp, ip, label, depth+1); err != nil {
				return nil, err
			}
			key, _ := cas.Canonical(v)
			if !unique || !slices.Contains(seen, string(key)) || salt == 16 {
				seen = append(seen, string(key))
				break
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// synthWords make the made-up text read like a sentence.
var (
	synthVerbs   = []string{"check", "tidy", "extend", "test", "document", "simplify", "review", "measure"}
	synthObjects = []string{"the parser", "the edge cases", "the error paths", "the happy path", "the docs", "the retry loop", "the cache", "the schema"}
)

// formatSamples are valid values of the formats the validator asserts.
var formatSamples = map[string]string{
	"date-time":             "2025-01-31T12:00:00Z",
	"date":                  "2025-01-31",
	"time":                  "12:00:00Z",
	"duration":              "P1D",
	"email":                 "synth@example.com",
	"idn-email":             "synth@example.com",
	"hostname":              "example.com",
	"idn-hostname":          "example.com",
	"ipv4":                  "192.0.2.1",
	"ipv6":                  "2001:db8::1",
	"uri":                   "https://example.com/synth",
	"iri":                   "https://example.com/synth",
	"uri-reference":         "/synth",
	"iri-reference":         "/synth",
	"uri-template":          "https://example.com/{synth}",
	"uuid":                  "00000000-0000-4000-8000-000000000000",
	"json-pointer":          "/synth",
	"relative-json-pointer": "0/synth",
	"regex":                 "^synth$",
}

func (g *generator) str(m map[string]any, spath, ipath, name string) (any, error) {
	minL, _ := num(m, "minLength")
	maxL, hasMax := num(m, "maxLength")
	if hasMax && minL > maxL {
		return nil, &genError{spath, fmt.Sprintf("minLength %s exceeds maxLength %s", fmtNum(minL), fmtNum(maxL))}
	}
	if !hasMax {
		maxL = math.Inf(1)
	}
	if f, _ := m["format"].(string); f == cas.FormatRef {
		return nil, &genError{spath + "/format", "a required cas_ref (the hash of a stored node) cannot be made up"}
	} else if sample, ok := formatSamples[f]; ok {
		return sample, nil
	}
	if p, ok := m["pattern"].(string); ok {
		s, err := fromPattern(p, int(minL), maxL)
		if err != nil {
			return nil, &genError{spath + "/pattern", err.Error()}
		}
		return s, nil
	}
	if name == "" {
		name = "value"
	}
	h := g.hash(ipath)
	text := fmt.Sprintf("synth %s %d for %s, %s %s", name, g.run, g.role, synthVerbs[h%8], synthObjects[(h/8)%8])
	for float64(utf8.RuneCountInString(text)) < minL {
		text += " and " + synthObjects[(h/64+uint64(len(text)))%8]
	}
	if n := utf8.RuneCountInString(text); float64(n) > maxL {
		r := []rune(text)[:int(maxL)]
		text = string(r)
		if trimmed := strings.TrimRight(text, " ,"); float64(utf8.RuneCountInString(trimmed)) >= minL {
			text = trimmed
		}
		if float64(utf8.RuneCountInString(text)) < minL {
			text += strings.Repeat("x", int(minL)-utf8.RuneCountInString(text))
		}
	}
	return text, nil
}

// fromPattern returns a short string matching the regular expression p
// (unanchored, as JSON Schema reads it) with a length in [minL, maxL],
// expanding repetitions until the length fits.
func fromPattern(p string, minL int, maxL float64) (string, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return "", fmt.Errorf("the pattern does not compile: %w", err)
	}
	tree, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("the pattern does not parse: %w", err)
	}
	tree = tree.Simplify()
	for reps := 0; reps <= 64; reps = max(reps*2, reps+1) {
		var b strings.Builder
		writeMatch(&b, tree, reps)
		s := b.String()
		n := utf8.RuneCountInString(s)
		if n >= minL && float64(n) <= maxL && re.MatchString(s) {
			return s, nil
		}
		if float64(n) > maxL {
			break
		}
	}
	return "", errors.New("no short string matches the pattern within the length bounds")
}

// writeMatch writes a string that re matches, repeating unbounded
// repetitions reps times beyond their minimum.
func writeMatch(b *strings.Builder, re *syntax.Regexp, reps int) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		if len(re.Rune) >= 2 {
			b.WriteRune(classRune(re.Rune))
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		writeMatch(b, re.Sub[0], reps)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			writeMatch(b, s, reps)
		}
	case syntax.OpAlternate:
		writeMatch(b, re.Sub[0], reps)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		n := lo + reps
		if hi >= 0 {
			n = min(n, hi)
		}
		for range n {
			writeMatch(b, re.Sub[0], reps)
		}
	}
}

// classRune picks a readable rune from a character class (pairs of
// ranges): a lower-case letter, a digit or an upper-case letter if the
// class has one, else its first rune.
func classRune(ranges []rune) rune {
	for _, want := range []rune{'a', 's', '0', '1', 'A', 'S', '_', '-'} {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want
			}
		}
	}
	return ranges[0]
}

func (g *generator) number(m map[string]any, spath, ipath string, isInt bool) (any, error) {
	lo, loEx, hasLo := bound(m, "minimum", "exclusiveMinimum", true)
	hi, hiEx, hasHi := bound(m, "maximum", "exclusiveMaximum", false)
	step, hasStep := num(m, "multipleOf")
	if hasStep && step <= 0 {
		return nil, &genError{spath + "/multipleOf", "multipleOf must be positive"}
	}
	unit := 1.0
	switch {
	case hasStep && isInt:
		// The smallest multiple of step that is an integer.
		unit = math.NaN()
		for k := 1.0; k <= 1000; k++ {
			if x := roundTo(k*step, step); x == math.Trunc(x) {
				unit = x
				break
			}
		}
		if math.IsNaN(unit) {
			return nil, &genError{spath + "/multipleOf", "no small integer is a multiple of " + fmtNum(step)}
		}
	case hasStep:
		unit = step
	}
	kLo, kHi := math.Inf(-1), math.Inf(1)
	if hasLo {
		kLo = math.Ceil(lo / unit)
		if roundTo(kLo*unit, unit) < lo || (loEx && roundTo(kLo*unit, unit) <= lo) {
			kLo++
		}
	}
	if hasHi {
		kHi = math.Floor(hi / unit)
		if roundTo(kHi*unit, unit) > hi || (hiEx && roundTo(kHi*unit, unit) >= hi) {
			kHi--
		}
	}
	h := g.hash(ipath)
	var k float64
	switch {
	case kLo > kHi:
		if !isInt && !hasStep && hasLo && hasHi && lo < hi {
			return (lo + hi) / 2, nil // no integer fits: a fraction does
		}
		what := "number"
		if isInt {
			what = "integer"
		}
		if hasStep {
			what = "multiple of " + fmtNum(step)
		}
		return nil, &genError{spath, fmt.Sprintf("no %s lies within %s", what, rangeWords(lo, loEx, hasLo, hi, hiEx, hasHi))}
	case hasLo && hasHi:
		k = kLo + float64(h%uint64(min(kHi-kLo+1, 10)))
	case hasLo:
		k = kLo + float64(h%10)
	case hasHi:
		k = kHi - float64(h%10)
	default:
		k = math.Ceil(1/unit) + float64(h%10)
	}
	return roundTo(k*unit, unit), nil
}

// bound reads an inclusive and an exclusive bound and returns the tighter.
func bound(m map[string]any, incl, excl string, lower bool) (float64, bool, bool) {
	x, hasX := num(m, incl)
	e, hasE := num(m, excl)
	switch {
	case hasX && hasE:
		if (lower && e >= x) || (!lower && e <= x) {
			return e, true, true
		}
		return x, false, true
	case hasE:
		return e, true, true
	}
	return x, false, hasX
}

// roundTo rounds x to the number of decimals of unit, so that 3*0.1 is 0.3.
func roundTo(x, unit float64) float64 {
	s := strconv.FormatFloat(unit, 'f', -1, 64)
	dec := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		dec = len(s) - i - 1
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', dec, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// rangeWords describes bounds: "[1, 5]", "(0, 1)", "[3, ∞)".
func rangeWords(lo float64, loEx, hasLo bool, hi float64, hiEx, hasHi bool) string {
	l, r := "[", "]"
	if loEx || !hasLo {
		l = "("
	}
	if hiEx || !hasHi {
		r = ")"
	}
	ls, hs := "-inf", "inf"
	if hasLo {
		ls = fmtNum(lo)
	}
	if hasHi {
		hs = fmtNum(hi)
	}
	return l + ls + ", " + hs + r
}
