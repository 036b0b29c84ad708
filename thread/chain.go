package thread

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/uncaged/uwf/cas"
)

// Next returns the chain fields of a node that is to follow the chain node
// head: its depth, prev, start and skip pointers.
func (e *Engine) Next(ctx context.Context, head cas.Hash) (Chain, error) {
	n, err := e.Node(ctx, head)
	if err != nil {
		return Chain{}, err
	}
	return e.next(ctx, n)
}

// next returns the chain fields of a node that follows head: its depth,
// prev, start and skip pointers (at most MaxSkip nodes are read, and those
// come from the cache when the thread is being stepped).
func (e *Engine) next(ctx context.Context, head *Node) (Chain, error) {
	c := Chain{Start: head.StartHash(), Depth: head.Depth() + 1}
	if head.Kind == KindStart {
		return c, nil
	}
	c.Prev = head.Hash
	skip, err := skipPointers(c.Depth, head, func(h cas.Hash) (*Node, error) { return e.Node(ctx, h) })
	if err != nil {
		return Chain{}, err
	}
	c.Skip = skip
	return c, nil
}

// skipPointers derives the skip pointers of a node at depth whose prev is
// prev, by doubling: the ancestor at 2^k is the 2^(k-1) ancestor of the
// 2^(k-1) ancestor, so at most MaxSkip nodes are read through get. Writing
// a node ([Engine.Next]) and checking one (fsck) both use it. On an error
// it also returns the pointers derived before it.
func skipPointers(depth int, prev *Node, get func(cas.Hash) (*Node, error)) ([]cas.Hash, error) {
	var skip []cas.Hash
	// anc is the ancestor of the node at distance 2^(k-1).
	anc := prev
	for k := 1; k <= MaxSkip && depth-(1<<k) >= 1; k++ {
		// The ancestor at 2^k is anc's ancestor at 2^(k-1): for k = 1 its
		// prev, else its skip[k-2].
		ac := anc.Chain()
		var h cas.Hash
		if k == 1 {
			h = ac.Prev
		} else if k-2 < len(ac.Skip) {
			h = ac.Skip[k-2]
		}
		if h.IsZero() {
			return skip, fmt.Errorf("%w: %s: depth %d but no ancestor at distance %d", cas.ErrInvalid, anc.Hash, ac.Depth, 1<<(k-1))
		}
		skip = append(skip, h)
		if k < MaxSkip && depth-(1<<(k+1)) >= 1 {
			var err error
			if anc, err = get(h); err != nil {
				return skip, err
			}
			if anc.Kind == KindStart {
				return skip, fmt.Errorf("%w: skip pointer reaches the start node", cas.ErrInvalid)
			}
		}
	}
	return skip, nil
}

// Ancestor returns the node at the given depth on the chain ending at head
// (depth 0 is the start node). It follows skip pointers: an ancestor within
// 2^11 steps is reached in O(log distance) reads, a farther one in about
// distance/1024 + 10. The error wraps [cas.ErrNotFound] if depth is beyond
// head's.
func (e *Engine) Ancestor(ctx context.Context, head cas.Hash, depth int) (*Node, error) {
	n, err := e.Node(ctx, head)
	if err != nil {
		return nil, err
	}
	if depth < 0 || depth > n.Depth() {
		return nil, fmt.Errorf("ancestor at depth %d of %s (depth %d): %w", depth, head, n.Depth(), cas.ErrNotFound)
	}
	if depth == 0 {
		if n.Kind == KindStart {
			return n, nil
		}
		return e.Node(ctx, n.StartHash())
	}
	for n.Depth() > depth {
		c := n.Chain()
		dist := c.Depth - depth
		next := c.Prev
		for k := min(len(c.Skip), MaxSkip); k >= 1; k-- {
			if 1<<k <= dist {
				next = c.Skip[k-1]
				break
			}
		}
		if next.IsZero() {
			return nil, fmt.Errorf("%w: %s at depth %d has no prev", cas.ErrInvalid, n.Hash, c.Depth)
		}
		if n, err = e.Node(ctx, next); err != nil {
			return nil, err
		}
		if n.Kind == KindStart {
			return nil, fmt.Errorf("%w: the chain reaches its start above depth %d", cas.ErrInvalid, depth)
		}
	}
	if n.Depth() != depth {
		return nil, fmt.Errorf("%w: chain depths skip from above %d to %d", cas.ErrInvalid, depth, n.Depth())
	}
	return n, nil
}

// NewestFirst iterates the chain ending at head from head back to its start
// node (included), in constant memory.
func (e *Engine) NewestFirst(ctx context.Context, head cas.Hash) iter.Seq2[*Node, error] {
	return func(yield func(*Node, error) bool) {
		h := head
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			n, err := e.node(ctx, h, false)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(n, nil) || n.Kind == KindStart {
				return
			}
			if h = n.Chain().Prev; h.IsZero() {
				h = n.Chain().Start
			}
		}
	}
}

// checkpointEvery is the spacing of the checkpoints OldestFirst keeps.
const checkpointEvery = 1 << MaxSkip

// OldestFirst iterates the chain ending at head from its start node to head.
// It holds about depth/1024 checkpoints plus one segment of at most 1024
// decoded nodes, and reads each node about once.
func (e *Engine) OldestFirst(ctx context.Context, head cas.Hash) iter.Seq2[*Node, error] {
	return func(yield func(*Node, error) bool) {
		hn, err := e.node(ctx, head, false)
		if err != nil {
			yield(nil, err)
			return
		}
		// Checkpoints: the nodes at depths that are multiples of 1024 (and
		// head), newest first, found through skip[9].
		checkpoints := []*Node{hn}
		for n := hn; n.Kind != KindStart; {
			c := n.Chain()
			target := (c.Depth - 1) / checkpointEvery * checkpointEvery // the next lower multiple
			var next *Node
			if target == 0 {
				next, err = e.node(ctx, c.Start, false)
			} else {
				next, err = e.Ancestor(ctx, n.Hash, target)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			checkpoints = append(checkpoints, next)
			n = next
		}
		// checkpoints[len-1] is the start node.
		if !yield(checkpoints[len(checkpoints)-1], nil) {
			return
		}
		seg := make([]*Node, 0, checkpointEvery)
		for i := len(checkpoints) - 2; i >= 0; i-- {
			lower := checkpoints[i+1].Depth()
			seg = seg[:0]
			for n := checkpoints[i]; ; {
				seg = append(seg, n)
				c := n.Chain()
				if c.Depth-1 <= lower {
					break
				}
				if n, err = e.node(ctx, c.Prev, false); err != nil {
					yield(nil, err)
					return
				}
			}
			for _, n := range slices.Backward(seg) {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(n, nil) {
					return
				}
			}
		}
	}
}
