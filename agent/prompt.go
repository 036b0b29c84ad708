package agent

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/roleschema"
)

// PromptParts are the pieces of one prompt, as [Assemble] lays them out.
// Empty parts are left out.
type PromptParts struct {
	Workflow   string // the workflow's name
	Role       string // the role's name
	Goal       string // the role's goal
	Procedure  string // the role's procedure
	Output     string // the role's output text: what its answer should hold
	Schema     any    // the role's output JSON Schema (plain JSON values), turned into the format instruction
	EdgePrompt string // the task for this step: the rendered edge prompt
	Resume     string // what a human wrote when resuming the thread
	Thread     string // the thread so far, already rendered within a quota by the caller
	Correction string // for a retry: why the previous answer could not be used
}

// Assemble lays out the prompt of one step as markdown: a title naming the
// role and workflow, then one "##" section per non-empty part, in this
// order: Goal, Procedure, Output, Output format (always: the
// [FormatInstruction] of the schema), Task (the edge prompt), Note from a
// human (the resume text), The thread so far, Correction. Each part is
// trimmed of blank lines around it; the prompt ends with one newline.
func Assemble(p PromptParts) string {
	var b strings.Builder
	b.WriteString("# Role: " + p.Role)
	if p.Workflow != "" {
		b.WriteString(" (workflow " + p.Workflow + ")")
	}
	b.WriteString("\n\nYou are the " + p.Role + " role of a uwf workflow. Read the sections below, do the task, and answer in the output format.\n")
	for _, s := range []struct{ heading, text string }{
		{"Goal", p.Goal},
		{"Procedure", p.Procedure},
		{"Output", p.Output},
		{"Output format", FormatInstruction(p.Schema)},
		{"Task", p.EdgePrompt},
		{"Note from a human", p.Resume},
		{"The thread so far", p.Thread},
		{"Correction", p.Correction},
	} {
		text := strings.TrimLeft(strings.TrimRight(s.text, " \t\r\n"), "\r\n")
		if text == "" {
			continue
		}
		b.WriteString("\n## " + s.heading + "\n\n" + text + "\n")
	}
	return b.String()
}

// FormatInstruction tells an agent how to shape its answer for a role
// whose output schema is schema (plain JSON values; nil allows any
// fields): a frontmatter block first, then markdown. It lists every field
// with its type, whether it is required, its description, its allowed
// values (enums, consts) and bounds, and gives an example; a schema that is
// a oneOf (or anyOf) of status variants gets one block per variant. It ends
// with the $SUSPEND shape, for asking a human.
func FormatInstruction(schema any) string {
	d := &describer{root: schema}
	b := &d.b
	b.WriteString("Start your answer with a frontmatter block: a line `---`, the fields below in YAML, and a line `---`. " +
		"Then write anything else (your reasoning, notes for the next role) in markdown. " +
		"The answer must begin with the `---` line itself, not with a code fence.\n")

	kw, variants := roleschema.Variants(schema)
	switch {
	case schema == nil:
		b.WriteString("\nFields: any, as a YAML mapping.\n")
	case variants != nil:
		// A variant pinned to no status (its status cut away by the
		// keywords beside the union) can never validate: it is left out.
		variants = slices.DeleteFunc(slices.Clone(variants), func(v roleschema.Variant) bool { return v.Statuses != nil && len(v.Statuses) == 0 })
		byStatus := true
		for _, v := range variants {
			if v.Statuses == nil {
				byStatus = false
			}
		}
		if byStatus {
			b.WriteString("\nThe fields depend on the status: use the shape of the status you choose.\n")
		} else {
			b.WriteString("\nUse " + map[string]string{"oneOf": "exactly one", "anyOf": "one"}[kw] + " of these shapes.\n")
		}
		for i, v := range variants {
			if byStatus {
				b.WriteString("\n### Status " + orList(v.Statuses) + "\n")
			} else {
				b.WriteString("\n### Shape " + strconv.Itoa(i+1) + "\n")
			}
			if desc := description(v.Schema); desc != "" && desc != description(roleschema.Merge(schema, schema)) {
				b.WriteString("\n" + desc + "\n")
			}
			d.object(v.Schema)
		}
	default:
		m := roleschema.Merge(schema, schema)
		if desc := description(m); desc != "" {
			b.WriteString("\nThe frontmatter: " + desc + "\n")
		}
		d.object(m)
	}

	b.WriteString("\nIf you cannot go on without a person (a question only they can answer, access you lack), " +
		"answer with only this block instead; the thread then waits for a human:\n\n" +
		"```markdown\n---\nstatus: $SUSPEND\nreason: <what you need from a human>\n---\n```\n")
	return b.String()
}

