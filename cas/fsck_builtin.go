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
// back.
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
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out = append(out, Problem{Ref: name, Kind: ProblemBuiltin,
				Msg: fmt.Sprintf("the ref of the built-in schema %s cannot be read: %v (restore it from its log: uwf cas ref restore %s)", b.Name, err, name)})
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
// its known bytes, and a missing ref schemas/<name> is created, or one that
// points elsewhere moved back, each with a log entry "restore built-in
// schema <name>". It returns what it did, in order. A ref that cannot be
// read at all (a damaged ref file) is left alone: the error names it, and
// it is restored from its log by the refs' own repair. Other refs and
// objects are never touched. RepairBuiltins is safe to run at any time,
// also concurrently with writers.
func (r *Repo) RepairBuiltins(ctx context.Context) ([]Repair, error) {
	bs, err := r.builtinsOfStore(ctx)
	if err != nil {
		return nil, err
	}
	var done []Repair
	var unreadable error
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
			if err != nil {
				return done, err
			}
			done = append(done, Repair{Hash: b.Hash, Msg: "put back the built-in schema " + b.Name})
		default:
			return done, fmt.Errorf("read built-in schema %s: %w", b.Name, err)
		}
		name := "schemas/" + b.Name
		for attempt := 0; ; attempt++ {
			cur, err := r.raw.Get(ctx, name)
			switch {
			case err == nil && cur == b.Hash:
			case err == nil || errors.Is(err, ErrNotFound):
				err = r.refs.CompareAndSwap(ctx, name, cur, b.Hash, "restore built-in schema "+b.Name)
				var ce *ConflictError
				if errors.As(err, &ce) && attempt < 5 {
					continue // moved meanwhile: look again
				}
				if err != nil {
					return done, fmt.Errorf("restore ref %s: %w", name, err)
				}
				msg := "created the ref of the built-in schema " + b.Name
				if !cur.IsZero() {
					msg = fmt.Sprintf("moved the ref of the built-in schema %s back from %s", b.Name, cur)
				}
				done = append(done, Repair{Hash: b.Hash, Ref: name, Msg: msg})
			default:
				if ctx.Err() != nil {
					return done, ctx.Err()
				}
				if unreadable == nil {
					unreadable = fmt.Errorf("ref %s cannot be read, so it was not repaired (restore it from its log: uwf cas ref restore %s): %w", name, name, err)
				}
			}
			break
		}
	}
	return done, unreadable
}
