package registry

import (
	"slices"
	"time"

	"github.com/uncaged/uwf/cas"

	"github.com/uncaged/uwf/moderator"
)

// Workflow is a workflow in memory, as [Parse] reads it from YAML or
// [Registry.Load] reads it from the store: roles with their output schemas,
// and the status graph the moderator walks. A Workflow built in Go is
// validated by [Workflow.Validate] (and by [Registry.Put]).
//
// A Workflow is not safe for concurrent modification; reading it from many
// goroutines is fine.
type Workflow struct {
	// Name is the workflow's name, a ref segment: [A-Za-z0-9][A-Za-z0-9._-]*,
	// at most 190 characters. The registry keeps it at workflows/<Name>.
	Name string
	// Description is optional text for people.
	Description string
	// MaxSteps bounds the steps of a thread (SPEC §5); 0 means no bound.
	MaxSteps int
	// Roles maps a role name to its definition.
	Roles map[string]*Role
	// Graph maps a from-role ([moderator.Start] included) and a status to
	// the edge taken.
	Graph moderator.Graph

	file string              // the file Parse read, for messages
	pos  map[posKey]position // where things stand in that file
	// flagged holds roles ({"roles", name}) whose schema, and edges
	// ({"graph", from, status}) whose target, already have a problem
	// reported while parsing; the checks that depend on them skip them.
	flagged map[posKey]bool
}

// Role is one role of a workflow: the instructions handed to its agent and
// the JSON Schema of its structured output.
type Role struct {
	Description  string   // for people; optional
	Goal         string   // who the agent is; optional
	Procedure    string   // how it works; optional
	Output       string   // what its markdown body should hold; optional
	Capabilities []string // free-form tags for the agent runtime; optional
	// Frontmatter is the JSON Schema (draft 2020-12) of the role's
	// structured output, as plain JSON values (map[string]any, []any,
	// string, float64, bool, nil). It must pin "status" to a const or an
	// enum, or be a oneOf/anyOf of variants that each do.
	Frontmatter any

	// Workflow, if set, names the workflow this role runs as a child
	// thread instead of an agent: the edge prompt is the child's task, and
	// its final output (which must fit Frontmatter) is the role's output.
	Workflow string
	// Version pins the child workflow to one version; zero means the
	// current version of workflows/<Workflow> when the role is stepped.
	Version cas.Hash
	// Parallel or Race makes the role a stage that runs these roles at
	// once: all of them (the join waits for all), or as a race (the first
	// success wins). A stage's Frontmatter is derived ([Workflow.StageSchema]).
	Parallel, Race []string
	// Timeout bounds a stage: branches still running then are cancelled.
	// Zero means none.
	Timeout time.Duration
	// Concurrency bounds how many branches of a stage run at once; zero
	// means all.
	Concurrency int
	// Join derives a stage's status from its branches' ([JoinRule]).
	Join []JoinRule
	// Each makes the role a fan-out stage: one branch of Each.Role per
	// item of the list at field Each.Over of the output routed from (a
	// parallel stage whose branches are keyed 0, 1, ...).
	Each *Each

	derived bool // Frontmatter was derived (a stage)
}

// Statuses returns the statuses role's schema pins, sorted; nil if the
// workflow has no such role or its schema pins none. The caller owns the
// returned slice.
func (w *Workflow) Statuses(role string) []string {
	r, ok := w.Roles[role]
	if !ok || r == nil {
		return nil
	}
	return analyse(r.Frontmatter).statuses()
}

// RoleNames returns the names of w's roles, sorted. The caller owns the
// returned slice.
func (w *Workflow) RoleNames() []string {
	names := make([]string, 0, len(w.Roles))
	for n := range w.Roles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// posKey names a place in a workflow file: {"name"}, {"roles", role},
// {"roles", role, "frontmatter"}, {"graph", from, status, "prompt"}, ...
type posKey struct{ a, b, c, d string }

// partialGraph flags a graph some part of which could not be read (and was
// reported): checks over the whole graph would only add noise.
var partialGraph = posKey{a: "partial graph"}

// at returns where k stands, or the zero position.
func (w *Workflow) at(k posKey) position { return w.pos[k] }

// has reports whether the parsed file had k.
func (w *Workflow) has(k posKey) bool {
	_, ok := w.pos[k]
	return ok
}

// firstOf returns the position of the first key of ks the file had.
func (w *Workflow) firstOf(ks ...posKey) position {
	for _, k := range ks {
		if p, ok := w.pos[k]; ok {
			return p
		}
	}
	return position{}
}

// GraphEdge is one edge of a workflow's graph, as [Workflow.Edges] lists
// them.
type GraphEdge struct {
	From   string // a role or [moderator.Start]
	Status string
	moderator.Edge
}

// Edges returns the edges of w's graph in the order of its file: the order
// [Parse] read them in. A workflow read back from the store has no file
// (its node is canonical JSON, which keeps no key order), so its edges come
// in the order a workflow is written in: from $START, each role in the
// order routing first reaches it, its statuses in the order its schema
// lists them (then any others, sorted); roles routing never reaches come
// last, sorted. The caller owns the returned slice.
func (w *Workflow) Edges() []GraphEdge {
	var out []GraphEdge
	for _, from := range w.graphFroms() {
		for _, st := range w.edgeStatuses(from) {
			out = append(out, GraphEdge{From: from, Status: st, Edge: w.Graph[from][st]})
		}
	}
	return out
}

// filePos is where k stands in w's file, if w was parsed from one.
func (w *Workflow) filePos(k posKey) (position, bool) {
	p, ok := w.pos[k]
	return p, ok
}

// byFile sorts names by the file position key(name) gives, when every one
// has a position; it reports whether it did.
func (w *Workflow) byFile(names []string, key func(string) posKey) bool {
	for _, n := range names {
		if _, ok := w.filePos(key(n)); !ok {
			return false
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		pa, _ := w.filePos(key(a))
		pb, _ := w.filePos(key(b))
		if pa.Line != pb.Line {
			return pa.Line - pb.Line
		}
		return pa.Col - pb.Col
	})
	return true
}

// graphFroms returns the graph's from-roles in file or flow order.
func (w *Workflow) graphFroms() []string {
	froms := make([]string, 0, len(w.Graph))
	for from := range w.Graph {
		froms = append(froms, from)
	}
	slices.Sort(froms)
	if w.byFile(froms, func(n string) posKey { return posKey{a: "graph", b: n} }) {
		return froms
	}
	seen := map[string]bool{}
	var order []string
	queue := []string{moderator.Start}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		if seen[from] {
			continue
		}
		seen[from] = true
		if _, ok := w.Graph[from]; !ok {
			continue
		}
		order = append(order, from)
		for _, st := range w.edgeStatuses(from) {
			queue = append(queue, w.Graph[from][st].Role)
		}
	}
	for _, from := range froms {
		if !seen[from] {
			order = append(order, from)
		}
	}
	return order
}

// edgeStatuses returns the statuses of from's edges in file or schema
// order.
func (w *Workflow) edgeStatuses(from string) []string {
	edges := w.Graph[from]
	all := make([]string, 0, len(edges))
	for st := range edges {
		all = append(all, st)
	}
	slices.Sort(all)
	if w.byFile(all, func(st string) posKey { return posKey{a: "graph", b: from, c: st} }) {
		return all
	}
	var order []string
	if from == moderator.Start {
		order = append(order, all...) // $START's one status, "new"
		return order
	}
	if r, ok := w.Roles[from]; ok && r != nil {
		for _, st := range analyse(r.Frontmatter).Statuses {
			if _, ok := edges[st]; ok && !slices.Contains(order, st) {
				order = append(order, st)
			}
		}
	}
	for _, st := range all {
		if !slices.Contains(order, st) {
			order = append(order, st)
		}
	}
	return order
}
