package thread

import (
	"context"

	"github.com/uncaged/uwf/cas"
)

// A step, and a reading of a thread, read through a context with a read
// memo ([cas.WithReadMemo]): nodes are immutable, so a node read once in a
// step (the last step's output routes the step and is rendered in its
// prompt; the nodes back to the last step are walked by locate and again
// by the reading; the workflow is loaded and named) is read from the store
// once. On a store with [cas.BatchGetter] (PostgreSQL) the nodes about to
// be rendered are also fetched in a few batches, one round trip each,
// instead of one by one: see prefetchChain.

// stepWindow is how many chain nodes back from its head a step prefetches
// for its prompt (the reading fetches more, a window at a time, if the
// quota has room for them).
const stepWindow = 8

// chainFetch fetches into ctx's read memo, in batches of one round trip
// each, what rendering a chain back from a node needs: the chain nodes,
// found through their prev and skip pointers (each batch reaches about
// twice as far back), and, in the same batches, one behind, the details
// and outputs of the steps found, then their raw outputs. It keeps what
// it found, so a reading that needs more entries goes on from there. It
// does nothing on a store without [cas.BatchGetter] or through a context
// without a memo.
type chainFetch struct {
	e     *Engine
	on    bool
	known map[int]*Node // chain nodes by depth
	tried map[cas.Hash]bool
	parts []*Step // steps whose detail and output are not yet fetched
	raws  []*Step // steps whose raw output is not yet fetched
}

func (e *Engine) newChainFetch(ctx context.Context, n *Node) *chainFetch {
	f := &chainFetch{e: e, on: e.repo.CanPrefetch(ctx) && n.Chain() != nil}
	if f.on {
		f.known = map[int]*Node{n.Depth(): n}
		f.tried = map[cas.Hash]bool{}
		if n.Step != nil {
			f.parts = append(f.parts, n.Step)
		}
	}
	return f
}

// fetch fetches the chain nodes from depth stop up (those not yet fetched)
// and what their steps need; extra and the step cache's entries at keys
// go in the first batch, and next, if not nil, is asked before each batch
// for more hashes to add (the caller's nodes that depend on nodes fetched
// so far).
func (f *chainFetch) fetch(ctx context.Context, stop int, extra []cas.Hash, keys []string, next func() []cas.Hash) {
	if !f.on {
		if len(extra) > 0 || len(keys) > 0 {
			f.e.repo.PrefetchWith(ctx, extra, keys)
		}
		return
	}
	stop = max(stop, 1)
	for {
		batch, batchKeys := extra, keys
		extra, keys = nil, nil
		want := map[cas.Hash]int{}
		var hs []cas.Hash
		add := func(h cas.Hash, d int) {
			// A node asked for once is not asked for again: one that
			// failed to read is left to the reading to report.
			if d >= stop && f.known[d] == nil && !h.IsZero() && !f.tried[h] {
				f.tried[h] = true
				want[h] = d
				hs = append(hs, h)
			}
		}
		for _, k := range f.known {
			c := k.Chain()
			add(c.Prev, c.Depth-1)
			for i, h := range c.Skip {
				add(h, c.Depth-1<<(i+1))
			}
		}
		if next != nil {
			batch = append(batch, next()...)
		}
		batch = append(batch, hs...)
		for _, s := range f.raws {
			if dn, err := f.e.repo.Get(ctx, s.Detail); err == nil {
				if d, err := DecodeDetail(dn); err == nil {
					batch = append(batch, d.Raw)
				}
			}
		}
		f.raws = f.parts
		f.parts = nil
		for _, s := range f.raws {
			batch = append(batch, s.Detail, s.Output)
		}
		if len(batch) == 0 && len(batchKeys) == 0 {
			return
		}
		f.e.repo.PrefetchWith(ctx, batch, batchKeys)
		for _, h := range hs {
			k, err := f.e.node(ctx, h, false)
			if err != nil || k.Chain() == nil || k.Depth() != want[h] || f.known[k.Depth()] != nil {
				continue
			}
			f.known[k.Depth()] = k
			if k.Step != nil {
				f.parts = append(f.parts, k.Step)
			}
		}
	}
}
