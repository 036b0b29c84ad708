package cas

import (
	"context"
	"fmt"
)

// WalkFunc is called by [Repo.Walk] once for each node reached, with its
// hash, the decoded node and its edges (as hashes, type first). Returning an
// error stops the walk and returns that error.
type WalkFunc func(h Hash, n Node, edges []Hash) error

// Walk visits every node reachable from roots (the roots included) once,
// breadth-first, following edges as [Repo.Edges] finds them. A missing or
// corrupt node stops the walk with an error naming it and the node it was
// reached from (wrapping [ErrNotFound] or [ErrCorrupt]). Walk holds one hash
// per node reached. It reports its progress to the [ProgressFunc] of ctx
// ([WithProgress]), if any: nodes visited, with no total (it is not known
// until the walk ends).
func (r *Repo) Walk(ctx context.Context, roots []Hash, fn WalkFunc) error {
	seen := make(map[Hash]struct{}, len(roots))
	type item struct{ h, from Hash }
	queue := make([]item, 0, len(roots))
	for _, h := range roots {
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			queue = append(queue, item{h: h})
		}
	}
	pr := startProgress(ctx, "walk", "nodes", "nodes", 0)
	defer pr.end()
	for head := 0; head < len(queue); head++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		pr.add(1)
		it := queue[head]
		n, err := r.Get(ctx, it.h)
		if err != nil {
			if !it.from.IsZero() {
				return fmt.Errorf("walk: %s (reached from %s): %w", it.h, it.from, err)
			}
			return fmt.Errorf("walk: %w", err)
		}
		edges, err := r.edgeHashes(ctx, n)
		if err != nil {
			return fmt.Errorf("walk: edges of %s: %w", it.h, err)
		}
		if err := fn(it.h, n, edges); err != nil {
			return err
		}
		for _, e := range edges {
			if _, ok := seen[e]; !ok {
				seen[e] = struct{}{}
				queue = append(queue, item{h: e, from: it.h})
			}
		}
	}
	return nil
}
