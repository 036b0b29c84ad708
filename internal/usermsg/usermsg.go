// Package usermsg rewrites the library's internal words out of an error's
// text ("cas: not found", "extract: ..."), so that the CLI, the HTTP API
// and the worker's log say what went wrong in the user's words.
package usermsg

import (
	"regexp"
	"strings"
	"sync"

	"github.com/uncaged/uwf/cas"
)

// internalWords are the texts of the library's sentinel errors, which name
// a package ("cas: not found"), and what a person reads instead. Longer
// texts come first, so that "cas: invalid ref name" is not read as
// "cas: invalid" plus more.
var internalWords = []struct{ text, plain string }{
	{"cas: watch cursor older than the retained changes", "the watch cursor is older than the retained changes"},
	{"cas: this store's refs cannot be watched", "this store's refs cannot be watched"},
	{"cas: unsupported store format", "unsupported store format"},
	{"cas: invalid watch cursor", "invalid watch cursor"},
	{"cas: invalid ref name", "invalid ref name"},
	{"cas: object corrupt", "corrupt"},
	{"cas: hash collision", "hash collision"},
	{"cas: invalid hash", "invalid hash"},
	{"cas: not found", "not found"},
	{"cas: too large", "too large"},
	{"cas: conflict", "conflict"},
	{"cas: invalid", "invalid"},
	{"cas: locked", "locked"},
	{"cas: bad ref", "unreadable ref"},
	{"extract: unusable output", "unusable output"},
	{"moderator: output has no string status", "the output has no string status"},
	{"moderator: template field missing from output", "a template field is missing from the output"},
	{"moderator: unknown status", "unknown status"},
	{"moderator: unknown role", "unknown role"},
	{"moderator: bad template", "bad template"},
	{"agent: run failed", "the agent failed"},
	{"agent: replay diverged", "the replay diverged"},
	{"agent: replay exhausted", "the replayed thread has no more outputs"},
	{"context canceled", "interrupted"},
	{"context deadline exceeded", "timed out"},
}

// internalPrefixes are package names that the library puts before its
// own explanations ("extract: the frontmatter does not match ..."); a
// person reads the explanation alone.
var internalPrefixes = []string{"extract: ", "moderator: ", "agent: ", "cas: "}

// Message is an error's text as uwf prints it (the CLI) and answers it (the HTTP API): a sentence about the
// user's thing, without the library's internal words. A sentinel's text
// becomes its plain words ("cas: object corrupt" reads "corrupt"), but for
// "not found" where the message already says so, just before it or in the
// explanation after it ("config x is not set: cas: not found", "unknown
// agent: cas: not found: it is neither configured nor built in"): there
// it is dropped. A package name before an explanation ("failed: extract:
// the output ...") is dropped.
func Message(msg string) string {
	for _, w := range internalWords {
		for {
			i := strings.Index(msg, w.text)
			if i < 0 {
				break
			}
			before, after := msg[:i], msg[i+len(w.text):]
			head := strings.TrimSuffix(before, ": ")
			seg := head[strings.LastIndexAny(head, ":\n")+1:]
			next, explained := strings.CutPrefix(after, ": ")
			if j := strings.IndexAny(next, ":\n"); j >= 0 {
				next = next[:j]
			}
			if w.text == cas.ErrNotFound.Error() && (saysWhy(seg) || explained && saysWhy(next) || strings.HasPrefix(after, " (") && saysWhy(seg)) {
				if head == "" {
					msg = strings.TrimPrefix(after, ": ")
				} else {
					msg = head + after
				}
				continue
			}
			msg = before + w.plain + after
		}
	}
	for _, p := range internalPrefixes {
		msg = strings.ReplaceAll(msg, ": "+p, ": ")
		msg = strings.TrimPrefix(msg, p)
	}
	// The store's operations, said of the user's things.
	msg = absentObject().ReplaceAllString(msg, "object $1 was not found in the store")
	msg = absentLog().ReplaceAllString(msg, "ref $1 has no log")
	return msg
}

var (
	absentObject = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:get|touch|read) ([0-9A-HJKMNP-TV-Z]{13}): not found`)
	})
	absentLog = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\blog of ref (\S+): not found`) })
)

// saysWhy reports whether a part of a message already says what a "not
// found" next to it would.
func saysWhy(msg string) bool {
	low := strings.ToLower(msg)
	for _, w := range []string{"no ", "not ", "none", "missing", "unknown", "neither"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}
