package cas

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// RestoreRef brings ref name back to a value its log holds, like a restore
// from git's reflog: to, if not zero, which must be the old or new value
// of one of its log's entries, else the newest non-zero value its log
// records. The target must be in the store. A ref that exists and can be
// read is moved by compare-and-swap (a *[ConflictError] if it moves
// meanwhile); a ref that is missing (see [MissingRefError]) or cannot be
// read (a *[BadRefError]) is replaced ([Refs.Replace]), so the restore is
// logged as a change from the last logged value, not as a creation (a ref
// deleted through uwf, whose log ends with the deletion, is re-created).
// Restoring a ref that already holds the target changes nothing. It
// returns the value restored. Errors wrap [ErrNotFound] when name has no
// log, the log holds no value (or not to), or the target is not in the
// store; [ErrInvalidRefName] for a bad name.
func (r *Repo) RestoreRef(ctx context.Context, name string, to Hash) (Hash, error) {
	if err := ValidateRefName(name); err != nil {
		return 0, err
	}
	entries, err := r.raw.Log(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("restore ref %s: %w", name, err)
	}
	target := to
	if target.IsZero() {
		for _, e := range slices.Backward(entries) {
			if !e.New.IsZero() {
				target = e.New
				break
			}
		}
		if target.IsZero() {
			return 0, fmt.Errorf("restore ref %s: %w: its log records no value", name, ErrNotFound)
		}
	} else if !slices.ContainsFunc(entries, func(e LogEntry) bool { return e.Old == target || e.New == target }) {
		return 0, fmt.Errorf("restore ref %s: %w: %s is not in its log", name, ErrNotFound, target)
	}
	if ok, err := r.st.Has(ctx, target); err != nil {
		return 0, fmt.Errorf("restore ref %s: %w", name, err)
	} else if !ok {
		return 0, fmt.Errorf("restore ref %s to %s: %w: the node is not in the store (collected by GC?)", name, target, ErrNotFound)
	}
	msg := "restore from log to " + target.String()
	cur, err := r.raw.Get(ctx, name)
	switch {
	case err == nil && cur == target:
		return target, nil
	case err == nil:
		err = r.refs.CompareAndSwap(ctx, name, cur, target, msg)
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrBadRef):
		err = r.refs.Replace(ctx, name, target, msg)
	}
	if err != nil {
		return 0, fmt.Errorf("restore ref %s: %w", name, err)
	}
	return target, nil
}

// SetRef points ref name at h, creating it if need be, as `uwf cas ref set`
// does: a compare-and-swap from the value it holds (a *[ConflictError] if
// it moves meanwhile). Without force it refuses a ref that cannot be read
// (the *[BadRefError]) and a missing ref (a *[MissingRefError]: its log
// says it exists; restore it, or decide with force); with force it
// replaces either ([Refs.Replace]). h must be in the store (the error
// wraps [ErrNotFound]).
func (r *Repo) SetRef(ctx context.Context, name string, h Hash, force bool) error {
	if h.IsZero() {
		return fmt.Errorf("set ref %s: %w: the zero hash", name, ErrInvalidHash)
	}
	return r.changeRef(ctx, name, h, force, "set")
}

// RemoveRef deletes ref name, as `uwf cas ref rm` does, by compare-and-swap
// from the value it holds. A ref that does not exist is an error wrapping
// [ErrNotFound]. Without force it refuses a ref that cannot be read (the
// *[BadRefError]) and a missing ref (a *[MissingRefError]); with force it
// removes the first and records the second as deleted, so its log is
// pruned like any deleted ref's ([Refs.Replace]).
func (r *Repo) RemoveRef(ctx context.Context, name string, force bool) error {
	return r.changeRef(ctx, name, 0, force, "rm")
}

func (r *Repo) changeRef(ctx context.Context, name string, h Hash, force bool, verb string) error {
	if err := ValidateRefName(name); err != nil {
		return err
	}
	msg := verb
	if force {
		msg += " --force"
	}
	cur, err := r.raw.Get(ctx, name)
	switch {
	case err == nil:
		if cur == h {
			return nil
		}
		err = r.refs.CompareAndSwap(ctx, name, cur, h, msg)
	case errors.Is(err, ErrBadRef):
		if force {
			err = r.refs.Replace(ctx, name, h, msg)
		}
	case errors.Is(err, ErrNotFound):
		missing, merr := r.missing(ctx, name)
		switch {
		case merr != nil:
			err = merr
		case missing != nil && force:
			err = r.refs.Replace(ctx, name, h, msg)
		case missing != nil:
			err = missing
		case !h.IsZero():
			err = r.refs.CompareAndSwap(ctx, name, 0, h, msg)
		}
	}
	if err != nil {
		return fmt.Errorf("%s ref %s: %w", verb, name, err)
	}
	return nil
}

// missing returns a *MissingRefError if ref name, which does not exist,
// has a log whose newest entry says it does; else nil.
func (r *Repo) missing(ctx context.Context, name string) (*MissingRefError, error) {
	entries, err := r.raw.Log(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return MissingRef(name, entries), nil
}

// MissingRef is the one test of a missing ref: given the log of ref name
// (oldest first, as [Refs.Log] returns it), which the caller found not to
// exist, it returns a *[MissingRefError] if the log's newest entry says
// the ref exists (a non-zero New), else nil (no log, or one that ends
// with the ref's deletion). The error's Logged is the value the ref
// should hold, and Creation tells a [ProblemMissingRefOrInterruptedCreate]
// from a [ProblemMissingRef].
func MissingRef(name string, entries []LogEntry) *MissingRefError {
	if len(entries) == 0 {
		return nil
	}
	e := entries[len(entries)-1]
	if e.New.IsZero() {
		return nil
	}
	return &MissingRefError{Name: name, Logged: e.New, Creation: e.Old.IsZero()}
}
