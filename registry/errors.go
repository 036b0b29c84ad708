package registry

import (
	"fmt"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/yamldoc"
)

// These errors can occur when resolving and rolling back. Callers test for
// them with [errors.Is]; the returned errors wrap them with context. Errors
// about workflow files are a *[ValidationError], which wraps
// [cas.ErrInvalid]; "no such workflow" errors wrap [cas.ErrNotFound]; a ref
// that moved meanwhile is a *[cas.ConflictError].
var (
	// ErrNotVersion is returned by [Registry.Rollback] when the hash asked
	// for is not a version in the workflow's history. It wraps
	// [cas.ErrNotFound].
	ErrNotVersion = fmt.Errorf("not a version of this workflow: %w", cas.ErrNotFound)
)

// Problem is one thing wrong with a file, at a 1-based line and column.
// Line 0 means the problem has no position (a workflow built in Go, or an
// empty file); Column 0 means only the line is known (a YAML syntax error).
// Package config reports its files' problems with the same type.
type Problem = yamldoc.Problem

// ValidationError lists every problem found in one file, sorted by
// position (problems without a position first); its Error prints one
// "file:line:col: message" per line. It wraps [cas.ErrInvalid]. It is the
// same type as config.ValidationError, so one [errors.As] catches both.
type ValidationError = yamldoc.ValidationError

// problems collects the problems of one file.
type problems = yamldoc.Problems

// position is a 1-based line and column in the parsed file; zero if unknown.
type position = yamldoc.Position
