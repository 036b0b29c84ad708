package thread

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/moderator"
)

// Divergence is where routing under another workflow version leaves a
// thread's recorded path.
type Divergence struct {
	Depth   int      // the depth of the recorded entry that routing does not reach
	After   cas.Hash // the step (or start) routing started from
	From    string   // its role ($START for the start)
	Status  string   // the status routed on
	Old     string   // the recorded target: a role, or $END for a done mark
	New     string   // the target under the workflow given; "" if routing failed
	Error   string   // why routing failed, or why the recorded output no longer fits the role's schema
	Invalid bool     // the recorded output is not valid against the new role schema
	// Branch is set when the divergence is inside a branch thread of a
	// call: its key (keys joined by "/" for nested branches), and Thread
	// that branch's id. Depth and After are then the branch's.
	Branch string
	Thread string
}

// ReplayReport is the result of [Engine.Replay].
type ReplayReport struct {
	Thread     string
	Workflow   cas.Hash // the workflow version replayed under
	Steps      int      // recorded steps compared
	Divergence *Divergence
}

// Replay re-evaluates the moderator over thread id's recorded outputs with
// the workflow at wf (zero: the thread's own) and reports the first place
// where routing would diverge from what was recorded: a different target,
// a routing error (an unknown status, a missing field), or a recorded
// output that the new role schema rejects. It runs no agent and changes
// nothing.
func (e *Engine) Replay(ctx context.Context, id string, wf cas.Hash) (*ReplayReport, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	rep := &ReplayReport{Thread: id, Workflow: wf}
	div, err := e.replayChain(ctx, id, head, wf, rep)
	if err != nil {
		return nil, err
	}
	rep.Divergence = div
	return rep, nil
}

// replayChain replays the chain ending at head (of thread id) under wf
// (zero: the chain's own), then the branches of each of its joins (a
// stage's under wf, a child workflow's under its own); it counts the steps compared in rep and returns
// the first divergence.
func (e *Engine) replayChain(ctx context.Context, id string, head, wf cas.Hash, rep *ReplayReport) (*Divergence, error) {
	var prev *Node  // the last step or join, or the start
	var prevOut any // its output
	var start *Start
	var lw *loadedWorkflow
	for n, err := range e.OldestFirst(ctx, head) {
		if err != nil {
			return nil, err
		}
		if n.Kind == KindStart {
			start = n.Start
			if wf.IsZero() {
				wf = n.Start.Workflow
			}
			if rep.Workflow.IsZero() {
				rep.Workflow = wf
			}
			if lw, err = e.loadWorkflow(ctx, wf); err != nil {
				return nil, err
			}
			prev = n
			continue
		}
		var old string
		switch {
		case n.Kind == KindStep:
			old = n.Step.Role
		case n.Kind == KindCall:
			old = n.Call.Role
		case n.Kind == KindJoin:
			// Routed at its call: compare its output, then its branches.
		case n.Mark != nil && n.Mark.Mark == MarkDone:
			old = moderator.End
		default:
			continue // killed, suspended, resumed, cancelled: not routing decisions
		}
		var d moderator.Decision
		from := moderator.Start
		prevRole, _, routed := prev.routed()
		switch {
		case n.Kind == KindJoin:
			from, d.Role = n.Join.Role, n.Join.Role
		case start.Role != "":
			// A stage's branch runs its one role, then ends.
			d.Role = start.Role
			if routed {
				from, d.Role = prevRole, moderator.End
			}
		case !routed:
			d, err = moderator.RouteStart(lw.wf.Graph)
		default:
			from = prevRole
			d, err = moderator.Route(lw.wf.Graph, from, prevOut)
		}
		div := &Divergence{Depth: n.Depth(), After: prev.Hash, From: from, Status: d.Status, Old: old}
		if err != nil {
			div.Error = err.Error()
			return div, nil
		}
		if n.Kind != KindJoin && d.Role != old {
			div.New = d.Role
			return div, nil
		}
		role, output, ok := n.routed()
		if !ok {
			continue
		}
		rep.Steps++
		out, err := e.repo.Get(ctx, output)
		if err != nil {
			return nil, fmt.Errorf("replay: output of %s: %w", n.Hash, err)
		}
		// A join's branches first: a divergence is named where it is.
		if j := n.Join; j != nil {
			cn, err := e.Node(ctx, j.Call)
			if err != nil || cn.Call == nil {
				return nil, fmt.Errorf("replay: call %s of join %s: %w", j.Call, n.Hash, cas.ErrInvalid)
			}
			// A stage's branches run roles of this workflow: they replay
			// under the same version; a child workflow under its own.
			bwf := wf
			if !cn.Call.Workflow.IsZero() {
				bwf = 0
			}
			for _, b := range j.Branches {
				bdiv, err := e.replayChain(ctx, ChildID(id, j.Call, cn.Call.At, b.Key), b.Head, bwf, rep)
				if err != nil {
					return nil, fmt.Errorf("replay: branch %s: %w", b.Key, err)
				}
				if bdiv != nil {
					if bdiv.Branch != "" {
						bdiv.Branch = b.Key + "/" + bdiv.Branch
					} else {
						bdiv.Branch, bdiv.Thread = b.Key, ChildID(id, j.Call, cn.Call.At, b.Key)
					}
					return bdiv, nil
				}
			}
		}
		if h, ok := lw.schemas[role]; ok && h != out.Type {
			s, err := e.repo.Schema(ctx, h)
			if err != nil {
				return nil, err
			}
			if verr := s.Validate(out.Payload); verr != nil {
				return &Divergence{Depth: n.Depth(), After: prev.Hash, From: from, Status: d.Status,
					Old: old, New: d.Role, Error: verr.Error(), Invalid: true}, nil
			}
		}
		prev, prevOut = n, out.Payload
	}
	return nil, nil
}
