package cas

import (
	"context"
	"errors"
	"fmt"
)

// ProblemBuiltin is the kind of a [Problem] with a built-in schema: its
// object missing or corrupt, or its schemas/<name> ref missing, unreadable
// or pointing elsewhere. Commands never depend on either (built-ins are
// constants of the format); [Repo.RepairBuiltins] puts the known values
// back. A damaged built-in ref is reported once, as this kind (its message
// naming the ref's file if it cannot be read), not also as a
// [ProblemBadRef], [ProblemMissingRef], [ProblemLogMismatch],
// [ProblemMissingTarget] or [ProblemRef]: its right value is known, and so
// is the repair.
const ProblemBuiltin = "builtin"

// builtinsOfStore returns the built-ins a store at its recorded format
// version holds (version 1's if the backend records none).
func (r *Repo) builtinsOfStore(ctx context.Context) ([]Builtin, error) {
	v := FormatV1
	if fv, ok := r.raw.(FormatVersioner); ok {
		var err error
		if v, err = fv.FormatVersion(ctx); err != nil {
			return nil, fmt.Errorf("read the format version: %w", err)
		}
	}
	return BuiltinsAt(v), nil
}

// checkBuiltins reports the damage to the built-in schemas of the store's
// format version: each object must hold its known bytes and each ref
// schemas/<name> must point at it. It reads only those objects and refs.
func (r *Repo) checkBuiltins(ctx context.Context) ([]Problem, error) {
	bs, err := r.builtinsOfStore(ctx)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, b := range bs {
		_, err := r.st.Get(ctx, b.Hash)
		switch {
		case err == nil:
		case errors.Is(err, ErrNotFound):
			out = append(out, Problem{Hash: b.Hash, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the built-in schema %s is not in the store (commands use its known bytes; fsck --repair puts it back)", b.Name)})
		case errors.Is(err, ErrCorrupt):
			out = append(out, Problem{Hash: b.Hash, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the built-in schema %s is corrupt: %s (commands use its known bytes; fsck --repair puts them back)", b.Name, problemText(err, b.Hash))})
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out = append(out, Problem{Hash: b.Hash, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the built-in schema %s cannot be read: %s", b.Name, problemText(err, b.Hash))})
		}
		name := "schemas/" + b.Name
		h, err := r.raw.Get(ctx, name)
		switch {
		case err == nil && h == b.Hash:
		case err == nil:
			out = append(out, Problem{Ref: name, Hash: h, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the ref of the built-in schema %s must point at %s (fsck --repair moves it back)", b.Name, b.Hash)})
		case errors.Is(err, ErrNotFound):
			out = append(out, Problem{Ref: name, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the ref of the built-in schema %s is missing (fsck --repair creates it, pointing at %s)", b.Name, b.Hash)})
		case errors.Is(err, ErrBadRef):
			why := err.Error()
			if bad := (*BadRefError)(nil); errors.As(err, &bad) {
				why = bad.Err.Error()
				if bad.File != "" {
					why = "file " + bad.File + ": " + why
				}
			}
			out = append(out, Problem{Ref: name, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the ref of the built-in schema %s cannot be read: %s (fsck --repair rewrites it, pointing at %s)", b.Name, why, b.Hash)})
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out = append(out, Problem{Ref: name, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the ref of the built-in schema %s cannot be read: %v", b.Name, err)})
		}
	}
	return out, nil
}

// Repair is one thing [Repo.RepairBuiltins] put back.
type Repair struct {
	Hash Hash   // the built-in schema
	Ref  string // the ref moved or created; empty for an object put back
	Msg  string // what was done
}

// String formats the repair as one line.
func (rp Repair) String() string {
	if rp.Ref != "" {
		return fmt.Sprintf("ref %s -> %s: %s", rp.Ref, rp.Hash, rp.Msg)
	}
	return fmt.Sprintf("%s: %s", rp.Hash, rp.Msg)
}

// RepairBuiltins puts back the known values of the built-in schemas of the
// store's format version: a missing or corrupt object is stored again from
// its known bytes; a ref schemas/<name> that points elsewhere is moved
// back (compare-and-swap), and one that is missing or cannot be read (a
// damaged ref file, a *[BadRefError]) is replaced ([Refs.Replace]), each
// with a log entry "restore built-in schema <name>" (a replaced ref's
// entry starts from its log's newest value, so the repair does not read
// as its creation). It returns what it did, in order. Other refs and
// objects are never touched. A built-in object or ref that cannot be read
// for another reason (permissions, I/O), or whose repair fails, is named
// in the error (all of them, joined), which comes after the other
// built-ins are repaired; a failure to take the store's lock or a
// cancelled context ends the repair at once. RepairBuiltins is safe to
// run at any time, also concurrently with writers.
func (r *Repo) RepairBuiltins(ctx context.Context) ([]Repair, error) {
	bs, err := r.builtinsOfStore(ctx)
	if err != nil {
		return nil, err
	}
	var done []Repair
	var errs []error
	for _, b := range bs {
		_, err := r.st.Get(ctx, b.Hash)
		switch {
		case err == nil:
		case errorsIsAny(err, ErrNotFound, ErrCorrupt):
			unlock, err := r.st.Lock(ctx, false)
			if err != nil {
				return done, err
			}
			err = r.putBuiltin(ctx, b)
			unlock()
			if err != nil && ctx.Err() != nil {
				return done, ctx.Err()
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("put back built-in schema %s: %w", b.Name, err))
			} else {
				done = append(done, Repair{Hash: b.Hash, Msg: "put back the built-in schema " + b.Name})
			}
		default:
			if ctx.Err() != nil {
				return done, ctx.Err()
			}
			// Left as it is; the other built-ins are still repaired.
			errs = append(errs, fmt.Errorf("read built-in schema %s: %w", b.Name, err))
		}
		rp, err := r.repairBuiltinRef(ctx, b)
		switch {
		case err != nil && ctx.Err() != nil:
			return done, ctx.Err()
		case err != nil:
			errs = append(errs, err)
		case rp != nil:
			done = append(done, *rp)
		}
	}
	return done, errors.Join(errs...)
}

// repairBuiltinRef points schemas/<name> back at b, if it does not: what
// it did, or nil if the ref was sound.
func (r *Repo) repairBuiltinRef(ctx context.Context, b Builtin) (*Repair, error) {
	name := "schemas/" + b.Name
	msg := "restore built-in schema " + b.Name
	for attempt := 0; ; attempt++ {
		cur, err := r.raw.Get(ctx, name)
		switch {
		case err == nil && cur == b.Hash:
			return nil, nil
		case err == nil:
			err = r.refs.CompareAndSwap(ctx, name, cur, b.Hash, msg)
			var ce *ConflictError
			if errors.As(err, &ce) && attempt < 5 {
				continue // moved meanwhile: look again
			}
			if err != nil {
				return nil, fmt.Errorf("restore ref %s: %w", name, err)
			}
			return &Repair{Hash: b.Hash, Ref: name,
				Msg: fmt.Sprintf("moved the ref of the built-in schema %s back from %s", b.Name, cur)}, nil
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrBadRef):
			what := "created the ref of the built-in schema " + b.Name
			if errors.Is(err, ErrBadRef) {
				what = "rewrote the unreadable ref of the built-in schema " + b.Name
				if bad := (*BadRefError)(nil); errors.As(err, &bad) && bad.File != "" {
					what += " (file " + bad.File + ")"
				}
			}
			// Replace, not a create-only compare-and-swap: a ref deleted
			// behind uwf's back or damaged is logged as restored from its
			// log's newest value. Every writer of this ref writes b.Hash,
			// so there is nothing to lose to a concurrent one.
			if err := r.refs.Replace(ctx, name, b.Hash, msg); err != nil {
				return nil, fmt.Errorf("restore ref %s: %w", name, err)
			}
			return &Repair{Hash: b.Hash, Ref: name, Msg: what}, nil
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("read ref %s: %w", name, err)
		}
	}
}
