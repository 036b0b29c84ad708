package cas

import (
	"errors"
	"fmt"
)

// These errors can occur when reading or writing objects. Callers test for
// them with [errors.Is]; the returned errors wrap them with context.
var (
	// ErrNotFound is returned when no object or ref has the requested name.
	ErrNotFound = errors.New("cas: not found")
	// ErrCorrupt is returned when stored bytes do not hash to their address.
	ErrCorrupt = errors.New("cas: object corrupt")
	// ErrCollision is returned by Put when different, intact bytes already
	// live at the address of the new ones (XXH64 is not collision-resistant).
	ErrCollision = errors.New("cas: hash collision")
	// ErrTooLarge is returned when input exceeds the configured size limit.
	ErrTooLarge = errors.New("cas: too large")
	// ErrInvalidHash is wrapped by every hash parse error ([HashError]).
	ErrInvalidHash = errors.New("cas: invalid hash")
	// ErrInvalidRefName is returned for a ref name outside the grammar.
	ErrInvalidRefName = errors.New("cas: invalid ref name")
	// ErrConflict is wrapped by [ConflictError]: a compare-and-swap found a
	// value other than the expected one, or a ref name clashes with another.
	ErrConflict = errors.New("cas: conflict")
	// ErrInvalid is wrapped by errors about malformed input: JSON, YAML,
	// nodes, schemas and payloads that fail validation.
	ErrInvalid = errors.New("cas: invalid")
	// ErrLocked is returned when a lock that must not wait is held elsewhere
	// (a second GC while one runs).
	ErrLocked = errors.New("cas: locked")
	// ErrFormat is returned when a store's recorded format is unknown.
	ErrFormat = errors.New("cas: unsupported store format")
	// ErrBadRef is wrapped by [BadRefError]: a ref's stored form cannot be
	// read or parsed (a damaged ref file).
	ErrBadRef = errors.New("cas: bad ref")
)

// HashError reports text that is not a valid hash. It wraps [ErrInvalidHash].
type HashError struct {
	Input  string // the text as given
	Reason string // what is wrong with it
}

func (e *HashError) Error() string {
	return fmt.Sprintf("invalid hash %q: %s", e.Input, e.Reason)
}

// Unwrap returns [ErrInvalidHash].
func (e *HashError) Unwrap() error { return ErrInvalidHash }

// ObjectError records an error and the operation and object that caused it.
type ObjectError struct {
	Op   string // "get", "put", "touch", "delete", ...
	Hash Hash
	Err  error
}

func (e *ObjectError) Error() string { return e.Op + " " + e.Hash.String() + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ObjectError) Unwrap() error { return e.Err }

// ConflictError is returned by [Refs.CompareAndSwap] when the ref does not
// hold the expected value, or when the name clashes with an existing ref
// (differs only in case, or one is a folder of the other). It wraps
// [ErrConflict].
type ConflictError struct {
	Name     string // the ref being changed
	Expected Hash   // the old value the caller gave (zero: must not exist)
	Current  Hash   // what the ref holds now (zero: it does not exist)
	Clash    string // for a name clash: the existing ref's name; else empty
}

func (e *ConflictError) Error() string {
	if e.Clash != "" {
		return fmt.Sprintf("ref %s clashes with existing ref %s", e.Name, e.Clash)
	}
	cur := "does not exist"
	if !e.Current.IsZero() {
		cur = "is at " + e.Current.String()
	}
	if e.Expected.IsZero() {
		return fmt.Sprintf("ref %s already exists: it %s", e.Name, cur)
	}
	return fmt.Sprintf("ref %s moved: expected %s, it %s", e.Name, e.Expected, cur)
}

// Unwrap returns [ErrConflict].
func (e *ConflictError) Unwrap() error { return ErrConflict }

// BadRefError reports one ref whose stored form cannot be read or parsed:
// on disk, a ref file truncated, overwritten or unreadable. [Refs.List]
// yields one for each such ref and goes on listing the others; Get and
// CompareAndSwap of that ref return it; [Refs.Replace] overwrites it. It
// wraps [ErrBadRef] and Err.
type BadRefError struct {
	Name string // the ref's name as far as the backend can tell (disk: from its log, else the lower-cased file name)
	File string // where it is stored (disk: the ref file's path); empty if the backend has no files
	Err  error  // what is wrong with it
}

func (e *BadRefError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("ref %s cannot be read: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("ref %s cannot be read: file %s: %v", e.Name, e.File, e.Err)
}

// Unwrap returns [ErrBadRef] and Err.
func (e *BadRefError) Unwrap() []error { return []error{ErrBadRef, e.Err} }

// MissingRefError reports a ref that its log says exists (its newest entry
// has a non-zero New) but that does not: deleted behind the store's back
// (a ref file removed by hand), or, when the newest entry is the ref's
// creation, possibly a create that a crash interrupted (the disk store
// cannot tell the two apart). Its log is kept until [Repo.RestoreRef] or a
// forced change ([Repo.SetRef], [Repo.RemoveRef] with force) decides. It
// wraps [ErrConflict]: the ref and its log disagree.
type MissingRefError struct {
	Name     string
	Logged   Hash // the New of the log's newest entry
	Creation bool // that entry created the ref (zero Old)
}

func (e *MissingRefError) Error() string {
	if e.Creation {
		return fmt.Sprintf("ref %s is missing, or its creation was interrupted: its log's newest entry creates it at %s", e.Name, e.Logged)
	}
	return fmt.Sprintf("ref %s is missing: its log's newest entry says it is at %s", e.Name, e.Logged)
}

// Unwrap returns [ErrConflict].
func (e *MissingRefError) Unwrap() error { return ErrConflict }
