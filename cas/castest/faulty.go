package castest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"
	"time"

	"github.com/uncaged/uwf/cas"
)

// ErrInjected is a ready-made error for Fail functions, so a test can tell
// an injected failure from a real one with [errors.Is].
var ErrInjected = errors.New("castest: injected fault")

// FaultyStore wraps a store and fails the calls its Fail function chooses:
// the error-injecting wrapper for testing failure paths above a backend.
//
// Before each call FaultyStore asks Fail(op, h); a nil Fail or a nil result
// passes the call through to Store, anything else is returned as it is
// (not wrapped) and Store is not called. The ops and their hashes:
//
//	"get", "has", "touch", "delete"   the object's hash (delete: DeleteIfOlder)
//	"put"                             the hash the data would get, cas.Sum(data)
//	"putbatch"                        zero once for the whole batch (failing it
//	                                  stores nothing), then each object's hash in
//	                                  order (failing one stores those before it)
//	"all"                             zero before listing (the error is yielded
//	                                  and the listing stops), then each object's
//	                                  hash before it is yielded (the error is
//	                                  yielded instead, and the listing stops)
//	"lock", "lockgc", "now"           zero (Lock, shared or exclusive; LockGC; Now)
//
// PutBatch passes the batch to Store's PutBatch, or its Put, through
// [cas.PutBatch]: the "put" op is not consulted for it. A FaultyStore is safe
// for concurrent use if Store and Fail are.
type FaultyStore struct {
	cas.Store
	Fail func(op string, h cas.Hash) error
}

var (
	_ cas.Store       = (*FaultyStore)(nil)
	_ cas.BatchPutter = (*FaultyStore)(nil)
)

func (f *FaultyStore) fail(op string, h cas.Hash) error {
	if f.Fail == nil {
		return nil
	}
	return f.Fail(op, h)
}

// Get fails as Fail("get", h) says, else calls Store.Get.
func (f *FaultyStore) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	if err := f.fail("get", h); err != nil {
		return nil, err
	}
	return f.Store.Get(ctx, h)
}

// Put fails as Fail("put", cas.Sum(data)) says, else calls Store.Put.
func (f *FaultyStore) Put(ctx context.Context, data []byte) (cas.Hash, error) {
	if err := f.fail("put", cas.Sum(data)); err != nil {
		return 0, err
	}
	return f.Store.Put(ctx, data)
}

// PutBatch fails as Fail("putbatch", 0) says, storing nothing; else, if
// Fail("putbatch", h) fails an object, it stores the objects before that one
// and returns the error; else it stores the batch with [cas.PutBatch].
func (f *FaultyStore) PutBatch(ctx context.Context, data [][]byte) ([]cas.Hash, error) {
	if err := f.fail("putbatch", 0); err != nil {
		return nil, err
	}
	for i, d := range data {
		if err := f.fail("putbatch", cas.Sum(d)); err != nil {
			if _, perr := cas.PutBatch(ctx, f.Store, data[:i]); perr != nil {
				return nil, perr
			}
			return nil, err
		}
	}
	return cas.PutBatch(ctx, f.Store, data)
}

// Has fails as Fail("has", h) says, else calls Store.Has.
func (f *FaultyStore) Has(ctx context.Context, h cas.Hash) (bool, error) {
	if err := f.fail("has", h); err != nil {
		return false, err
	}
	return f.Store.Has(ctx, h)
}

// Touch fails as Fail("touch", h) says, else calls Store.Touch.
func (f *FaultyStore) Touch(ctx context.Context, h cas.Hash) error {
	if err := f.fail("touch", h); err != nil {
		return err
	}
	return f.Store.Touch(ctx, h)
}

// All lists Store's objects, failing as Fail("all", 0) says before the
// listing and as Fail("all", o.Hash) says before each object.
func (f *FaultyStore) All(ctx context.Context) iter.Seq2[cas.Object, error] {
	return func(yield func(cas.Object, error) bool) {
		if err := f.fail("all", 0); err != nil {
			yield(cas.Object{}, err)
			return
		}
		for o, err := range f.Store.All(ctx) {
			if err == nil {
				if ferr := f.fail("all", o.Hash); ferr != nil {
					yield(cas.Object{}, ferr)
					return
				}
			}
			if !yield(o, err) {
				return
			}
		}
	}
}

// DeleteIfOlder fails as Fail("delete", h) says, deleting nothing, else
// calls Store.DeleteIfOlder.
func (f *FaultyStore) DeleteIfOlder(ctx context.Context, h cas.Hash, cutoff time.Time) (bool, error) {
	if err := f.fail("delete", h); err != nil {
		return false, err
	}
	return f.Store.DeleteIfOlder(ctx, h, cutoff)
}

