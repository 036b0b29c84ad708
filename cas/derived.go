package cas

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
)

// Derived is a store's droppable cache of derived entries: small values a
// higher layer computed from nodes and refs (a thread's step counts, where
// it was forked) and keeps to save recomputing them. It is not part of the
// format: deleting any entry, or all of them, loses nothing; export and
// import do not carry it; fsck does not verify it, and [Repo.GC] drops the
// entries of nodes and refs that are gone. An entry may be missing,
// stale, torn or forged, so every reader checks it against the nodes it
// describes and recomputes it when it does not hold.
//
// A key is "<kind>/<rest>", at most 300 bytes, of printable ASCII without
// spaces. Two kinds have a meaning here: keys "ref/<name>" describe the
// current incarnation of ref name, and [Repo.Refs] drops them whenever the
// ref is created, deleted, replaced or has log entries imported; other
// kinds (such as "chain/<hash>") describe immutable nodes, so they never go
// stale, only bad; a key "<kind>/<HASH>" whose rest is a canonical hash
// describes the node at that hash, and is an orphan once it is gone.
//
// A [Store] that also implements Derived keeps the entries with it (a disk
// store in a folder, PostgreSQL in a table); [Repo.Derived] gives any other
// store a cache in the Repo's memory.
type Derived interface {
	// GetDerived returns the entry at key; ok is false if there is none.
	GetDerived(ctx context.Context, key string) (data []byte, ok bool, err error)
	// PutDerived sets the entry at key to data, replacing any. It need not
	// be durable: a lost entry is recomputed.
	PutDerived(ctx context.Context, key string, data []byte) error
	// DropDerived removes the entries at keys, those there are.
	DropDerived(ctx context.Context, keys ...string) error
	// DerivedKeys lists the keys of the entries, in no set order; an
	// entry put or dropped during the listing may or may not be listed.
	// An entry whose key names a node may be kept with the node itself
	// (the disk store keeps it in an attribute of the node's file), so
	// that it goes with the node; such an entry need not be listed. Every
	// entry that can outlive its subject (a ref's, a node's kept apart)
	// is listed. A
	// listing that fails yields the error and stops. It holds no lock and
	// a persistent store's keeps at most a page of keys in
	// memory (a folder's, a query's).
	DerivedKeys(ctx context.Context) iter.Seq2[string, error]
}

// MaxDerivedKeyLen is the longest key a [Derived] cache accepts.
const MaxDerivedKeyLen = 300

// ValidateDerivedKey checks a [Derived] key: "<kind>/<rest>", kind of
// lower-case letters, at most [MaxDerivedKeyLen] bytes of printable ASCII
// without spaces. The error wraps [ErrInvalid].
func ValidateDerivedKey(key string) error {
	kind, rest, ok := strings.Cut(key, "/")
	if !ok || kind == "" || rest == "" || len(key) > MaxDerivedKeyLen {
		return fmt.Errorf("%w: derived-cache key %q: want <kind>/<rest>, at most %d bytes", ErrInvalid, key, MaxDerivedKeyLen)
	}
	for i := range len(kind) {
		if kind[i] < 'a' || kind[i] > 'z' {
			return fmt.Errorf("%w: derived-cache key %q: its kind is not lower-case letters", ErrInvalid, key)
		}
	}
	for i := range len(key) {
		if key[i] <= ' ' || key[i] > '~' {
			return fmt.Errorf("%w: derived-cache key %q: byte %d is not printable ASCII", ErrInvalid, key, i)
		}
	}
	return nil
}

// RefDerivedKey is the [Derived] key of ref name's entry, dropped by
// [Repo.Refs] whenever the ref's incarnation may change.
func RefDerivedKey(name string) string { return "ref/" + name }

// memDerived is a [Derived] cache in memory, bounded: when full it drops
// an arbitrary entry.
type memDerived struct {
	mu      sync.Mutex
	m       map[string][]byte
	maxSize int // entries; 0 means unbounded
}

func newMemDerived(maxSize int) *memDerived {
	return &memDerived{m: map[string][]byte{}, maxSize: maxSize}
}

