package extract

import (
	"regexp"
	"strings"
	"sync"
)

// crlf matches a line ending with carriage returns before its newline.
var crlf = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\r+\n") })

// fence is the line that opens and closes a frontmatter block.
const fence = "---"

// Split cuts raw output into its frontmatter (the YAML between the opening
// and the closing "---" lines) and its body (everything after the closing
// line). It tolerates a UTF-8 byte order mark, blank lines and whitespace
// before the opening line, spaces after a fence, CRLF line endings (both
// parts come back with LF endings; any carriage returns just before a
// newline are dropped) and a closing fence at the very end
// without a newline. An empty block ("---\n---") gives an empty front,
// which [Extract] reads as an empty mapping; a "---" line in the body is
// just body. The error is an *[Error] wrapping [ErrNoFrontmatter] when raw
// does not begin with a fence line or the block is never closed.
func Split(raw string) (front, body string, err error) {
	front, body, _, err = split(raw)
	return front, body, err
}

// split is Split that also returns the line of raw (1-based) where the
// frontmatter begins.
func split(raw string) (front, body string, line int, err error) {
	s := strings.TrimPrefix(raw, "\uFEFF")
	s = crlf().ReplaceAllString(s, "\n")
	trimmed := strings.TrimLeft(s, " \t\n\r\v\f")
	if trimmed == "" {
		return "", "", 0, &Error{Err: ErrNoFrontmatter, Reason: "the output is empty"}
	}
	first, rest, hasNL := strings.Cut(trimmed, "\n")
	if strings.TrimRight(first, " \t\r") != fence {
		return "", "", 0, &Error{Err: ErrNoFrontmatter, Reason: "the output does not start with a frontmatter block (a line ---)"}
	}
	line = strings.Count(s[:len(s)-len(trimmed)], "\n") + 2
	if hasNL {
		for pos := 0; ; {
			end := strings.IndexByte(rest[pos:], '\n')
			ln := rest[pos:]
			if end >= 0 {
				ln = rest[pos : pos+end]
			}
			if strings.TrimRight(ln, " \t\r") == fence {
				if end >= 0 {
					body = rest[pos+end+1:]
				}
				return rest[:pos], body, line, nil
			}
			if end < 0 {
				break
			}
			pos += end + 1
		}
	}
	return "", "", 0, &Error{Err: ErrNoFrontmatter, Reason: "the frontmatter has no closing --- line"}
}
