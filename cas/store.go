package cas

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Object describes one stored object, as [Store.All] lists it.
type Object struct {
	Hash Hash
	Size int64 // bytes
	// Time is when the object was last put, touched or made a ref's target,
	// by the store's clock. Its age, for GC, is measured from it.
	Time time.Time
}

// Getter returns a copy of the object at h; the caller owns the slice. The
// error wraps [ErrNotFound] if absent and [ErrCorrupt] if the stored bytes no
// longer hash to h (they are never returned).
type Getter interface {
	Get(ctx context.Context, h Hash) ([]byte, error)
}

// Putter stores data and returns its address. Re-storing present content is
// a no-op that returns the same hash and refreshes the object's age. If
// different, intact bytes already live at that address the error wraps
// [ErrCollision] and nothing is stored; if the bytes there are corrupt they
// are replaced atomically.
type Putter interface {
	Put(ctx context.Context, data []byte) (Hash, error)
}

// Store holds immutable objects addressed by their hash: a backend. It stores
// and verifies bytes only; schemas, edges and closure belong to [Repo].
// Everything GC needs is in this contract. Implementations are safe for
// concurrent use, by goroutines and (for persistent backends) by processes.
type Store interface {
	Getter
	Putter
	// Has reports whether an object is stored at h, without verifying it.
	Has(ctx context.Context, h Hash) (bool, error)
	// Touch refreshes the age of the object at h. The error wraps
	// [ErrNotFound] if it is absent.
	Touch(ctx context.Context, h Hash) error
	// All lists every object with its size and age, in no set order. A
	// listing that fails yields the error and stops.
	All(ctx context.Context) iter.Seq2[Object, error]
	// DeleteIfOlder deletes the object at h only if its Time is still before
	// cutoff, atomically with respect to Touch and Put on the same object.
	// It reports whether it deleted; an absent object is (false, nil).
	DeleteIfOlder(ctx context.Context, h Hash, cutoff time.Time) (bool, error)
	// DeleteIfOlderBatch does what DeleteIfOlder does for every hash of
	// hs, each object atomically with respect to Touch and Put on it (each
	// object is deleted or kept on its own; the batch is not one atomic
	// step), and returns those it deleted, in the order of hs. An absent
	// object is not deleted and is no error. On error some objects may
	// have been deleted: deleted names those known to be.
	DeleteIfOlderBatch(ctx context.Context, hs []Hash, cutoff time.Time) (deleted []Hash, err error)
	// Lock takes the store-wide lock: shared for writers (around "check the
	// edges present, put, move the ref"), exclusive for a GC sweep batch. It
	// waits until the lock is granted or ctx is done. unlock is idempotent.
	Lock(ctx context.Context, exclusive bool) (unlock func(), err error)
	// LockGC takes the lock that keeps two GCs from running at once. It does
	// not wait: if another GC holds it the error wraps [ErrLocked]. The lock
	// is released by unlock or when the holding process dies.
	LockGC(ctx context.Context) (unlock func(), err error)
	// Now returns the time by the store's clock, the one Object.Time uses
	// (the server's, for a shared database).
	Now(ctx context.Context) (time.Time, error)
}

// BatchPutter is a [Store] fast path: PutBatch stores many objects with one
// flush point instead of one per object. It returns the hashes in input
// order once all objects are durable. On error some objects may have been
// stored (each one whole); none is half-written.
type BatchPutter interface {
	PutBatch(ctx context.Context, data [][]byte) ([]Hash, error)
}

// PutBatch stores every element of data, with s's PutBatch if it has one,
// else with one Put each.
func PutBatch(ctx context.Context, s Putter, data [][]byte) ([]Hash, error) {
	if b, ok := s.(BatchPutter); ok {
		return b.PutBatch(ctx, data)
	}
	hs := make([]Hash, len(data))
	for i, d := range data {
		h, err := s.Put(ctx, d)
		if err != nil {
			return nil, err
		}
		hs[i] = h
	}
	return hs, nil
}

