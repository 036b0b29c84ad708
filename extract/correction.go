package extract

import (
	"errors"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/jsonpointer"
)

// CorrectionPrompt returns the text package thread puts in the prompt of a
// retry after err (from [Extract]): why the previous answer could not be
// used, every violation on a line of its own, and the required format
// restated. An err that is not an *[Error] is quoted as it is.
func CorrectionPrompt(err error) string {
	var b strings.Builder
	b.WriteString("Your previous answer could not be used: ")
	var e *Error
	if !errors.As(err, &e) {
		b.WriteString(err.Error())
	} else {
		b.WriteString(e.Reason)
	}
	b.WriteString(".\n")
	if e != nil && len(e.Violations) > 0 {
		b.WriteString("\nProblems:\n")
		for _, v := range e.Violations {
			b.WriteString("- " + problem(v) + "\n")
		}
	}
	b.WriteString("\nAnswer again, starting with a frontmatter block: a line `---`, the fields as YAML " +
		"(see the output format above), a line `---`, then your notes in markdown. " +
		"Begin with the `---` line itself, not with a code fence.\n")
	return b.String()
}

// problem renders one violation for the agent: where, what, and what it wrote.
func problem(v cas.Violation) string {
	if v.Path == "" {
		return "the frontmatter: " + v.Message
	}
	s := "`" + dotted(v.Path) + "`: " + v.Message
	if v.Value != nil {
		if text, err := cas.Canonical(v.Value); err == nil && len(text) <= 120 {
			s += " (you wrote " + string(text) + ")"
		}
	}
	return s
}

// dotted turns a JSON pointer into a dotted path: /issues/0/file -> issues.0.file.
func dotted(ptr string) string {
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, s := range segs {
		segs[i] = jsonpointer.Unescape(s)
	}
	return strings.Join(segs, ".")
}
