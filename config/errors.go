package config

import "github.com/uncaged/uwf/internal/yamldoc"

// Problem is one thing wrong with config.yaml or .env, at a 1-based line
// and column (0 where unknown). It is the same type as
// [github.com/uncaged/uwf/registry.Problem].
type Problem = yamldoc.Problem

// ValidationError lists every problem found in config.yaml or .env, sorted
// by position; its Error prints one "file:line:col: message" per line. It
// wraps [cas.ErrInvalid]. It is the same type as
// [github.com/uncaged/uwf/registry.ValidationError], so one [errors.As]
// catches both.
type ValidationError = yamldoc.ValidationError
