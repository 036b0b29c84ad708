package moderator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Reserved names of the graph (SPEC §6).
const (
	// Start is the source role of a fresh thread; it appears only as a
	// graph key.
	Start = "$START"
	// End is the target that finishes a thread; it appears only as an
	// edge's Role.
	End = "$END"
	// Suspend is the status any role may output to ask for a human. It is
	// never in the graph: [Route] answers it with a [Decision] whose Role is
	// Suspend.
	Suspend = "$SUSPEND"
	// StatusNew is the status routed from [Start] for a fresh thread.
	StatusNew = "new"
)

// Graph is a workflow's routing table: from-role -> status -> edge. [Start]
// is the source for a new thread. A nil Graph has no roles. The moderator
// never modifies a Graph; the registry validates it.
type Graph map[string]map[string]Edge

// Edge is one transition: the target role (or [End]) and the prompt template
// handed to it, whose {{ field }} references are filled from the output that
// chose the edge (see [Render]).
type Edge struct {
	Role   string `json:"role"`
	Prompt string `json:"prompt"`
}

// Decision is the moderator's answer: after role From output Status, run
// Role with Prompt. Role is [End] when the thread is finished and [Suspend]
// (with an empty Prompt) when the output asked for a human.
type Decision struct {
	From   string // the last role, or [Start]
	Status string // the status read from the last output
	Role   string // the next role, [End] or [Suspend]
	Prompt string // the edge prompt, rendered from the last output
}

// Route returns the next edge after lastRole produced lastOutput: the edge
// g[lastRole][status], where status is lastOutput["status"], with its prompt
// rendered from lastOutput by [Render]. For a fresh thread call it with
// lastRole [Start] and output map[string]any{"status": [StatusNew]}, or use
// [RouteStart].
//
// lastOutput is a plain JSON value (nil, bool, float64, string, []any,
// map[string]any); other Go values are read as [Render] reads them. A status of [Suspend] is answered without a graph lookup
// of the status: the Decision's Role is Suspend and its Prompt empty.
//
// The error is an [*Error] with Role and, once read, Status set; it wraps
// [ErrUnknownRole] if g has no entry for lastRole, [ErrNoStatus] if
// lastOutput is not an object or its "status" is absent or not a string,
// [ErrUnknownStatus] if lastRole has no edge for the status, and
// [ErrMissingField] or [ErrBadTemplate] if the edge prompt cannot be
// rendered. Route is a pure function: it is safe for concurrent use as long
// as nobody modifies g or lastOutput.
func Route(g Graph, lastRole string, lastOutput any) (Decision, error) {
	edges, ok := g[lastRole]
	if !ok {
		e := &Error{Kind: KindUnknownRole, Role: lastRole, Known: g.Roles()}
		if m, ok := plain(lastOutput, 0).(map[string]any); ok {
			e.Status, _ = m["status"].(string)
		}
		return Decision{}, e
	}
	status, err := statusOf(lastRole, lastOutput)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{From: lastRole, Status: status}
	if status == Suspend {
		d.Role = Suspend
		return d, nil
	}
	edge, ok := edges[status]
	if !ok {
		return Decision{}, &Error{Kind: KindUnknownStatus, Role: lastRole, Status: status, Known: g.Statuses(lastRole)}
	}
	d.Role = edge.Role
	d.Prompt, err = Render(edge.Prompt, lastOutput)
	if err != nil {
		var e *Error
		if errors.As(err, &e) { // always: Render returns a fresh *Error
			e.Role, e.Status = lastRole, status
		}
		return Decision{}, err
	}
	return d, nil
}

// RouteStart returns the first edge of a fresh thread: Route(g, [Start],
// {"status": [StatusNew]}). The error wraps [ErrUnknownRole] if g has no
// [Start] entry and [ErrUnknownStatus] if that entry has no [StatusNew]
// edge; a template naming fields fails with [ErrMissingField].
func RouteStart(g Graph) (Decision, error) {
	return Route(g, Start, map[string]any{"status": StatusNew})
}

// statusOf reads the string status of a role's output.
func statusOf(role string, output any) (string, error) {
	noStatus := func(detail string) error {
		return &Error{Kind: KindNoStatus, Role: role, Detail: detail}
	}
	m, ok := plain(output, 0).(map[string]any)
	if !ok {
		if output == nil {
			return "", noStatus("is null, not an object with a status")
		}
		return "", noStatus(fmt.Sprintf("is %s, not an object with a status", typeName(output)))
	}
	v, ok := m["status"]
	if !ok {
		return "", noStatus(`has no "status" field`)
	}
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", noStatus("has a null status, not a string (quote it in YAML)")
	case bool, float64:
		return "", noStatus(fmt.Sprintf("has status %s (%s), not a string (quote it in YAML)", scalarText(s), typeName(s)))
	default:
		return "", noStatus(fmt.Sprintf("has a status that is %s, not a string", typeName(s)))
	}
}

// Roles returns the source roles of g, [Start] included, sorted. The caller
// owns the returned slice.
func (g Graph) Roles() []string {
	return slices.Sorted(maps.Keys(g))
}

// Statuses returns the statuses role has edges for, sorted; nil if role is
// not in g. The caller owns the returned slice.
func (g Graph) Statuses(role string) []string {
	edges, ok := g[role]
	if !ok {
		return nil
	}
	return slices.Sorted(maps.Keys(edges))
}

// Targets returns every role some edge of g leads to, [End] included if an
// edge ends the thread, sorted and without duplicates. The caller owns the
// returned slice.
func (g Graph) Targets() []string {
	var targets []string
	for _, edges := range g {
		for _, e := range edges {
			targets = append(targets, e.Role)
		}
	}
	slices.Sort(targets)
	return slices.Compact(targets)
}