// BatchGetter is a [Store] fast path for reading many objects at once (GC
// reads every node, a batch at a time). GetBatch returns, for each hash of hs in
// order, a copy of its bytes or, in errs, the error Get would give for it
// (wrapping [ErrNotFound] or [ErrCorrupt]); err is a failure of the whole
// batch.
type BatchGetter interface {
	GetBatch(ctx context.Context, hs []Hash) (data [][]byte, errs []error, err error)
}

// GetBatch reads every object of hs as [BatchGetter] specifies, with s's
// GetBatch if it has one, else with one Get each.
func GetBatch(ctx context.Context, s Getter, hs []Hash) (data [][]byte, errs []error, err error) {
	if b, ok := s.(BatchGetter); ok {
		return b.GetBatch(ctx, hs)
	}
	data, errs = make([][]byte, len(hs)), make([]error, len(hs))
	for i, h := range hs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		data[i], errs[i] = s.Get(ctx, h)
	}
	return data, errs, nil
}

// BatchHaser is a [Store] fast path for looking up many objects at once
// (GC looks up the nodes of derived-cache entries a batch at a time).
// HasBatch reports, for each hash of hs in order, whether an object is
// stored there, as Has does.
type BatchHaser interface {
	HasBatch(ctx context.Context, hs []Hash) ([]bool, error)
}

// HasBatch looks up every hash of hs as [BatchHaser] specifies, with s's
// HasBatch if it has one, else with one Has each.
func HasBatch(ctx context.Context, s Store, hs []Hash) ([]bool, error) {
	if b, ok := s.(BatchHaser); ok {
		return b.HasBatch(ctx, hs)
	}
	out := make([]bool, len(hs))
	for i, h := range hs {
		ok, err := s.Has(ctx, h)
		if err != nil {
			return nil, err
		}
		out[i] = ok
	}
	return out, nil
}

// LinkedPutter is a [Store] fast path for [Repo.PutNode] and
// [Repo.PutNodes]: PutLinked does what the repo otherwise does in many
// calls, in one atomic step under the store-wide shared lock (which it
// takes and releases itself): it refreshes the age of every object in
// edges, as Touch does, and, only if all of them are present, stores data
// as PutBatch does, returning the hashes in input order. If an edge is
// absent nothing is stored (the edges present may have been refreshed) and
// the error is an *[ObjectError] with Op "touch" wrapping [ErrNotFound];
// the repo then takes the slow path, which names the node and the edge (or
// puts back a lost built-in schema).
//
// Unlike Touch and Put, the fast paths may leave alone an age refreshed
// within the last second while no GC holds the GC lock ([Store.LockGC]):
// a GC that starts later takes its barrier (the exclusive store-wide
// lock) after the call, so it sees the new node and needs no refresh, and
// a grace period is then honoured to within that second.
type LinkedPutter interface {
	PutLinked(ctx context.Context, data [][]byte, edges []Hash) ([]Hash, error)
}

// TouchingSwapper is a [Refs] fast path for the ref moves of [Repo.Refs]:
// SwapTouching is CompareAndSwap that first refreshes new's age in st, as
// st's Touch does, under st's store-wide shared lock, all in one atomic
// step. It reports ok false, having done nothing, if st is not the store
// these refs belong to, nor wraps it (a wrapper reports the store it wraps
// with a method Unwrap() Store; one that changes what Touch does must not
// have it): the repo then takes the slow path. If new is
// absent from st nothing changes and the error is an *[ObjectError] with
// Op "touch" wrapping [ErrNotFound]. new is never zero. Its refresh may be
// skipped as [LinkedPutter]'s may.
type TouchingSwapper interface {
	SwapTouching(ctx context.Context, st Store, name string, old, new Hash, message string) (ok bool, err error)
}

// isAbsentTouch reports whether err is a fast path's "an object to
// refresh is absent".
func isAbsentTouch(err error) bool {
	var oe *ObjectError
	return errors.As(err, &oe) && oe.Op == "touch" && errors.Is(err, ErrNotFound)
}
