package extract

import (
	"errors"
	"fmt"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// These errors can occur when extracting. The returned error is an *[Error]
// wrapping one of ErrNoFrontmatter, ErrBadFrontmatter or ErrInvalidOutput,
// each of which wraps ErrExtract.
var (
	// ErrExtract is wrapped by every extraction error: the raw output could
	// not be turned into a valid structured output.
	ErrExtract = errors.New("extract: unusable output")
	// ErrNoFrontmatter is returned when the raw output does not begin with
	// a frontmatter block ("---" ... "---"), or the block is not closed.
	ErrNoFrontmatter = fmt.Errorf("%w: no frontmatter", ErrExtract)
	// ErrBadFrontmatter is returned when the frontmatter is not valid YAML
	// or not a mapping.
	ErrBadFrontmatter = fmt.Errorf("%w: bad frontmatter", ErrExtract)
	// ErrInvalidOutput is returned when the frontmatter does not match the
	// role's schema (every violation is named), or is a $SUSPEND without a
	// reason.
	ErrInvalidOutput = fmt.Errorf("%w: invalid output", ErrExtract)
)

// Error describes raw output that could not be used. Its Unwrap gives Err.
type Error struct {
	Err          error           // ErrNoFrontmatter, ErrBadFrontmatter or ErrInvalidOutput
	Reason       string          // what is wrong, for people: "the frontmatter has no closing --- line"
	Line, Column int             // for ErrBadFrontmatter, where in the raw output (1-based); 0 when unknown
	Violations   []cas.Violation // for ErrInvalidOutput: every way the frontmatter fails the schema
	Fallback     error           // why the LLM fallback did not help, when it ran; nil otherwise
}

// Error returns "extract: " and the reason, each violation, and the
// fallback's failure.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("extract: " + e.Reason)
	for i, v := range e.Violations {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	if e.Fallback != nil {
		b.WriteString("; the LLM fallback failed too: " + e.Fallback.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }
