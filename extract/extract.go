package extract

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/roleschema"
)

// How an [Output] was obtained.
const (
	ViaFrontmatter = "frontmatter" // parsed from the raw output's frontmatter
	ViaLLM         = "llm"         // extracted by the LLM fallback
)

// Suspend is the status an agent outputs to ask for a human (SPEC §5).
const Suspend = "$SUSPEND"

// NoReason is the reason of a $SUSPEND answer that gave none (no reason
// field, null or blank): the agent meant to stop, so it is accepted.
const NoReason = "the agent asked for a human without giving a reason"

// Output is a structured output: what an agent's raw output means.
type Output struct {
	Value   any    // the frontmatter as plain JSON values, valid against the schema; nil when Suspend
	Body    string // the markdown after the frontmatter (the whole raw output when the LLM fallback read it without one)
	Suspend bool   // the agent asked for a human: its frontmatter is {status: $SUSPEND, reason: ...}
	Reason  string // the reason it gave, when Suspend
	Via     string // [ViaFrontmatter] or [ViaLLM]
}

// JSONExtractor is what [Extract] needs from an LLM: one JSON object, valid
// against schema (a JSON Schema as plain JSON values), holding what raw
// says. Package thread passes the llm agent (agent.LLM satisfies it).
type JSONExtractor interface {
	ExtractJSON(ctx context.Context, schema any, raw string) (string, error)
}

// Extract turns an agent's raw output into a structured [Output].
//
// The fast path splits off the frontmatter ([Split]), parses it as YAML
// (which must be a mapping; an empty block is an empty mapping), recognises
// $SUSPEND before the role schema is applied ({status: $SUSPEND, reason:
// <string>}; other fields are ignored; a missing or blank reason becomes
// [NoReason]), then validates the
// mapping against schema (nil accepts any mapping). When the fast path
// fails (no frontmatter, bad YAML, schema violations; not a $SUSPEND whose
// reason is not a string) and llm is not nil, the LLM is asked for the JSON instead, which
// is parsed and validated in turn and, if valid, returned with Via
// [ViaLLM].
//
// The error is an *[Error] for the fast path's failure, wrapping
// [ErrNoFrontmatter], [ErrBadFrontmatter] or [ErrInvalidOutput] (all
// wrapping [ErrExtract]), with Fallback set when the LLM ran and did not
// help. A status the schema does not allow is a violation naming it and the
// allowed ones. If ctx ends during the fallback, the error wraps ctx's
// error instead.
func Extract(ctx context.Context, raw string, schema *cas.Schema, llm JSONExtractor) (*Output, error) {
	out, body, xerr := fast(raw, schema)
	if xerr == nil {
		return out, nil
	}
	if llm == nil || xerr.final {
		return nil, xerr.err
	}
	var doc any = map[string]any{"type": "object"}
	if schema != nil {
		doc = schema.Doc()
	}
	text, err := llm.ExtractJSON(ctx, doc, raw)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("extract: LLM fallback: %w (%w)", ctx.Err(), err)
		}
		xerr.err.Fallback = err
		return nil, xerr.err
	}
	v, err := cas.ParseJSON([]byte(stripFence(text)))
	if err != nil {
		xerr.err.Fallback = fmt.Errorf("its answer is not JSON: %w", err)
		return nil, xerr.err
	}
	m, ok := v.(map[string]any)
	if !ok {
		xerr.err.Fallback = fmt.Errorf("its answer is %s, not an object", kind(v))
		return nil, xerr.err
	}
	if schema != nil {
		if vs := violations(schema, m); vs != nil {
			xerr.err.Fallback = &Error{Err: ErrInvalidOutput, Reason: "its answer does not match the role schema", Violations: vs}
			return nil, xerr.err
		}
	}
	return &Output{Value: m, Body: body, Via: ViaLLM}, nil
}

// fastError is the fast path's failure; final ones skip the fallback.
type fastError struct {
	err   *Error
	final bool
}

// fast is the frontmatter path. It returns the body for the fallback: the
// part after the frontmatter, or the whole raw output without one.
func fast(raw string, schema *cas.Schema) (*Output, string, *fastError) {
	front, body, line, err := split(raw)
	if err != nil {
		return nil, raw, &fastError{err: err.(*Error)}
	}
	var v any
	if !blankYAML(front) {
		v, err = cas.ParseYAML([]byte(front))
	}
	if err != nil {
		return nil, body, &fastError{err: yamlError(err, line)}
	}
	if v == nil {
		v = map[string]any{} // an empty block, or only comments
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, body, &fastError{err: &Error{Err: ErrBadFrontmatter, Reason: "the frontmatter is " + kind(v) + ", not a mapping of fields", Line: line}}
	}
	if m["status"] == Suspend {
		reason, ok := m["reason"].(string)
		if !ok && m["reason"] != nil {
			return nil, body, &fastError{final: true, err: &Error{
				Err: ErrInvalidOutput, Reason: "a $SUSPEND answer's reason must be text",
				Violations: []cas.Violation{{Path: "/reason", SchemaPath: "$SUSPEND", Message: "the reason must be a string saying what you need from a human, got " + kind(m["reason"]), Value: m["reason"]}},
			}}
		}
		if strings.TrimSpace(reason) == "" {
			reason = NoReason
		}
		return &Output{Body: body, Suspend: true, Reason: reason, Via: ViaFrontmatter}, body, nil
	}
	if schema != nil {
		if vs := violations(schema, m); vs != nil {
			return nil, body, &fastError{err: &Error{Err: ErrInvalidOutput, Reason: "the frontmatter does not match the role schema", Violations: vs}}
		}
	}
	return &Output{Value: m, Body: body, Via: ViaFrontmatter}, body, nil
}

