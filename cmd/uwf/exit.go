package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

// Exit codes (SPEC §8); the app's help and docs/CLI.md list them.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitConflict    = 4
	exitInterrupted = 130
)

const exitCodesHelp = `
EXIT CODES:
   0    success
   1    failure (bad input file, invalid data, a failed step, a thread stopped at its step limit, a diverging replay, fsck found problems, ...)
   2    usage error (unknown command or flag, wrong arguments, an invalid hash, thread id or name)
   3    not found (an object, a ref, a schema, a workflow, a thread; "has" answering no)
   4    conflict (a thread or another ref moved meanwhile; a ref missing though its log says it exists)
   130  interrupted
`

// usageError is a command line that uwf cannot make sense of: an unknown
// command or flag, a missing or extra argument, an invalid hash or ref name
// given as an argument. It exits 2 and points at the command's --help.
type usageError struct {
	cmd string // the command whose --help to suggest, "uwf cas get"
	err error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v (see '%s --help')", e.err, e.cmd)
}

func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// silentError carries an exit status whose reason the command has already
// printed as its result ("has" printing "no"); exitCode prints nothing.
type silentError struct{ err error }

func (e *silentError) Error() string { return e.err.Error() }
func (e *silentError) Unwrap() error { return e.err }

// leftOutError is a listing that printed what it could and left damaged
// entries out, naming them: it exits 1 whatever their errors wrap (a
// thread or workflow whose node is missing is damage to the store, not a
// "not found" answer).
type leftOutError struct{ err error }

func (e *leftOutError) Error() string { return e.err.Error() }
func (e *leftOutError) Unwrap() error { return e.err }

// exitCode maps the error a command returned to the process's exit status
// and prints it once to w as "uwf: <message>". It is the only place that
// knows the table.
func exitCode(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var silent *silentError
	var invalid *registry.ValidationError
	switch {
	case errors.As(err, &silent):
	case errors.As(err, &invalid) && error(invalid) == err:
		// A file's problems, one "file:line:col: message" per line, as
		// compilers print them (editors jump to them), in a person's
		// words (a problem may quote a store error: "cas: not found").
		fmt.Fprintln(w, userMessage(err.Error()))
	default:
		fmt.Fprintf(w, "uwf: %s\n", userMessage(err.Error()))
	}
	var usage *usageError
	switch {
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, new(*leftOutError)):
		return exitFailure
	case errors.Is(err, cas.ErrNotFound):
		return exitNotFound
	case errors.Is(err, cas.ErrConflict):
		return exitConflict
	case errors.Is(err, cas.ErrInvalid):
		// Bad data (a file, a stored node), even if a hash inside it is
		// what is wrong: not a usage error.
		return exitFailure
	case errors.Is(err, cas.ErrInvalidHash), errors.Is(err, cas.ErrInvalidRefName):
		return exitUsage
	}
	return exitFailure
}

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

// userMessage is an error's text as uwf prints it: a sentence about the
// user's thing, without the library's internal words. A sentinel's text
// becomes its plain words ("cas: object corrupt" reads "corrupt"), but for
// "not found" where the message already says so, just before it or in the
// explanation after it ("config x is not set: cas: not found", "unknown
// agent: cas: not found: it is neither configured nor built in"): there
// it is dropped. A package name before an explanation ("failed: extract:
// the output ...") is dropped.
func userMessage(msg string) string {
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
