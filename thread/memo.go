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

// prefetchChain fetches into ctx's read memo what rendering the chain from
// n back over count chain nodes needs, in a few batches: the chain nodes,
// found through their prev and skip pointers (each batch reaches about
// twice as far back; with a nonzero start, the first one also fetches the
// start node), then the details and outputs of their steps (and the start's
// workflow, with start). It returns the steps' raw outputs, for the
// caller's next batch ([cas.Repo.Prefetch]). It does nothing on a store
// without [cas.BatchGetter] or through a context without a memo.
func (e *Engine) prefetchChain(ctx context.Context, n *Node, count int, start cas.Hash) (raws []cas.Hash) {
	if !e.repo.CanPrefetch(ctx) || n.Chain() == nil {
		return nil
	}
	stop := max(n.Depth()-count+1, 1)
	known := map[int]*Node{n.Depth(): n}
	frontier := []*Node{n}
	first := true
	for len(frontier) > 0 {
		want := map[cas.Hash]int{}
		var hs []cas.Hash
		add := func(h cas.Hash, d int) {
			if d >= stop && known[d] == nil && !h.IsZero() {
				if _, ok := want[h]; !ok {
					want[h] = d
					hs = append(hs, h)
				}
			}
		}
		for _, k := range frontier {
			c := k.Chain()
			add(c.Prev, c.Depth-1)
			for i, h := range c.Skip {
				add(h, c.Depth-1<<(i+1))
			}
		}
		batch := hs
		if first && !start.IsZero() {
			batch = append(batch[:len(batch):len(batch)], start)
		}
		first = false
		e.repo.Prefetch(ctx, batch)
		frontier = frontier[:0]
		for _, h := range hs {
			k, err := e.node(ctx, h, false)
			if err != nil || k.Chain() == nil || k.Depth() != want[h] || known[k.Depth()] != nil {
				continue
			}
			known[k.Depth()] = k
			frontier = append(frontier, k)
		}
	}
	var parts []cas.Hash
	var steps []*Step
	for _, k := range known {
		if k.Step != nil {
			steps = append(steps, k.Step)
			parts = append(parts, k.Step.Detail, k.Step.Output)
		}
	}
	if !start.IsZero() {
		if sn, err := e.node(ctx, start, false); err == nil && sn.Start != nil {
			parts = append(parts, sn.Start.Workflow)
		}
	}
	e.repo.Prefetch(ctx, parts)
	for _, s := range steps {
		if dn, err := e.repo.Get(ctx, s.Detail); err == nil {
			if d, err := DecodeDetail(dn); err == nil {
				raws = append(raws, d.Raw)
			}
		}
	}
	return raws
}
