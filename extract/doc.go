// Package extract turns an agent's raw output into structured output
// (SPEC §6): the frontmatter of the answer, validated against the role's
// output schema, plus the markdown body after it.
//
// # Vocabulary
//
// The raw output should begin with a frontmatter block: a line "---", a
// YAML mapping, a line "---"; the body is the markdown that follows.
// [Split] cuts the two apart, tolerating a byte order mark, leading blank
// lines and CRLF endings. [Extract] parses and validates the frontmatter
// (the fast path, [ViaFrontmatter]); a frontmatter of {status: $SUSPEND,
// reason: ...} is recognised before the role schema, and makes an [Output]
// whose Suspend is set. When the fast path fails, a [JSONExtractor] (an
// LLM, passed by package thread) may be asked for the JSON instead
// ([ViaLLM]).
//
// # Errors
//
// An *[Error] wraps [ErrNoFrontmatter], [ErrBadFrontmatter] (with the line
// in the raw output) or [ErrInvalidOutput] (with every schema violation),
// all of which wrap [ErrExtract]. [CorrectionPrompt] turns one into the
// text of a retry's prompt.
//
// # Concurrency
//
// Everything here is safe for concurrent use, as long as the
// [JSONExtractor] given is.
package extract