// describer writes the fields and examples of a schema rooted at root.
type describer struct {
	root any
	b    strings.Builder
}

// maxDescribeDepth bounds nesting in descriptions and examples.
const maxDescribeDepth = 8

// object writes the field list and an example of an object schema m
// (merged).
func (d *describer) object(m map[string]any) {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		d.b.WriteString("\nFields: any, as a YAML mapping.\n")
	} else {
		d.b.WriteString("\nFields:\n")
		d.fields(m, "", 0)
		if ap, ok := m["additionalProperties"].(bool); ok && !ap {
			d.b.WriteString("\nNo other fields are allowed.\n")
		}
	}
	var ex strings.Builder
	example, _ := d.example(m, "", 0).(map[string]any)
	writeYAML(&ex, example, 0)
	if len(example) == 0 {
		ex.Reset()
	}
	d.b.WriteString("\nExample:\n\n```markdown\n---\n" + ex.String() + "---\nYour notes, in markdown.\n```\n")
}

// fields writes one bullet per property of the object schema m, nested
// ones indented.
func (d *describer) fields(m map[string]any, indent string, depth int) {
	props, _ := m["properties"].(map[string]any)
	for _, name := range roleschema.OrderedKeys(m) {
		req := "optional"
		if roleschema.Required(m, name) {
			req = "required"
		}
		d.field(indent, "`"+name+"` ("+req+", ", props[name], depth)
	}
	required, _ := m["required"].([]any)
	for _, r := range required {
		if name, ok := r.(string); ok {
			if _, ok := props[name]; !ok {
				d.b.WriteString(indent + "- `" + name + "` (required, any value)\n")
			}
		}
	}
}

// field writes one bullet: head (the name and "(required, "), the type
// phrase, the description, then nested fields or shapes.
func (d *describer) field(indent, head string, node any, depth int) {
	m := roleschema.Merge(d.root, node)
	phrase, nested := d.phrase(m, depth)
	line := indent + "- " + head + phrase + ")"
	if desc := description(m); desc != "" {
		line += ": " + desc
	} else if nested != nil {
		line += ":"
	}
	d.b.WriteString(line + "\n")
	if nested != nil {
		nested(indent + "  ")
	}
}

// description returns m's description (or title) on one line.
func description(m map[string]any) string {
	for _, k := range []string{"description", "title"} {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.Join(strings.Fields(s), " ")
		}
	}
	return ""
}

// phrase describes a merged schema in words ("a string of at most 80
// characters") and returns a writer of nested lines for objects and
// shapes, or nil.
func (d *describer) phrase(m map[string]any, depth int) (string, func(indent string)) {
	if depth > maxDescribeDepth {
		return "a value", nil
	}
	if _, ok := m["not"]; ok && len(m) == 1 {
		return "no value is allowed", nil
	}
	if c, ok := m["const"]; ok {
		return "the constant " + code(c), nil
	}
	if e, ok := m["enum"].([]any); ok {
		switch len(e) {
		case 0:
			return "no value is allowed", nil
		case 1:
			return "the constant " + code(e[0]), nil
		}
		parts := make([]string, len(e))
		for i, v := range e {
			parts[i] = code(v)
		}
		return "one of " + strings.Join(parts, ", "), nil
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, ok := m[kw].([]any)
		if !ok || len(branches) == 0 {
			continue
		}
		var phrases []string
		var shapes []map[string]any
		for _, br := range branches {
			bm := roleschema.Merge(d.root, map[string]any{"allOf": []any{without(m, kw), br}})
			p, nested := d.phrase(bm, depth+1)
			if nested != nil {
				shapes = append(shapes, bm)
			}
			phrases = append(phrases, p)
		}
		if shapes == nil {
			return "one of: " + strings.Join(phrases, "; "), nil
		}
		return "one of the shapes below", func(indent string) {
			for i, br := range branches {
				bm := roleschema.Merge(d.root, map[string]any{"allOf": []any{without(m, kw), br}})
				d.field(indent, "shape "+strconv.Itoa(i+1)+" (", bm, depth+1)
			}
		}
	}
	types := roleschema.Types(m)
	if types == nil {
		types = []string{inferType(m)}
	}
	if len(types) == 0 {
		return "no value is allowed", nil
	}
	var phrases []string
	var nested func(string)
	for _, t := range types {
		p, n := d.typePhrase(m, t, depth)
		phrases = append(phrases, p)
		if n != nil {
			nested = n
		}
	}
	return strings.Join(phrases, " or "), nested
}