func (d *memDerived) GetDerived(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[key]
	if !ok {
		return nil, false, nil
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, true, nil
}

func (d *memDerived) PutDerived(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateDerivedKey(key); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[key]; !ok && d.maxSize > 0 && len(d.m) >= d.maxSize {
		for k := range d.m {
			delete(d.m, k)
			break
		}
	}
	d.m[key] = append([]byte(nil), data...)
	return nil
}

func (d *memDerived) DropDerived(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := ValidateDerivedKey(k); err != nil {
			return err
		}
	}
	d.mu.Lock()
	for _, k := range keys {
		delete(d.m, k)
	}
	d.mu.Unlock()
	return nil
}

// DerivedKeys lists the keys of a snapshot of the cache, sorted.
func (d *memDerived) DerivedKeys(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		d.mu.Lock()
		keys := make([]string, 0, len(d.m))
		for k := range d.m {
			keys = append(keys, k)
		}
		d.mu.Unlock()
		slices.Sort(keys)
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				yield("", err)
				return
			}
			if !yield(k, nil) {
				return
			}
		}
	}
}

// repoDerivedSize bounds the in-memory cache [Repo.Derived] gives a store
// that keeps none.
const repoDerivedSize = 1 << 16

// Derived returns the store's [Derived] cache if it keeps one, else one in
// the Repo's memory (bounded, lost when the Repo is).
func (r *Repo) Derived() Derived {
	if d, ok := r.st.(Derived); ok {
		return d
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.derived == nil {
		r.derived = newMemDerived(repoDerivedSize)
	}
	return r.derived
}

// dropRefDerived drops ref name's [Derived] entry after a change that may
// have begun a new incarnation of the ref. A failure to drop is logged: the
// reader's checks stay the guard.
func (r *Repo) dropRefDerived(ctx context.Context, name string) {
	if err := r.Derived().DropDerived(context.WithoutCancel(ctx), RefDerivedKey(name)); err != nil {
		r.log.Warn("drop a derived-cache entry", "ref", name, "err", err)
	}
}

// DerivedBatchGetter is a [Derived] fast path: many entries in one read
// (on PostgreSQL one statement). GetDerivedBatch returns, for each key of
// keys in order, what GetDerived would: the entry's bytes (never nil once
// found) and whether there is one; a bad key fails the whole batch with an
// error wrapping [ErrInvalid].
type DerivedBatchGetter interface {
	GetDerivedBatch(ctx context.Context, keys []string) (data [][]byte, ok []bool, err error)
}

// GetDerivedBatch reads every entry of keys from d as [DerivedBatchGetter]
// specifies, with d's GetDerivedBatch if it has one, else with one
// GetDerived each.
func GetDerivedBatch(ctx context.Context, d Derived, keys []string) (data [][]byte, ok []bool, err error) {
	if b, isBatch := d.(DerivedBatchGetter); isBatch {
		return b.GetDerivedBatch(ctx, keys)
	}
	data, ok = make([][]byte, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		if data[i], ok[i], err = d.GetDerived(ctx, k); err != nil {
			return nil, nil, err
		}
	}
	return data, ok, nil
}

func (d *memDerived) GetDerivedBatch(ctx context.Context, keys []string) ([][]byte, []bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		if err := ValidateDerivedKey(k); err != nil {
			return nil, nil, err
		}
	}
	data, ok := make([][]byte, len(keys)), make([]bool, len(keys))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, k := range keys {
		if v, found := d.m[k]; found {
			data[i], ok[i] = append([]byte{}, v...), true
		}
	}
	return data, ok, nil
}

// GetDerived returns the entry at key: through a context with a read memo
// ([WithReadMemo]) one prefetched with [Repo.PrefetchWith] is not read
// again; else the store's [Derived] cache's (see [Repo.Derived]).
func (r *Repo) GetDerived(ctx context.Context, key string) ([]byte, bool, error) {
	if m := readMemoOf(ctx); m != nil {
		if v, ok := m.loadDerived(key); ok {
			return v.data, v.ok, nil
		}
	}
	return r.Derived().GetDerived(ctx, key)
}

// PutDerived sets the entry at key in the store's [Derived] cache (see
// [Repo.Derived]), and in ctx's read memo if it has one.
func (r *Repo) PutDerived(ctx context.Context, key string, data []byte) error {
	err := r.Derived().PutDerived(ctx, key, data)
	if m := readMemoOf(ctx); m != nil && err == nil {
		m.storeDerived(key, derivedRead{data: append([]byte{}, data...), ok: true})
	}
	return err
}
