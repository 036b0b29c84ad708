package thread

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// FsckOptions returns the checks [cas.Repo.Fsck] runs for threads: the
// chain invariants of every step, mark, call, join and cancelled node
// (depth, prev, skip pointers, a constant start); that a join settles a
// call of its own chain, with one head per branch, each on a branch thread
// of that call and key; that a branch's start names a branch of its call;
// and that every thread head is a chain node, every failures/ ref a
// failure node, every keys/ ref a thread-key node, every runs/ ref a run
// node and every slots/ ref a slot node.
func FsckOptions() *cas.FsckOptions {
	return &cas.FsckOptions{
		NodeChecks: []cas.NodeCheck{checkChain, checkCompose},
		RefChecks:  []cas.RefCheck{checkHead},
	}
}

// headTypes are the types of the nodes a thread's head can be.
var headTypes = []cas.Hash{cas.StartSchema, cas.StepSchema, cas.MarkSchema,
	cas.ChildStartSchema, cas.CallSchema, cas.JoinSchema, cas.CancelledSchema}

// chainTypes are the types of the nodes with chain fields.
var chainTypes = []cas.Hash{cas.StepSchema, cas.MarkSchema, cas.CallSchema, cas.JoinSchema, cas.CancelledSchema}

// checkCompose checks a join against its call and branches, and a branch
// thread's start against its call.
func checkCompose(ctx context.Context, r *cas.Repo, h cas.Hash, n cas.Node) []cas.Problem {
	if n.Type != cas.JoinSchema && n.Type != cas.ChildStartSchema {
		return nil
	}
	node, err := DecodeNode(h, n)
	if err != nil {
		return []cas.Problem{chainProblem("%v", err)}
	}
	get := nodeGetter(ctx, r)
	callOf := func(x cas.Hash) (*Call, []cas.Problem) {
		cn, err := get(x)
		if err != nil {
			return nil, []cas.Problem{chainProblem("call %s: %v", x, err)}
		}
		if cn.Call == nil {
			return nil, []cas.Problem{chainProblem("call %s is a %s node, not a call", x, cn.Kind)}
		}
		return cn.Call, nil
	}
	if st := node.Start; st != nil {
		call, ps := callOf(st.Call)
		if call == nil {
			return ps
		}
		for _, b := range call.Branches {
			if b.Key != st.Key {
				continue
			}
			if b.Role != st.Role || b.Prompt != st.Prompt {
				return []cas.Problem{chainProblem("branch %s of call %s runs role %q with another task than this start says (%q)", b.Key, st.Call, b.Role, st.Role)}
			}
			if !call.Workflow.IsZero() && call.Workflow != st.Workflow {
				return []cas.Problem{chainProblem("branch %s runs workflow %s, but call %s names %s", b.Key, st.Workflow, st.Call, call.Workflow)}
			}
			return nil
		}
		return []cas.Problem{chainProblem("call %s has no branch %q", st.Call, st.Key)}
	}
	j := node.Join
	call, ps := callOf(j.Call)
	if call == nil {
		return ps
	}
	var out []cas.Problem
	if cn, _ := get(j.Call); cn != nil && (cn.StartHash() != j.Start || cn.Depth() >= j.Depth) {
		out = append(out, chainProblem("join settles call %s, which is not an earlier node of its chain", j.Call))
	}
	if call.Role != j.Role {
		out = append(out, chainProblem("join of role %s settles call %s of role %s", j.Role, j.Call, call.Role))
	}
	if len(j.Branches) != len(call.Branches) {
		return append(out, chainProblem("join has %d branches, its call %s has %d", len(j.Branches), j.Call, len(call.Branches)))
	}
	for i, b := range j.Branches {
		if b.Key != call.Branches[i].Key {
			out = append(out, chainProblem("join branch %d is %q, its call's is %q", i, b.Key, call.Branches[i].Key))
			continue
		}
		bn, err := get(b.Head)
		if err != nil {
			out = append(out, chainProblem("branch %s head %s: %v", b.Key, b.Head, err))
			continue
		}
		sn := bn
		if bn.Kind != KindStart {
			if sn, err = get(bn.StartHash()); err != nil {
				out = append(out, chainProblem("branch %s start %s: %v", b.Key, bn.StartHash(), err))
				continue
			}
		}
		if sn.Start == nil || sn.Start.Call != j.Call || sn.Start.Key != b.Key {
			out = append(out, chainProblem("branch %s head %s is not on a branch thread of call %s", b.Key, b.Head, j.Call))
		}
		if b.Status == StatusDone && bn.Status() != StatusDone {
			out = append(out, chainProblem("branch %s is done in the join, but its head %s is %s", b.Key, b.Head, bn.Status()))
		}
	}
	return out
}

// IsHead reports whether n can be a thread's head: a start, step, mark, call
// or join node (or a child start or a cancelled mark).
// node. `uwf cas fsck --dangling` lists the dangling ones
// ([cas.FsckOptions].Dangling), so a thread whose ref was lost can be
// found until GC collects it.
func IsHead(n cas.Node) bool {
	return slices.Contains(headTypes, n.Type)
}

func chainProblem(format string, args ...any) cas.Problem {
	return cas.Problem{Kind: cas.ProblemChain, Msg: fmt.Sprintf(format, args...)}
}

// nodeGetter returns a function that reads and decodes the node at a hash.
func nodeGetter(ctx context.Context, r *cas.Repo) func(cas.Hash) (*Node, error) {
	return func(x cas.Hash) (*Node, error) {
		cn, err := r.Get(ctx, x)
		if err != nil {
			return nil, err
		}
		return DecodeNode(x, cn)
	}
}

// checkChain checks one step or mark node against its prev and the nodes
// its skip pointers name.
func checkChain(ctx context.Context, r *cas.Repo, h cas.Hash, n cas.Node) []cas.Problem {
	if !slices.Contains(chainTypes, n.Type) {
		return nil
	}
	node, err := DecodeNode(h, n)
	if err != nil {
		return []cas.Problem{chainProblem("%v", err)}
	}
	get := nodeGetter(ctx, r)
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
		want, what = headTypes, "a start, step, mark, call or join node"
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
