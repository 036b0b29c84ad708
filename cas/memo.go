package cas

import (
	"context"
	"errors"
	"sync"
)

// A read memo: nodes read through a context carrying one ([WithReadMemo])
// are kept for the context's life, so a task that reads a node more than
// once (a thread step: the last output routes the step and is rendered in
// its prompt) reads it from the store once, and [Repo.Prefetch] can fetch
// the nodes a task is about to read in one batch. Nodes are immutable, so
// a node read once is the node; callers must not modify a payload [Repo.Get]
// returns. The memo also keeps the [Derived] entries prefetched with
// [Repo.PrefetchWith] (or written through [Repo.PutDerived]) for
// [Repo.GetDerived]: entries are checked by their readers anyway, and a
// task's own writes replace them.
type readMemo struct {
	mu      sync.Mutex
	nodes   map[Hash]Node
	derived map[string]derivedRead
}

// derivedRead is a [Derived] entry as read: its bytes, or none (ok false).
type derivedRead struct {
	data []byte
	ok   bool
}

type readMemoKey struct{}

// WithReadMemo returns ctx with a read memo, or ctx itself if it already
// carries one. Give it to short tasks only: the memo keeps every node read
// through it until the context is dropped.
func WithReadMemo(ctx context.Context) context.Context {
	if readMemoOf(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, readMemoKey{}, &readMemo{nodes: map[Hash]Node{}, derived: map[string]derivedRead{}})
}

func readMemoOf(ctx context.Context) *readMemo {
	m, _ := ctx.Value(readMemoKey{}).(*readMemo)
	return m
}

func (m *readMemo) load(h Hash) (Node, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[h]
	return n, ok
}

func (m *readMemo) store(h Hash, n Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[h] = n
}

func (m *readMemo) loadDerived(key string) (derivedRead, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.derived[key]
	return v, ok
}

func (m *readMemo) storeDerived(key string, v derivedRead) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.derived[key] = v
}

// CanPrefetch reports whether [Repo.Prefetch] fetches anything through ctx:
// ctx carries a read memo and the store has [BatchGetter].
func (r *Repo) CanPrefetch(ctx context.Context) bool {
	_, ok := r.st.(BatchGetter)
	return ok && readMemoOf(ctx) != nil
}

// Prefetch reads the nodes of hs that ctx's read memo lacks into it, in one
// [BatchGetter.GetBatch] (on PostgreSQL one statement). It does nothing
// unless [Repo.CanPrefetch]: one read each would gain nothing over reading
// the nodes when needed, and could read nodes never needed. A node that
// fails to read or decode is left out, so that [Repo.Get] gives its error
// where it is needed; zero hashes are skipped.
func (r *Repo) Prefetch(ctx context.Context, hs []Hash) { r.PrefetchWith(ctx, hs, nil) }

// BatchReader is a [Store] fast path for [Repo.PrefetchWith]: objects and
// [Derived] entries in one read (on PostgreSQL one statement). ReadBatch
// returns what [BatchGetter.GetBatch] of hs and
// [DerivedBatchGetter.GetDerivedBatch] of keys would; err is a failure of
// the whole read.
type BatchReader interface {
	ReadBatch(ctx context.Context, hs []Hash, keys []string) (data [][]byte, errs []error, derived [][]byte, found []bool, err error)
}

// PrefetchWith is [Repo.Prefetch] of hs that also reads the [Derived]
// entries at keys (those ctx's read memo lacks) into the memo, for
// [Repo.GetDerived]: on a store with [BatchReader] in the same round trip,
// else with [GetDerivedBatch] after the nodes. Like Prefetch it does
// nothing unless [Repo.CanPrefetch]; a key that fails to read (a bad key,
// the store's error) is left out, so that GetDerived gives its error where
// it is needed.
func (r *Repo) PrefetchWith(ctx context.Context, hs []Hash, keys []string) {
	m := readMemoOf(ctx)
	bg, ok := r.st.(BatchGetter)
	if m == nil || !ok {
		return
	}
	var wantKeys []string
	seenKey := map[string]bool{}
	for _, k := range keys {
		if seenKey[k] || ValidateDerivedKey(k) != nil {
			continue
		}
		seenKey[k] = true
		if _, ok := m.loadDerived(k); !ok {
			wantKeys = append(wantKeys, k)
		}
	}
	var missing []Hash
	seen := map[Hash]bool{}
	for _, h := range hs {
		if h.IsZero() || seen[h] {
			continue
		}
		seen[h] = true
		if _, ok := m.load(h); !ok {
			missing = append(missing, h)
		}
	}
	var data, derived [][]byte
	var errs []error
	var found []bool
	var err error
	br, isReader := r.st.(BatchReader)
	switch {
	case len(missing) == 0 && len(wantKeys) == 0:
		return
	case isReader && len(wantKeys) > 0:
		data, errs, derived, found, err = br.ReadBatch(ctx, missing, wantKeys)
	case len(missing) > 0:
		data, errs, err = bg.GetBatch(ctx, missing)
	}
	if err != nil {
		return
	}
	if len(wantKeys) > 0 && derived == nil {
		if derived, found, err = GetDerivedBatch(ctx, r.Derived(), wantKeys); err != nil {
			derived, found = nil, nil
		}
	}
	for i, k := range wantKeys {
		if i < len(derived) {
			m.storeDerived(k, derivedRead{data: derived[i], ok: found[i]})
		}
	}
	for i, h := range missing {
		if errs[i] != nil {
			continue
		}
		if n, err := DecodeNode(data[i]); err == nil {
			m.store(h, n)
		}
	}
}

// memoized returns the node at h if ctx's read memo holds it.
func memoized(ctx context.Context, h Hash) (Node, bool) {
	if m := readMemoOf(ctx); m != nil {
		return m.load(h)
	}
	return Node{}, false
}

// RefNodeGetter is a [Refs] fast path: refs and the objects they point at
// in one read (on PostgreSQL one statement joining the two tables).
// GetRefNodes returns, for each name of names in order, the hash the ref
// points at (zero if there is no such ref) and the bytes stored at that
// hash if they are there and intact (nil otherwise: a reader reads the
// object again to learn why). A bad name fails the whole read with an
// error wrapping [ErrInvalidRefName].
type RefNodeGetter interface {
	GetRefNodes(ctx context.Context, names []string) (hs []Hash, data [][]byte, err error)
}

// GetRefs reads the refs names as [Refs.Get] of each would, except that a
// missing ref gives a zero hash, not an error. Through a context with a
// read memo ([WithReadMemo]), on refs with [RefNodeGetter] (PostgreSQL), it
// also reads the nodes the refs point at into the memo, in the same round
// trip: a node that is missing, damaged or not a node is left out, so
// [Repo.Get] gives its error where it is read, as without the fast path.
func (r *Repo) GetRefs(ctx context.Context, names []string) ([]Hash, error) {
	m := readMemoOf(ctx)
	if rg, ok := r.raw.(RefNodeGetter); ok && m != nil {
		hs, data, err := rg.GetRefNodes(ctx, names)
		if err != nil {
			return nil, err
		}
		for i, h := range hs {
			if h.IsZero() || data[i] == nil {
				continue
			}
			if n, err := DecodeNode(data[i]); err == nil {
				m.store(h, n)
			}
		}
		return hs, nil
	}
	hs := make([]Hash, len(names))
	for i, name := range names {
		h, err := r.raw.Get(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, err
		default:
			hs[i] = h
		}
	}
	return hs, nil
}