// DeleteIfOlderBatch fails as Fail("delete", h) says for the first hash
// of hs that has such a failure, having deleted (with
// Store.DeleteIfOlderBatch) only the hashes before it; with none it calls
// Store.DeleteIfOlderBatch.
func (f *FaultyStore) DeleteIfOlderBatch(ctx context.Context, hs []cas.Hash, cutoff time.Time) ([]cas.Hash, error) {
	for i, h := range hs {
		if err := f.fail("delete", h); err != nil {
			deleted, derr := f.Store.DeleteIfOlderBatch(ctx, hs[:i], cutoff)
			if derr != nil {
				return deleted, derr
			}
			return deleted, err
		}
	}
	return f.Store.DeleteIfOlderBatch(ctx, hs, cutoff)
}

// Lock fails as Fail("lock", 0) says, else calls Store.Lock.
func (f *FaultyStore) Lock(ctx context.Context, exclusive bool) (func(), error) {
	if err := f.fail("lock", 0); err != nil {
		return nil, err
	}
	return f.Store.Lock(ctx, exclusive)
}

// LockGC fails as Fail("lockgc", 0) says, else calls Store.LockGC.
func (f *FaultyStore) LockGC(ctx context.Context) (func(), error) {
	if err := f.fail("lockgc", 0); err != nil {
		return nil, err
	}
	return f.Store.LockGC(ctx)
}

// Now fails as Fail("now", 0) says, else calls Store.Now.
func (f *FaultyStore) Now(ctx context.Context) (time.Time, error) {
	if err := f.fail("now", 0); err != nil {
		return time.Time{}, err
	}
	return f.Store.Now(ctx)
}

// FaultyRefs wraps refs and fails the calls its Fail function chooses, like
// [FaultyStore]. Before each call it asks Fail(op, name); a nil Fail or a
// nil result passes the call through to Refs, anything else is returned as
// it is and Refs is not called. The ops and their names:
//
//	"get", "cas", "replace", "log", "import"
//	                                the ref's name (cas: CompareAndSwap; import: ImportLog)
//	"list"                          the prefix before listing, then each ref's name
//	                                before it is yielded (a failure is yielded
//	                                and the listing stops)
//	"logs"                          "" before listing, then each name, as for "list"
//	"prune"                         "" (PruneLog)
//	"watch"                         the prefix (Watch: a failure is yielded
//	                                and the watch ends), "" (WatchHead)
//
// Watch and WatchHead pass through to Refs if it implements
// [cas.Watcher], and fail wrapping [cas.ErrWatchUnsupported] if not.
//
// A FaultyRefs is safe for concurrent use if Refs and Fail are.
type FaultyRefs struct {
	cas.Refs
	Fail func(op, name string) error
}

var _ cas.Refs = (*FaultyRefs)(nil)

func (f *FaultyRefs) fail(op, name string) error {
	if f.Fail == nil {
		return nil
	}
	return f.Fail(op, name)
}

// Get fails as Fail("get", name) says, else calls Refs.Get.
func (f *FaultyRefs) Get(ctx context.Context, name string) (cas.Hash, error) {
	if err := f.fail("get", name); err != nil {
		return 0, err
	}
	return f.Refs.Get(ctx, name)
}

// List lists Refs' refs, failing as Fail("list", prefix) says before the
// listing and as Fail("list", ref.Name) says before each ref.
func (f *FaultyRefs) List(ctx context.Context, prefix string) iter.Seq2[cas.Ref, error] {
	return func(yield func(cas.Ref, error) bool) {
		if err := f.fail("list", prefix); err != nil {
			yield(cas.Ref{}, err)
			return
		}
		for ref, err := range f.Refs.List(ctx, prefix) {
			if err == nil {
				if ferr := f.fail("list", ref.Name); ferr != nil {
					yield(cas.Ref{}, ferr)
					return
				}
			}
			if !yield(ref, err) {
				return
			}
		}
	}
}

// CompareAndSwap fails as Fail("cas", name) says, changing nothing, else
// calls Refs.CompareAndSwap.
func (f *FaultyRefs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if err := f.fail("cas", name); err != nil {
		return err
	}
	return f.Refs.CompareAndSwap(ctx, name, old, new, message)
}

// Replace fails as Fail("replace", name) says, changing nothing, else
// calls Refs.Replace.
func (f *FaultyRefs) Replace(ctx context.Context, name string, new cas.Hash, message string) error {
	if err := f.fail("replace", name); err != nil {
		return err
	}
	return f.Refs.Replace(ctx, name, new, message)
}

// Log fails as Fail("log", name) says, else calls Refs.Log.
func (f *FaultyRefs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	if err := f.fail("log", name); err != nil {
		return nil, err
	}
	return f.Refs.Log(ctx, name)
}

