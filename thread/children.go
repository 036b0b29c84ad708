package thread

import (
	"context"
	"errors"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// ChildrenOptions page [Engine.Children].
type ChildrenOptions struct {
	Offset int // skip this many, newest first
	Limit  int // at most this many; 0 for all
}

// ChildPage is a page of a thread's children: the branches of the calls
// on its chain, joined or pending.
type ChildPage struct {
	// Total counts every branch of every call on the chain (a fork's
	// inherited calls included), whatever the page.
	Total int
	// Children are newest call first, a call's branches in the call's
	// order; each names its call (Call, CallRole, Depth).
	Children []ChildInfo
}

// Children returns a page of thread id's children: the branch threads of
// every call on its chain, joined ones (their heads and statuses from the
// join's edges) and a pending call's (from their refs). It reads no step
// between calls: the step cache links a chain's calls and joins newest
// first (see [Engine.entry]), so a page costs the head's entry, then per
// call on or before the page its node, its join's and two cache entries,
// however many steps and children the chain has. A chain whose entries
// are missing (an older build wrote it) is walked once to fill them.
func (e *Engine) Children(ctx context.Context, id string, opts ChildrenOptions) (*ChildPage, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	hn, err := e.Node(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("thread %s: head: %w", id, err)
	}
	return e.children(ctx, id, hn, opts)
}

// children is [Engine.Children] of thread id whose head is hn.
func (e *Engine) children(ctx context.Context, id string, hn *Node, opts ChildrenOptions) (*ChildPage, error) {
	page := &ChildPage{}
	if hn.Kind == KindStart {
		return page, nil
	}
	ce, err := e.entry(ctx, hn)
	if err != nil {
		return nil, fmt.Errorf("thread %s: children: %w", id, err)
	}
	page.Total = ce.Children
	owners := &callOwners{e: e, id: id, head: hn}
	skip := max(opts.Offset, 0)
	for comp := ce.LastComp; !comp.IsZero(); {
		if opts.Limit > 0 && len(page.Children) >= opts.Limit {
			break
		}
		n, err := e.Node(ctx, comp)
		if err != nil {
			return nil, fmt.Errorf("thread %s: children: %w", id, err)
		}
		cn, j := n, (*Join)(nil)
		if n.Join != nil {
			j = n.Join
			if cn, err = e.Node(ctx, j.Call); err != nil {
				return nil, fmt.Errorf("thread %s: join %s: its call: %w", id, n.Hash, err)
			}
		}
		if cn.Call == nil || (j != nil && len(j.Branches) != len(cn.Call.Branches)) {
			return nil, fmt.Errorf("thread %s: node %s: %w: not a call and its join", id, comp, cas.ErrCorrupt)
		}
		call := cn.Call
		if nb := len(call.Branches); skip >= nb {
			skip -= nb
		} else {
			// The branches' ids are derived from the thread that made the
			// call's branches: this one, or for a join a fork inherited,
			// the thread it was forked from.
			owner := id
			if j != nil {
				owner = owners.at(ctx, j.Depth)
			}
			for i := skip; i < nb; i++ {
				if opts.Limit > 0 && len(page.Children) >= opts.Limit {
					break
				}
				b := call.Branches[i]
				ch := ChildInfo{Key: b.Key, Role: b.Role, Thread: ChildID(owner, cn.Hash, call.At, b.Key),
					Call: cn.Hash, CallRole: call.Role, Mode: call.Mode, Depth: call.Depth}
				if j != nil {
					ch.Head, ch.Status, ch.Joined = j.Branches[i].Head, j.Branches[i].Status, true
				} else if err := e.branchState(ctx, &ch); err != nil {
					return nil, err
				}
				page.Children = append(page.Children, ch)
			}
			skip = 0
		}
		cce, err := e.entry(ctx, cn)
		if err != nil {
			return nil, fmt.Errorf("thread %s: children: %w", id, err)
		}
		comp = cce.PrevComp
	}
	return page, nil
}

// branchState fills in a pending branch's head and status from its ref.
func (e *Engine) branchState(ctx context.Context, ch *ChildInfo) error {
	ch.Status = "not started"
	h, err := e.refs.Get(ctx, refName(ch.Thread))
	switch {
	case errors.Is(err, cas.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	ch.Head = h
	if bn, err := e.Node(ctx, h); err == nil {
		ch.Status = bn.Status()
	}
	return nil
}

// callOwners finds which thread made the branches of a join at a depth
// on a chain: the thread itself, unless the join is at or below where it
// was forked (the fork inherited it), then the thread it was forked from,
// and so on up (at most 8 forks; a source that is gone is taken as is).
type callOwners struct {
	e    *Engine
	id   string
	head *Node
	// forks, read on first need: each thread up the fork ancestry and the
	// depth it was forked at.
	forks []fork
	read  bool
}

type fork struct {
	thread string
	depth  int // the thread's chain is its source's up to this depth
}

func (o *callOwners) at(ctx context.Context, depth int) string {
	if !o.read {
		o.read = true
		id, head := o.id, o.head
		for range 8 {
			org, err := o.e.origin(ctx, id, head)
			if err != nil || !org.Forked || org.ForkThread == "" {
				o.forks = append(o.forks, fork{thread: id, depth: -1})
				break
			}
			o.forks = append(o.forks, fork{thread: id, depth: org.Depth})
			id = org.ForkThread
			h, err := o.e.Head(ctx, id)
			if err != nil {
				o.forks = append(o.forks, fork{thread: id, depth: -1})
				break
			}
			if head, err = o.e.Node(ctx, h); err != nil {
				o.forks = append(o.forks, fork{thread: id, depth: -1})
				break
			}
		}
	}
	owner := o.id
	for _, f := range o.forks {
		owner = f.thread
		if depth > f.depth {
			break
		}
	}
	return owner
}

// listChildren is [Engine.List] with a parent: its children, read as
// listed threads (a joined child from its head on the join's edge).
func (e *Engine) listChildren(ctx context.Context, opts ListOptions) ([]*Info, error) {
	filtered := opts.Status != "" || opts.Workflow != ""
	co := ChildrenOptions{}
	if !filtered {
		co = ChildrenOptions{Offset: opts.Offset, Limit: opts.Limit}
	}
	page, err := e.Children(ctx, opts.Parent, co)
	if err != nil {
		return nil, err
	}
	out := []*Info{}
	var left []error
	skipped := 0
	for _, ch := range page.Children {
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
		if ch.Head.IsZero() {
			continue // never started: no thread to list
		}
		info, err := e.info(ctx, ch.Thread, ch.Head)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			left = append(left, err)
			continue
		}
		// A running branch runs under a lease: its run, as thread list shows.
		if info.Run, err = e.RunOf(ctx, ch.Thread); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			left = append(left, fmt.Errorf("thread %s: %w", ch.Thread, err))
			continue
		}
		if filtered {
			if !opts.keeps(info) {
				continue
			}
			if skipped < opts.Offset {
				skipped++
				continue
			}
		}
		out = append(out, info)
	}
	if len(left) > 0 {
		return out, fmt.Errorf("list children: %d left out:\n%w", len(left), errors.Join(left...))
	}
	return out, nil
}

// joinOwner returns the thread that made the branches of a join at depth
// on thread id's chain (see callOwners); id if that cannot be read.
func (e *Engine) joinOwner(ctx context.Context, id string, depth int) string {
	h, err := e.Head(ctx, id)
	if err != nil {
		return id
	}
	hn, err := e.Node(ctx, h)
	if err != nil {
		return id
	}
	return (&callOwners{e: e, id: id, head: hn}).at(ctx, depth)
}
