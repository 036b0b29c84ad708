// Package moderator is uwf's router: a pure function from (workflow graph,
// last role, last output) to the next role and the prompt handed to it
// (SPEC §6). It reads no store and starts no agent; thread calls it once per
// step and registry uses [Fields] to check prompt templates against role
// schemas. It imports only the standard library.
//
// # Vocabulary
//
// A [Graph] maps a from-role and a status to an [Edge]: the target role and
// a prompt template. [Start] is the source of a fresh thread, routed with
// status [StatusNew]; [End] is the target that finishes a thread; [Suspend]
// is a status any role may output to ask for a human, never in the graph.
// An output is a plain JSON value as decoded from JSON or YAML (nil, bool,
// float64, string, []any, map[string]any); routing reads its string
// "status" field. [Route] returns a [Decision]: from, status, next role,
// rendered prompt.
//
// # Templates
//
// A prompt template is text with field references in double braces:
// {{ summary }}, {{ review.comments }}, {{ steps.0 }}. Whitespace inside the
// braces is optional ({{summary}} works). A path is segments joined by ".";
// a segment is letters, digits, '_' and '-'. A decimal segment indexes an
// array (0-based, no leading zeros) or names an object key made of digits.
// Text outside braces is copied unchanged, a lone "{" or "}" and a stray
// "}}" included (only blanks just before an array or object are dropped,
// see Rendering). There is no escape for a literal "{{": an unclosed "{{",
// an empty "{{ }}" or a malformed path is [ErrBadTemplate], and a path the
// output lacks is [ErrMissingField].
//
// # Rendering
//
// A field's value is rendered readably and deterministically:
//
//   - a string as-is, without quotes;
//   - a number as JSON writes it, in its shortest form: 3, 2.5, -0.25,
//     1e+21, 1e-7 (exponent form only below 1e-6 or from 1e21 on);
//   - a bool as true or false, null as null;
//   - an empty array as [] and an empty object as {};
//   - a non-empty array as a markdown bullet list, each item on its own line
//     after a line break: ["a", "b"] renders as "\n- a\n- b", and spaces
//     and tabs just before the field are dropped, so "Steps: {{ steps }}"
//     becomes "Steps:\n- a\n- b";
//   - a non-empty object as YAML-like "key: value" lines, keys sorted, each
//     after a line break: "\ncomments: ok\nscore: 3";
//   - arrays and objects inside those are indented by two spaces per level,
//     YAML style; the scalars inside are rendered as above, and a multi-line
//     string continues on lines indented to its item.
//
// For example, "Plan: {{ plan }}" with plan
// {"steps": ["a", "b"], "risks": [{"what": "x", "level": 2}], "owner": "ann"}
// renders as
//
//	Plan:
//	owner: ann
//	risks:
//	  - level: 2
//	    what: x
//	steps:
//	  - a
//	  - b
//
// The block form is for people and models to read, not YAML to be parsed:
// strings are never quoted or escaped. Nesting deeper than 100 levels
// renders as "...". Go values that are not plain JSON values are read
// through reflection (typed slices, string-keyed maps, integers, named
// types, pointers); anything else renders with fmt's %v.
//
// # Errors
//
// Every error is an [*Error] naming the role, status and field involved and
// wrapping one of [ErrUnknownRole], [ErrUnknownStatus], [ErrNoStatus],
// [ErrMissingField] or [ErrBadTemplate].
//
// # Concurrency
//
// Everything here is a pure function, safe for concurrent use as long as no
// one modifies the graph or output being read.
package moderator
