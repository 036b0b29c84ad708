package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/usermsg"
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

// userMessage is an error's text as uwf prints it, without the library's
// internal words (internal/usermsg, shared with the HTTP API).
func userMessage(msg string) string { return usermsg.Message(msg) }
