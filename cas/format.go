package cas

import (
	"context"
	"errors"
	"fmt"
)

// Format versions a store may be at (docs/FORMAT.md). A new store starts at
// [FormatV1]; it moves to [FormatV2] only when a version-2 kind is first
// written ([Repo.RequireVersion]).
const (
	// FormatV1 is the format of the first release: the built-in schemas of
	// SPEC §3 and nothing else.
	FormatV1 = 1
	// FormatV2 adds the built-in schemas listed in versionTwo. A
	// version-1 build refuses a version-2 store at Open.
	FormatV2 = 2
	// LatestFormat is the newest format version this build reads and
	// writes; Open accepts every version from FormatV1 to it.
	LatestFormat = FormatV2
)

// FormatVersioner is implemented by the [Refs] of a backend that records
// the store's format version. The disk, PostgreSQL and memory backends all
// do; [Repo.RequireVersion] fails on refs that do not.
type FormatVersioner interface {
	// FormatVersion returns the store's recorded format version.
	FormatVersion(ctx context.Context) (int, error)
	// BumpFormat moves the recorded version from from to to, atomically
	// with respect to any change of the refs in want (creation, move or
	// deletion): under the locks (or in the transaction) those changes
	// take, it first checks that every
	// ref in want exists and holds exactly its hash, and fails with a
	// *[ConflictError] naming the first that does not (nothing changed).
	// If the version is already to, it returns nil; if it is neither from
	// nor to, the error wraps [ErrFormat].
	BumpFormat(ctx context.Context, from, to int, want map[string]Hash) error
}

// ReservedNameError is returned by [Repo.RequireVersion] when a user schema
// holds a name that the new format version reserves for a built-in schema:
// the store cannot move to that version until the user schema is renamed.
type ReservedNameError struct {
	Name    string // the schema name, without "schemas/"
	Hash    Hash   // the user schema the ref holds
	Version int    // the version that reserves the name
}

func (e *ReservedNameError) Error() string {
	return fmt.Sprintf("cas: the store cannot move to format version %d: the user schema %s holds the name %q (ref schemas/%s), which version %d reserves for a built-in schema; register the schema under another name and remove that ref first",
		e.Version, e.Hash, e.Name, e.Name, e.Version)
}

// Unwrap makes the error match [ErrConflict].
func (e *ReservedNameError) Unwrap() error { return ErrConflict }

// FormatVersion returns the store's format version, as its backend records
// it. The error wraps [ErrFormat] if the backend records none.
func (r *Repo) FormatVersion(ctx context.Context) (int, error) {
	fv, ok := r.raw.(FormatVersioner)
	if !ok {
		return 0, fmt.Errorf("%w: the backend's refs (%T) record no format version", ErrFormat, r.raw)
	}
	return fv.FormatVersion(ctx)
}

// RequireVersion makes sure the store is at format version v or newer
// before a writer stores a node of a kind that version v added: it is the
// one way a store's format moves forward, and every writer of a new kind
// calls it first. On a store at an older version it stores the built-in
// schemas up to v, names each schemas/<name> (create-only, logged "create
// built-in schema <name>"), and then moves the recorded version (disk: the
// FORMAT file replaced under the refs lock and the new names' ref locks; PostgreSQL: schema_version in
// one transaction), checking again under that lock that the names hold the
// built-ins. It refuses with a *[ReservedNameError], changing nothing, if a
// user schema already holds one of the names. A crash part-way leaves the
// store at its old version with, at most, the new built-ins stored and
// named; the next call finishes the job. On a store already at v or newer
// it returns at once (after the first call, without reading the store),
// creating only the built-in refs a crash may have left missing.
//
// v must be between [FormatV1] and [LatestFormat]; otherwise the error wraps
// [ErrFormat]. RequireVersion is safe for concurrent use, by goroutines and
// processes.
func (r *Repo) RequireVersion(ctx context.Context, v int) error {
	if v < FormatV1 || v > LatestFormat {
		return fmt.Errorf("%w: format version %d: this build knows versions %d to %d", ErrFormat, v, FormatV1, LatestFormat)
	}
	if int(r.version.Load()) >= v {
		return nil
	}
	fv, ok := r.raw.(FormatVersioner)
	if !ok {
		return fmt.Errorf("%w: the backend's refs (%T) record no format version", ErrFormat, r.raw)
	}
	cur, err := fv.FormatVersion(ctx)
	if err != nil {
		return fmt.Errorf("read the format version: %w", err)
	}
	for from := cur; from < v; from++ {
		if err := r.bump(ctx, fv, from, from+1); err != nil {
			return err
		}
		cur = from + 1
	}
	// At v already (or a crash left a bump's refs half made): name any
	// built-in whose ref is missing, as the bump would have.
	if err := r.nameBuiltins(ctx, BuiltinsAt(cur)); err != nil {
		return err
	}
	r.version.Store(int32(cur))
	return nil
}