// Logs lists Refs' log names, failing as Fail("logs", "") says before the
// listing and as Fail("logs", name) says before each name.
func (f *FaultyRefs) Logs(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := f.fail("logs", ""); err != nil {
			yield("", err)
			return
		}
		for name, err := range f.Refs.Logs(ctx) {
			if err == nil {
				if ferr := f.fail("logs", name); ferr != nil {
					yield("", ferr)
					return
				}
			}
			if !yield(name, err) {
				return
			}
		}
	}
}

// PruneLog fails as Fail("prune", "") says, removing nothing, else calls
// Refs.PruneLog.
func (f *FaultyRefs) PruneLog(ctx context.Context, before time.Time, prefixes ...cas.PrefixCutoff) (int, error) {
	if err := f.fail("prune", ""); err != nil {
		return 0, err
	}
	return f.Refs.PruneLog(ctx, before, prefixes...)
}

// ImportLog fails as Fail("import", name) says, changing nothing, else
// calls Refs.ImportLog.
func (f *FaultyRefs) ImportLog(ctx context.Context, name string, entries []cas.LogEntry) error {
	if err := f.fail("import", name); err != nil {
		return err
	}
	return f.Refs.ImportLog(ctx, name, entries)
}

// The helpers below build Fail functions for both wrappers: K is cas.Hash
// for a [FaultyStore] and string for [FaultyRefs]. When nothing fixes K,
// name it: FailOp[cas.Hash](ErrInjected, "put"). All of them are safe for
// concurrent use.

// FailOp returns a Fail function that fails every call of the given ops
// with err, or every call at all if no op is given.
func FailOp[K comparable](err error, ops ...string) func(op string, key K) error {
	return func(op string, _ K) error {
		if matches(ops, op) {
			return err
		}
		return nil
	}
}

// FailOn returns a Fail function that fails the calls of op about key (a
// hash or a ref name) with err.
func FailOn[K comparable](op string, key K, err error) func(op string, key K) error {
	return func(o string, k K) error {
		if o == op && k == key {
			return err
		}
		return nil
	}
}

// FailAfter returns a Fail function that lets the first n calls of the
// given ops (of any op, if none is given) through and fails every later one
// with err: a backend that breaks mid-way.
func FailAfter[K comparable](n int, err error, ops ...string) func(op string, key K) error {
	var calls atomic.Int64
	return func(op string, _ K) error {
		if matches(ops, op) && calls.Add(1) > int64(n) {
			return err
		}
		return nil
	}
}

// FailFirst returns a Fail function that fails the first n calls of the
// given ops (of any op, if none is given) with err and lets later ones
// through: a transient fault, for testing retries.
func FailFirst[K comparable](n int, err error, ops ...string) func(op string, key K) error {
	var calls atomic.Int64
	return func(op string, _ K) error {
		if matches(ops, op) && calls.Add(1) <= int64(n) {
			return err
		}
		return nil
	}
}

// FailAny returns a Fail function that asks each of fails in turn and
// returns the first non-nil error. Each is asked only until one fails, so
// counting helpers after it see fewer calls.
func FailAny[K comparable](fails ...func(op string, key K) error) func(op string, key K) error {
	return func(op string, key K) error {
		for _, f := range fails {
			if err := f(op, key); err != nil {
				return err
			}
		}
		return nil
	}
}

func matches(ops []string, op string) bool { return len(ops) == 0 || slices.Contains(ops, op) }

var _ cas.Watcher = (*FaultyRefs)(nil)

// WatchHead fails as Fail("watch", "") says, else calls Refs.WatchHead.
func (f *FaultyRefs) WatchHead(ctx context.Context) (cas.Cursor, error) {
	if err := f.fail("watch", ""); err != nil {
		return "", err
	}
	w, ok := f.Refs.(cas.Watcher)
	if !ok {
		return "", fmt.Errorf("%w (%T)", cas.ErrWatchUnsupported, f.Refs)
	}
	return w.WatchHead(ctx)
}

// Watch fails as Fail("watch", prefix) says (the failure is yielded and
// the watch ends), else yields what Refs.Watch yields.
func (f *FaultyRefs) Watch(ctx context.Context, prefix string, after cas.Cursor) iter.Seq2[cas.Event, error] {
	return func(yield func(cas.Event, error) bool) {
		if err := f.fail("watch", prefix); err != nil {
			yield(cas.Event{}, err)
			return
		}
		w, ok := f.Refs.(cas.Watcher)
		if !ok {
			yield(cas.Event{}, fmt.Errorf("%w (%T)", cas.ErrWatchUnsupported, f.Refs))
			return
		}
		for e, err := range w.Watch(ctx, prefix, after) {
			if !yield(e, err) {
				return
			}
		}
	}
}
