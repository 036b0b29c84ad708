package registry

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// These errors can occur when resolving, rolling back and configuring.
// Callers test for them with [errors.Is]; the returned errors wrap them with
// context. Errors about files (workflows, config.yaml, .env) are a
// *[ValidationError], which wraps [cas.ErrInvalid]; "no such workflow" errors
// wrap [cas.ErrNotFound]; a ref that moved meanwhile is a *[cas.ConflictError].
var (
	// ErrNotVersion is returned by [Registry.Rollback] when the hash asked
	// for is not a version in the workflow's history. It wraps
	// [cas.ErrNotFound].
	ErrNotVersion = fmt.Errorf("not a version of this workflow: %w", cas.ErrNotFound)
	// ErrUnknownAgent is returned by [Config.AgentFor] when the agent asked
	// for is neither configured nor built in. It wraps [cas.ErrNotFound].
	ErrUnknownAgent = fmt.Errorf("unknown agent: %w", cas.ErrNotFound)
	// ErrNoAgent is returned by [Config.AgentFor] when no agent is named:
	// no explicit agent, no override and no defaultAgent.
	ErrNoAgent = errors.New("no agent configured")
)

// Problem is one thing wrong with a file, at a 1-based line and column.
// Line 0 means the problem has no position (a workflow built in Go, or an
// empty file); Column 0 means only the line is known (a YAML syntax error).
type Problem struct {
	Line, Column int
	Msg          string
}

// String returns "line:col: msg", "line: msg" or "msg", by what is known.
func (p Problem) String() string {
	switch {
	case p.Line == 0:
		return p.Msg
	case p.Column == 0:
		return fmt.Sprintf("%d: %s", p.Line, p.Msg)
	}
	return fmt.Sprintf("%d:%d: %s", p.Line, p.Column, p.Msg)
}

// ValidationError lists every problem found in one file (a workflow,
// config.yaml or .env), sorted by position (problems without a position
// first). It wraps [cas.ErrInvalid].
type ValidationError struct {
	File     string // the file name as given; "" for a workflow built in Go
	Problems []Problem
}

// Error returns one problem per line, each as "file:line:col: message".
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File)
			if p.Line == 0 {
				b.WriteString(": ")
			} else {
				b.WriteByte(':')
			}
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns [cas.ErrInvalid].
func (e *ValidationError) Unwrap() error { return cas.ErrInvalid }

// problems collects the problems of one file.
type problems struct {
	file string
	list []Problem
}

func (ps *problems) add(at position, format string, args ...any) {
	ps.list = append(ps.list, Problem{Line: at.line, Column: at.col, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems as a *ValidationError, sorted, or nil if none.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := slices.Clone(ps.list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	list = slices.Compact(list)
	return &ValidationError{File: ps.file, Problems: list}
}
