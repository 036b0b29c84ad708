package thread

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// FsckOptions returns the checks [cas.Repo.Fsck] runs for threads: the
// chain invariants of every step and mark node (depth, prev, skip pointers,
// a constant start) and that every thread head is a start, step or mark
// node, every failures/ ref a failure node, every keys/ ref a thread-key
// node, every runs/<thread> ref a run node and every slots/ ref a slot node.
func FsckOptions() *cas.FsckOptions {
	return &cas.FsckOptions{
		NodeChecks: []cas.NodeCheck{checkChain},
		RefChecks:  []cas.RefCheck{checkHead},
	}
}

// IsHead reports whether n can be a thread's head: a start, step or mark
// node. `uwf cas fsck --dangling` lists the dangling ones
// ([cas.FsckOptions].Dangling), so a thread whose ref was lost can be
// found until GC collects it.
func IsHead(n cas.Node) bool {
	return n.Type == cas.StartSchema || n.Type == cas.StepSchema || n.Type == cas.MarkSchema
}

func chainProblem(format string, args ...any) cas.Problem {
	return cas.Problem{Kind: cas.ProblemChain, Msg: fmt.Sprintf(format, args...)}
}

// checkChain checks one step or mark node against its prev and the nodes
// its skip pointers name.
func checkChain(ctx context.Context, r *cas.Repo, h cas.Hash, n cas.Node) []cas.Problem {
	if n.Type != cas.StepSchema && n.Type != cas.MarkSchema {
		return nil
	}
	node, err := DecodeNode(h, n)
	if err != nil {
		return []cas.Problem{chainProblem("%v", err)}
	}
	get := func(x cas.Hash) (*Node, error) {
		cn, err := r.Get(ctx, x)
		if err != nil {
			return nil, err
		}
		return DecodeNode(x, cn)
	}
	c := node.Chain()
	var out []cas.Problem
	sn, err := get(c.Start)
	switch {
	case err != nil:
		out = append(out, chainProblem("start %s: %v", c.Start, err))
	case sn.Kind != KindStart:
		out = append(out, chainProblem("start %s is a %s node, not a start node", c.Start, sn.Kind))
	}
	if c.Prev.IsZero() {
		if c.Depth != 1 {
			out = append(out, chainProblem("prev is null but depth is %d, not 1", c.Depth))
		}
		if len(c.Skip) != 0 {
			out = append(out, chainProblem("the first node after the start has %d skip pointers", len(c.Skip)))
		}
		return out
	}
	prev, err := get(c.Prev)
	if err != nil {
		return append(out, chainProblem("prev %s: %v", c.Prev, err))
	}
	if prev.Kind == KindStart {
		return append(out, chainProblem("prev %s is the start node: prev must be null after the start", c.Prev))
	}
	if prev.Depth()+1 != c.Depth {
		out = append(out, chainProblem("depth %d does not follow prev %s at depth %d", c.Depth, c.Prev, prev.Depth()))
	}
	if prev.StartHash() != c.Start {
		out = append(out, chainProblem("start %s differs from prev's start %s", c.Start, prev.StartHash()))
	}
	// Derive the skip pointers again, from the nodes they name. A
	// derivation cut short by a broken ancestor still gives the pointers
	// before the break: a node that stores those and no more is reported
	// with the reason.
	want, err := skipPointers(c.Depth, prev, get)
	switch {
	case !slices.Equal(want, c.Skip):
		out = append(out, chainProblem("skip pointers %s, want %s", hashList(c.Skip), hashList(want)))
	case err != nil:
		out = append(out, chainProblem("skip pointers %s cannot be checked: %v", hashList(c.Skip), err))
	}
	return out
}

func hashList(hs []cas.Hash) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = h.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

// checkHead checks what thread and failure refs point at.
func checkHead(ctx context.Context, r *cas.Repo, name string, target cas.Hash) []cas.Problem {
	var want []cas.Hash
	var what string
	switch {
	case strings.HasPrefix(name, ThreadPrefix):
		if _, err := ParseID(strings.TrimPrefix(name, ThreadPrefix)); err != nil {
			return []cas.Problem{{Ref: name, Kind: cas.ProblemRef, Msg: "not a thread ID"}}
		}
		want, what = []cas.Hash{cas.StartSchema, cas.StepSchema, cas.MarkSchema}, "a start, step or mark node"
	case strings.HasPrefix(name, FailurePrefix):
		want, what = []cas.Hash{cas.FailureSchema}, "a failure node"
	case strings.HasPrefix(name, KeyPrefix):
		want, what = []cas.Hash{cas.ThreadKeySchema}, "a thread-key node"
	case strings.HasPrefix(name, RunPrefix):
		if _, err := ParseID(strings.TrimPrefix(name, RunPrefix)); err != nil {
			return []cas.Problem{{Ref: name, Kind: cas.ProblemRef, Msg: "not a thread ID"}}
		}
		want, what = []cas.Hash{cas.RunSchema}, "a run node"
	case strings.HasPrefix(name, SlotPrefix):
		want, what = []cas.Hash{cas.SlotSchema}, "a slot node"
	default:
		return nil
	}
	n, err := r.Get(ctx, target)
	if err != nil {
		return nil // reported by the object checks
	}
	if !slices.Contains(want, n.Type) {
		return []cas.Problem{{Ref: name, Hash: target, Kind: cas.ProblemRef, Msg: "points at a node of type " + n.Type.String() + ", not " + what}}
	}
	return nil
}
