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
	var prev *Node  // the last step, or the start
	var prevOut any // its output
	var lw *loadedWorkflow
	for n, err := range e.OldestFirst(ctx, head) {
		if err != nil {
			return nil, err
		}
		if n.Kind == KindStart {
			if rep.Workflow.IsZero() {
				rep.Workflow = n.Start.Workflow
			}
			if lw, err = e.loadWorkflow(ctx, rep.Workflow); err != nil {
				return nil, err
			}
			prev = n
			continue
		}
		var old string
		switch {
		case n.Kind == KindStep:
			old = n.Step.Role
		case n.Mark.Mark == MarkDone:
			old = moderator.End
		default:
			continue // killed, suspended, resumed: not routing decisions
		}
		var d moderator.Decision
		from := moderator.Start
		if prev.Kind == KindStart {
			d, err = moderator.RouteStart(lw.wf.Graph)
		} else {
			from = prev.Step.Role
			d, err = moderator.Route(lw.wf.Graph, from, prevOut)
		}
		div := &Divergence{Depth: n.Depth(), After: prev.Hash, From: from, Status: d.Status, Old: old}
		if err != nil {
			div.Error = err.Error()
			rep.Divergence = div
			return rep, nil
		}
		if d.Role != old {
			div.New = d.Role
			rep.Divergence = div
			return rep, nil
		}
		if n.Kind != KindStep {
			continue
		}
		rep.Steps++
		out, err := e.repo.Get(ctx, n.Step.Output)
		if err != nil {
			return nil, fmt.Errorf("replay: output of %s: %w", n.Hash, err)
		}
		if h, ok := lw.schemas[n.Step.Role]; ok && h != out.Type {
			s, err := e.repo.Schema(ctx, h)
			if err != nil {
				return nil, err
			}
			if verr := s.Validate(out.Payload); verr != nil {
				rep.Divergence = &Divergence{Depth: n.Depth(), After: prev.Hash, From: from, Status: d.Status,
					Old: old, New: d.Role, Error: verr.Error(), Invalid: true}
				return rep, nil
			}
		}
		prev, prevOut = n, out.Payload
	}
	return rep, nil
}
