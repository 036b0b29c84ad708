package thread

import (
	"context"
	"fmt"
	"iter"

	"github.com/uncaged/uwf/cas"
)

// StepView is a step node with everything it names read and decoded: its
// typed output, its detail, and the detail's texts. It is what
// `uwf step show` prints.
type StepView struct {
	Hash     cas.Hash
	Step     *Step
	Output   cas.Node // the typed output: Type is the role's output schema
	Detail   *Detail
	Prompt   string   // the assembled prompt the agent was given
	Raw      string   // the agent's raw output
	Stderr   string   // its stderr; "" if none was recorded
	Attempts []string // raw outputs that failed extraction before Raw, oldest first; nil if none
}

// StepView reads step node h and what it names. The error wraps
// [cas.ErrNotFound] if h or any node it names is absent, [cas.ErrCorrupt]
// if one is damaged, and [cas.ErrInvalid] if h is not a step node or a node
// it names is not of the kind the step says; it names the node at fault.
func (e *Engine) StepView(ctx context.Context, h cas.Hash) (*StepView, error) {
	n, err := e.Node(ctx, h)
	if err != nil {
		return nil, err
	}
	if n.Step == nil {
		return nil, fmt.Errorf("%s: %w: a %s node, not a step", h, cas.ErrInvalid, n.Kind)
	}
	st := n.Step
	v := &StepView{Hash: h, Step: st}
	if v.Output, err = e.repo.Get(ctx, st.Output); err != nil {
		return nil, fmt.Errorf("step %s: output %s: %w", h, st.Output, err)
	}
	dn, err := e.repo.Get(ctx, st.Detail)
	if err != nil {
		return nil, fmt.Errorf("step %s: detail %s: %w", h, st.Detail, err)
	}
	if v.Detail, err = DecodeDetail(dn); err != nil {
		return nil, fmt.Errorf("step %s: detail %s: %w", h, st.Detail, err)
	}
	d := v.Detail
	if v.Prompt, err = e.content(ctx, d.Prompt); err != nil {
		return nil, fmt.Errorf("step %s: prompt: %w", h, err)
	}
	if v.Raw, err = e.content(ctx, d.Raw); err != nil {
		return nil, fmt.Errorf("step %s: raw output: %w", h, err)
	}
	if !d.Stderr.IsZero() {
		if v.Stderr, err = e.content(ctx, d.Stderr); err != nil {
			return nil, fmt.Errorf("step %s: stderr: %w", h, err)
		}
	}
	for i, a := range d.Attempts {
		t, err := e.content(ctx, a)
		if err != nil {
			return nil, fmt.Errorf("step %s: failed attempt %d: %w", h, i+1, err)
		}
		v.Attempts = append(v.Attempts, t)
	}
	return v, nil
}

// content reads the text of content node h; the error names h.
func (e *Engine) content(ctx context.Context, h cas.Hash) (string, error) {
	n, err := e.repo.Get(ctx, h)
	if err != nil {
		return "", fmt.Errorf("content %s: %w", h, err)
	}
	s, err := DecodeContent(n)
	if err != nil {
		return "", fmt.Errorf("content %s: %w", h, err)
	}
	return s, nil
}

// DecodeContent returns a content node's text. The error wraps
// [cas.ErrInvalid] for a node of another type.
func DecodeContent(n cas.Node) (string, error) {
	s, ok := n.Payload.(string)
	if n.Type != cas.ContentSchema || !ok {
		return "", fmt.Errorf("%w: not a content node (type %s)", cas.ErrInvalid, n.Type)
	}
	return s, nil
}

// StepEntry is one node of a thread's chain as [Engine.Steps] lists it.
type StepEntry struct {
	*Node
	// Status is a step's output status (its "status" field); "" for a
	// start or a mark, and for an output without a string status.
	Status string
}

// Steps iterates thread id's chain from its start node to its head, each
// step with its output's status. It stops at the first error, which wraps
// [cas.ErrNotFound] if the thread or a node is absent and [cas.ErrCorrupt]
// if a node is damaged, and names the node.
func (e *Engine) Steps(ctx context.Context, id string) iter.Seq2[*StepEntry, error] {
	return func(yield func(*StepEntry, error) bool) {
		head, err := e.Head(ctx, id)
		if err != nil {
			yield(nil, err)
			return
		}
		for n, err := range e.OldestFirst(ctx, head) {
			if err != nil {
				yield(nil, err)
				return
			}
			en := &StepEntry{Node: n}
			if _, output, ok := n.routed(); ok { // a step, or a join
				out, err := e.repo.Get(ctx, output)
				if err != nil {
					yield(nil, fmt.Errorf("%s %s: output %s: %w", n.Kind, n.Hash, output, err))
					return
				}
				en.Status = outputStatus(out.Payload)
			}
			if !yield(en, nil) {
				return
			}
		}
	}
}

// outputStatus is a typed output's "status" field; "" if it has none or
// it is not a string.
func outputStatus(payload any) string {
	m, _ := payload.(map[string]any)
	s, _ := m["status"].(string)
	return s
}