// typePhrase describes m as a value of type t.
func (d *describer) typePhrase(m map[string]any, t string, depth int) (string, func(string)) {
	switch t {
	case "string":
		var notes []string
		if f, _ := m["format"].(string); f == cas.FormatRef {
			return "a uwf hash: 13 characters of Crockford Base32", nil
		} else if f != "" {
			notes = append(notes, "format "+f)
		}
		if r := rangeText(m, "minLength", "maxLength", "character"); r != "" {
			notes = append(notes, r)
		}
		if p, ok := m["pattern"].(string); ok {
			notes = append(notes, "matching the regular expression `"+p+"`")
		}
		if len(notes) == 0 {
			return "a string", nil
		}
		return "a string: " + strings.Join(notes, ", "), nil
	case "integer", "number":
		p := "a number"
		if t == "integer" {
			p = "an integer"
		}
		var notes []string
		lo, loEx, hasLo := bound(m, "minimum", "exclusiveMinimum", true)
		hi, hiEx, hasHi := bound(m, "maximum", "exclusiveMaximum", false)
		lower, upper := "at least ", "at most "
		if loEx {
			lower = "greater than "
		}
		if hiEx {
			upper = "less than "
		}
		switch {
		case hasLo && hasHi && !loEx && !hiEx:
			notes = append(notes, "from "+fmtNum(lo)+" to "+fmtNum(hi))
		case hasLo && hasHi:
			notes = append(notes, lower+fmtNum(lo)+" and "+upper+fmtNum(hi))
		case hasLo:
			notes = append(notes, lower+fmtNum(lo))
		case hasHi:
			notes = append(notes, upper+fmtNum(hi))
		}
		if x, ok := num(m, "multipleOf"); ok {
			notes = append(notes, "a multiple of "+fmtNum(x))
		}
		if len(notes) > 0 {
			p += " " + strings.Join(notes, ", ")
		}
		return p, nil
	case "boolean":
		return "`true` or `false`", nil
	case "null":
		return "`null`", nil
	case "array":
		p := "a list"
		if r := rangeText(m, "minItems", "maxItems", "item"); r != "" {
			p += " of " + r
		}
		if u, _ := m["uniqueItems"].(bool); u {
			p += ", no two alike"
		}
		if pre, ok := m["prefixItems"].([]any); ok && len(pre) > 0 {
			var parts []string
			for i, it := range pre {
				ip, _ := d.phrase(roleschema.Merge(d.root, it), depth+1)
				parts = append(parts, "item "+strconv.Itoa(i+1)+" "+ip)
			}
			p += ": " + strings.Join(parts, ", ")
			if items, ok := m["items"]; ok {
				ip, _ := d.phrase(roleschema.Merge(d.root, items), depth+1)
				p += ", further items " + ip
			}
			return p, nil
		}
		items, ok := m["items"]
		if !ok {
			return p + " of any values", nil
		}
		ip, nested := d.phrase(roleschema.Merge(d.root, items), depth+1)
		return p + ", each item " + ip, nested
	case "object":
		props, _ := m["properties"].(map[string]any)
		if len(props) == 0 {
			return "an object", nil
		}
		p := "an object with these fields"
		if ap, ok := m["additionalProperties"].(bool); ok && !ap {
			p += " and no others"
		}
		return p, func(indent string) { d.fields(m, indent, depth+1) }
	}
	if t == "any" {
		return "any value", nil
	}
	return "a value of type " + t, nil
}

