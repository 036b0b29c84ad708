package thread

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/uncaged/uwf/cas"
)

// Follow yields thread id's chain nodes from depth from (0: its start) to
// its head, then every node the thread gains, as it lands, from any
// process: it follows the store's ref changes through the one watch API
// ([cas.Repo.Watch]), from a cursor taken before the head is read, so no
// node is missed and none is yielded twice. Each step comes with its
// output's status. It runs until ctx is done (yielding ctx's error) or the
// caller stops; a thread removed meanwhile ends it with an error wrapping
// [cas.ErrNotFound]. The error wraps [cas.ErrWatchUnsupported] if the
// store's refs cannot be watched.
func (e *Engine) Follow(ctx context.Context, id string, from int) iter.Seq2[*StepEntry, error] {
	return func(yield func(*StepEntry, error) bool) {
		id, err := ParseID(id)
		if err != nil {
			yield(nil, err)
			return
		}
		cursor, err := e.repo.WatchHead(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		head, err := e.Head(ctx, id)
		if err != nil {
			yield(nil, err)
			return
		}
		hn, err := e.Node(ctx, head)
		if err != nil {
			yield(nil, err)
			return
		}
		// The nodes from depth from: the head's last ones, newest first.
		var first []*Node
		for n, err := range e.NewestFirst(ctx, head) {
			if err != nil {
				yield(nil, err)
				return
			}
			if n.Depth() < from {
				break
			}
			first = append(first, n)
		}
		slices.Reverse(first)
		for _, n := range first {
			if !e.yieldEntry(ctx, n, yield) {
				return
			}
		}
		last := hn
		for ev, err := range e.repo.Watch(ctx, refName(id), cursor) {
			if err != nil {
				yield(nil, err)
				return
			}
			if ev.Ref != refName(id) || ev.New == last.Hash {
				continue
			}
			if ev.New.IsZero() {
				yield(nil, fmt.Errorf("thread %s: %w: it was removed", id, cas.ErrNotFound))
				return
			}
			// The nodes after the last one yielded, oldest first.
			var fresh []*Node
			for n, err := range e.NewestFirst(ctx, ev.New) {
				if err != nil {
					yield(nil, err)
					return
				}
				if n.Depth() <= last.Depth() {
					break
				}
				fresh = append(fresh, n)
			}
			slices.Reverse(fresh)
			for _, n := range fresh {
				if !e.yieldEntry(ctx, n, yield) {
					return
				}
				last = n
			}
		}
	}
}

// yieldEntry yields n as a StepEntry with its output's status.
func (e *Engine) yieldEntry(ctx context.Context, n *Node, yield func(*StepEntry, error) bool) bool {
	en := &StepEntry{Node: n}
	if _, output, ok := n.routed(); ok { // a step, or a join
		out, err := e.repo.Get(ctx, output)
		if err != nil {
			yield(nil, fmt.Errorf("%s %s: output %s: %w", n.Kind, n.Hash, output, err))
			return false
		}
		en.Status = outputStatus(out.Payload)
	}
	return yield(en, nil)
}
