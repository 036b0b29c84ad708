package cas

import (
	"context"
	"sync"
)

// A read memo: nodes read through a context carrying one ([WithReadMemo])
// are kept for the context's life, so a task that reads a node more than
// once (a thread step: the last output routes the step and is rendered in
// its prompt) reads it from the store once, and [Repo.Prefetch] can fetch
// the nodes a task is about to read in one batch. Nodes are immutable, so
// a node read once is the node; callers must not modify a payload [Repo.Get]
// returns.
type readMemo struct {
	mu    sync.Mutex
	nodes map[Hash]Node
}

type readMemoKey struct{}

// WithReadMemo returns ctx with a read memo, or ctx itself if it already
// carries one. Give it to short tasks only: the memo keeps every node read
// through it until the context is dropped.
func WithReadMemo(ctx context.Context) context.Context {
	if readMemoOf(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, readMemoKey{}, &readMemo{nodes: map[Hash]Node{}})
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
func (r *Repo) Prefetch(ctx context.Context, hs []Hash) {
	m := readMemoOf(ctx)
	bg, ok := r.st.(BatchGetter)
	if m == nil || !ok {
		return
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
	if len(missing) == 0 {
		return
	}
	data, errs, err := bg.GetBatch(ctx, missing)
	if err != nil {
		return
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
