package thread

import (
	"context"
	"fmt"
	"slices"

	"github.com/uncaged/uwf/cas"
)

// EditAgent is the agent name of a step written by [Engine.ForkEdit]: a
// person's edit of another step's output.
const EditAgent = "edit"

// ForkEdit forks at step node step with its output replaced by value: the
// new thread's head is a new step of the same role after the same
// predecessor, written by the "edit" agent, whose output is value stored
// under the role's output schema (validated like any output: the error
// wraps [cas.ErrInvalid], a *[cas.ValidationError] naming the field, for a
// value the schema rejects or a status the role's edges do not route).
// The original output is kept: the edit step's detail has the original
// step's prompt and edge prompt, the edited output as its raw output, and
// as its stderr a note naming the original step and output with the
// original raw output in full. Nothing new is needed in the format: it is
// an ordinary step node (see docs/FORMAT.md). The new thread's log says
// "fork from <thread>@<step> (edit)". It returns the new thread and its
// head.
func (e *Engine) ForkEdit(ctx context.Context, thread string, step cas.Hash, value any) (string, cas.Hash, error) {
	sn, err := e.Node(ctx, step)
	if err != nil {
		return "", 0, fmt.Errorf("fork with an edit at %s: %w", step, err)
	}
	if sn.Step == nil {
		return "", 0, fmt.Errorf("fork with an edit at %s: %w: a %s node, not a step", step, cas.ErrInvalid, sn.Kind)
	}
	v, err := e.StepView(ctx, step)
	if err != nil {
		return "", 0, err
	}
	start, err := e.Node(ctx, sn.StartHash())
	if err != nil {
		return "", 0, fmt.Errorf("fork with an edit at %s: start: %w", step, err)
	}
	lw, err := e.loadWorkflow(ctx, start.Start.Workflow)
	if err != nil {
		return "", 0, err
	}
	role := sn.Step.Role
	statuses := lw.wf.Statuses(role)
	m, _ := value.(map[string]any)
	if st, ok := m["status"].(string); !ok || !slices.Contains(statuses, st) {
		return "", 0, fmt.Errorf("fork with an edit at %s: %w: the edited output's status %v is not one role %s routes (want one of %v)",
			step, cas.ErrInvalid, m["status"], role, statuses)
	}
	outNode := cas.Node{Type: v.Output.Type, Payload: value}
	if _, err := e.repo.Check(ctx, outNode); err != nil {
		return "", 0, fmt.Errorf("fork with an edit at %s: the edited output: %w", step, err)
	}
	raw, err := cas.Canonical(value)
	if err != nil {
		return "", 0, err
	}
	note := fmt.Sprintf("edit: the output of step %s (output %s, agent %s) replaced by hand; the original raw output follows.\n\n%s",
		step, sn.Step.Output, sn.Step.Agent, v.Raw)
	nodes := []cas.Node{
		{Type: cas.ContentSchema, Payload: v.Prompt},
		{Type: cas.ContentSchema, Payload: string(raw)},
		{Type: cas.ContentSchema, Payload: note},
		outNode,
	}
	hs := make([]cas.Hash, len(nodes))
	for i, n := range nodes {
		if hs[i], err = n.Hash(); err != nil {
			return "", 0, err
		}
	}
	det := &Detail{Prompt: hs[0], Raw: hs[1], Stderr: hs[2], EdgePrompt: v.Detail.EdgePrompt, Attempts: []cas.Hash{}}
	detNode := cas.Node{Type: cas.DetailSchema, Payload: det.Payload()}
	detHash, err := detNode.Hash()
	if err != nil {
		return "", 0, err
	}
	prev, err := e.Node(ctx, prevOf(sn))
	if err != nil {
		return "", 0, err
	}
	c, err := e.next(ctx, prev)
	if err != nil {
		return "", 0, err
	}
	now := e.nowMs()
	edited := &Step{Chain: c, Role: role, Output: hs[3], Detail: detHash, Agent: EditAgent, StartedAt: now, CompletedAt: now}
	nodes = append(nodes, detNode, cas.Node{Type: cas.StepSchema, Payload: edited.Payload()})
	put, err := e.repo.PutNodes(ctx, nodes)
	if err != nil {
		return "", 0, fmt.Errorf("fork with an edit at %s: %w", step, err)
	}
	head := put[len(put)-1]
	id := e.newID().String()
	msg := "fork from " + step.String() + " (edit)"
	if thread != "" {
		msg = "fork from " + thread + "@" + step.String() + " (edit)"
	}
	if err := e.refs.CompareAndSwap(ctx, refName(id), 0, head, msg); err != nil {
		return "", 0, fmt.Errorf("fork: %w", err)
	}
	o := originFromEntry(cas.LogEntry{New: head, Message: msg})
	o.Depth = c.Depth
	e.storeOrigin(ctx, id, o)
	return id, head, nil
}