// inferType guesses the type of a schema without "type" from its keywords.
func inferType(m map[string]any) string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "minProperties", "maxProperties", "patternProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems", "uniqueItems"):
		return "array"
	case has("minLength", "maxLength", "pattern", "format"):
		return "string"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return "any"
}

// example makes a placeholder value for m: consts, first enum values,
// "<name>" for strings, lower bounds for numbers, required fields (all of
// them if none is required) for objects, minItems items (at least one) for
// lists.
func (d *describer) example(node any, name string, depth int) any {
	m := roleschema.Merge(d.root, node)
	if depth > maxDescribeDepth {
		return nil
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		if branches, ok := m[kw].([]any); ok && len(branches) > 0 {
			return d.example(map[string]any{"allOf": []any{without(m, kw), branches[0]}}, name, depth+1)
		}
	}
	t := inferType(m)
	if types := roleschema.Types(m); len(types) > 0 {
		t = types[0]
	}
	switch t {
	case "object":
		props, _ := m["properties"].(map[string]any)
		out := map[string]any{}
		keys := roleschema.OrderedKeys(m)
		var req []string
		for _, k := range keys {
			if roleschema.Required(m, k) {
				req = append(req, k)
			}
		}
		if len(req) > 0 {
			keys = req
		}
		for _, k := range keys {
			out[k] = d.example(props[k], k, depth+1)
		}
		return out
	case "array":
		n := 1
		if x, ok := num(m, "minItems"); ok && x > 1 {
			n = int(min(x, 3))
		}
		out := make([]any, n)
		pre, _ := m["prefixItems"].([]any)
		for i := range out {
			if i < len(pre) {
				out[i] = d.example(pre[i], name+" item", depth+1)
			} else {
				out[i] = d.example(m["items"], name+" item", depth+1)
			}
		}
		return out
	case "integer", "number":
		if x, ok := num(m, "minimum"); ok {
			return x
		}
		if x, ok := num(m, "exclusiveMinimum"); ok {
			return math.Floor(x) + 1
		}
		if x, ok := num(m, "maximum"); ok {
			return min(x, 0)
		}
		return 0.0
	case "boolean":
		return true
	case "null":
		return nil
	case "string":
		if f, _ := m["format"].(string); f == cas.FormatRef {
			return "<hash>"
		}
	}
	if name == "" {
		name = "value"
	}
	return "<" + name + ">"
}

// without returns a copy of m without key.
func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// rangeText describes a count range: "1 to 3 items", "at least 1 item",
// "at most 80 characters".
func rangeText(m map[string]any, minKey, maxKey, unit string) string {
	lo, hasLo := num(m, minKey)
	hi, hasHi := num(m, maxKey)
	plural := func(n float64) string {
		if n == 1 {
			return unit
		}
		return unit + "s"
	}
	switch {
	case hasLo && hasHi && lo == hi:
		return "exactly " + fmtNum(lo) + " " + plural(lo)
	case hasLo && hasHi:
		return fmtNum(lo) + " to " + fmtNum(hi) + " " + plural(hi)
	case hasLo && lo > 0:
		return "at least " + fmtNum(lo) + " " + plural(lo)
	case hasHi:
		return "at most " + fmtNum(hi) + " " + plural(hi)
	}
	return ""
}

func num(m map[string]any, key string) (float64, bool) {
	x, ok := m[key].(float64)
	return x, ok
}

func fmtNum(x float64) string { return yamlScalar(x) }

// code renders a JSON value as inline markdown code, in YAML's spelling.
func code(v any) string { return "`" + yamlScalar(v) + "`" }

// orList renders statuses as "`a`" or "`a` or `b`".
func orList(statuses []string) string {
	parts := make([]string, len(statuses))
	for i, s := range statuses {
		parts[i] = code(s)
	}
	return strings.Join(parts, " or ")
}