// yamlLine reads the line from a yaml.v3 message: "yaml: line 3: ...".
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// yamlError reports a YAML error at its line in the raw output, where the
// frontmatter begins at line first.
func yamlError(err error, first int) *Error {
	e := &Error{Err: ErrBadFrontmatter}
	msg := err.Error()
	var se *cas.SyntaxError
	if errors.As(err, &se) {
		msg = se.Msg
		line, col := se.Line, se.Column
		if line == 0 {
			if m := yamlLine().FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
		}
		if line > 0 {
			e.Line, e.Column = first+line-1, col
		}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	switch {
	case e.Line > 0 && e.Column > 0:
		e.Reason = fmt.Sprintf("the frontmatter is not valid YAML: line %d, column %d: %s", e.Line, e.Column, msg)
	case e.Line > 0:
		e.Reason = fmt.Sprintf("the frontmatter is not valid YAML: line %d: %s", e.Line, msg)
	default:
		e.Reason = "the frontmatter is not valid YAML: " + msg
	}
	return e
}

// violations validates m against schema and returns every violation, nil
// if valid. A status outside the schema's statuses becomes one violation
// naming the allowed ones; when the schema is a union of status variants,
// the violations of variants for other statuses are left out.
func violations(schema *cas.Schema, m map[string]any) []cas.Violation {
	err := schema.Validate(m)
	if err == nil {
		return nil
	}
	var ve *cas.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return []cas.Violation{{Message: err.Error(), SchemaPath: "/", Value: m}}
	}
	vs := slices.Clone(ve.Violations)
	slices.SortStableFunc(vs, func(a, b cas.Violation) int {
		return cmp.Or(comparePointers(a.Path, b.Path), strings.Compare(a.SchemaPath, b.SchemaPath), strings.Compare(a.Message, b.Message))
	})
	doc := schema.Doc()
	allowed := roleschema.Statuses(doc)
	kw, variants := roleschema.Variants(doc)
	status, isString := m["status"].(string)
	if !isString || len(allowed) == 0 {
		return vs
	}
	var kept []cas.Violation
	if !slices.Contains(allowed, status) {
		at := "/properties/status"
		if variants != nil {
			at = "/" + kw
		}
		kept = append(kept, cas.Violation{
			Path: "/status", SchemaPath: at, Value: status,
			Message: fmt.Sprintf("unknown status %q: the allowed statuses are %s", status, quoteList(allowed)),
		})
		for _, v := range vs {
			if v.Path == "/status" {
				continue
			}
			if _, inVariant := variantOf(v.SchemaPath, kw); variants != nil && inVariant {
				continue
			}
			kept = append(kept, v)
		}
		return kept
	}
	if variants == nil {
		return vs
	}
	for _, v := range vs {
		if i, inVariant := variantOf(v.SchemaPath, kw); inVariant && i < len(variants) && !slices.Contains(variants[i].Statuses, status) {
			continue
		}
		kept = append(kept, v)
	}
	if kept == nil {
		return vs
	}
	return kept
}

// comparePointers orders JSON pointers segment by segment, array indexes
// numerically, so that violations come in document order.
func comparePointers(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return cmp.Compare(ai, bi)
		}
		return strings.Compare(as[i], bs[i])
	}
	return cmp.Compare(len(as), len(bs))
}

// variantOf finds the first "/<kw>/<i>" in a schema path: the top-level
// union's branch the violation belongs to.
func variantOf(schemaPath, kw string) (int, bool) {
	if kw == "" {
		return 0, false
	}
	segs := strings.Split(schemaPath, "/")
	for j := 0; j+1 < len(segs); j++ {
		if segs[j] == kw {
			i, err := strconv.Atoi(segs[j+1])
			return i, err == nil
		}
	}
	return 0, false
}

// stripFence removes a ``` fence a model may wrap JSON in.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	_, rest, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// kind names a JSON value's kind: "a list", "a string"...
func kind(v any) string {
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
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// blankYAML reports whether a frontmatter block holds nothing but blank
// lines and comments: an empty mapping (cas.ParseYAML calls it an empty
// document, an error).
func blankYAML(front string) bool {
	for line := range strings.Lines(front) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