// bump moves the store from version from to version to.
func (r *Repo) bump(ctx context.Context, fv FormatVersioner, from, to int) error {
	var added []Builtin
	for _, b := range builtinList() {
		if b.Version == to {
			added = append(added, b)
		}
	}
	if err := r.checkReserved(ctx, added, to); err != nil {
		return err
	}
	if err := r.nameBuiltins(ctx, added); err != nil {
		return err
	}
	want := make(map[string]Hash, len(added))
	for _, b := range added {
		want["schemas/"+b.Name] = b.Hash
	}
	err := fv.BumpFormat(ctx, from, to, want)
	var ce *ConflictError
	if errors.As(err, &ce) {
		name := ce.Name[len("schemas/"):]
		return &ReservedNameError{Name: name, Hash: ce.Current, Version: to}
	}
	if err != nil {
		return fmt.Errorf("move the store to format version %d: %w", to, err)
	}
	r.log.Info("moved the store's format", "from", from, "to", to)
	return nil
}

// checkReserved fails with a *ReservedNameError if a ref schemas/<name> of
// one of bs holds anything but that built-in.
func (r *Repo) checkReserved(ctx context.Context, bs []Builtin, version int) error {
	for _, b := range bs {
		h, err := r.raw.Get(ctx, "schemas/"+b.Name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return fmt.Errorf("read ref schemas/%s: %w", b.Name, err)
		case h != b.Hash:
			return &ReservedNameError{Name: b.Name, Hash: h, Version: version}
		}
	}
	return nil
}

// nameBuiltins stores each of bs and creates its schemas/<name> ref where
// that is missing. A ref that holds something else is left alone (fsck
// reports it; a version bump checks it first).
func (r *Repo) nameBuiltins(ctx context.Context, bs []Builtin) error {
	for _, b := range bs {
		name := "schemas/" + b.Name
		_, err := r.raw.Get(ctx, name)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("read ref %s: %w", name, err)
		}
		if err := r.putBuiltin(ctx, b); err != nil {
			return err
		}
		// Through touched, not r.refs.CompareAndSwap: this is the bump,
		// which must not require itself again.
		err = r.refs.touched(ctx, name, false, 0, b.Hash, "create built-in schema "+b.Name, func() error {
			return r.raw.CompareAndSwap(ctx, name, 0, b.Hash, "create built-in schema "+b.Name)
		})
		var ce *ConflictError
		if errors.As(err, &ce) && ce.Current == b.Hash {
			continue // another process made it meanwhile
		}
		if err != nil {
			return fmt.Errorf("name built-in schema %s: %w", b.Name, err)
		}
		r.log.Info("named built-in schema", "name", b.Name, "hash", b.Hash)
	}
	return nil
}

// putBuiltin stores b's known bytes (a no-op that refreshes its age when
// they are there; corrupt bytes are replaced).
func (r *Repo) putBuiltin(ctx context.Context, b Builtin) error {
	h, err := r.st.Put(ctx, b.Node)
	if err != nil {
		return fmt.Errorf("store built-in schema %s: %w", b.Name, err)
	}
	if h != b.Hash {
		return fmt.Errorf("store built-in schema %s: the store returned %s, want %s", b.Name, h, b.Hash)
	}
	return nil
}

// checkOpenVersion reads the store's format version at Open, if the backend
// records one, and refuses versions this build does not know.
func (r *Repo) checkOpenVersion(ctx context.Context) error {
	fv, ok := r.raw.(FormatVersioner)
	if !ok {
		return nil
	}
	v, err := fv.FormatVersion(ctx)
	if err != nil {
		return fmt.Errorf("read the format version: %w", err)
	}
	if v < FormatV1 || v > LatestFormat {
		return fmt.Errorf("%w: the store is at format version %d, this build knows versions %d to %d: upgrade uwf",
			ErrFormat, v, FormatV1, LatestFormat)
	}
	return nil
}
