package registry

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/roleschema"
)

// Warnings returns what is valid in w but likely to stop a thread, sorted
// by position: a prompt field that the schema of the edge's role does not
// require (no "required" list along its path names it), so that an output
// leaving it out, which the schema accepts, stops the thread at that edge
// with a missing-field error. A field under an array index is not
// checked (no schema keyword promises an index). A workflow from [Parse]
// reports with its file's lines and columns; one built in Go without
// positions. w is assumed valid ([Parse] or [Workflow.Validate]).
func (w *Workflow) Warnings() []Problem {
	ps := &problems{File: w.file}
	for _, from := range w.Graph.Roles() {
		r := w.Roles[from]
		if strings.HasPrefix(from, "$") || r == nil || r.Frontmatter == nil {
			continue
		}
		si := analyse(r.Frontmatter)
		for _, status := range w.Graph.Statuses(from) {
			fields, err := moderator.Fields(w.Graph[from][status].Prompt)
			if err != nil || len(fields) == 0 {
				continue
			}
			edgeKey := posKey{a: "graph", b: from, c: status}
			at := w.firstOf(posKey{a: "graph", b: from, c: status, d: "prompt"}, edgeKey)
			for _, f := range fields {
				segs := strings.Split(f, ".")
				for _, scope := range si.scopes(status) {
					i := optionalField(si.root, scope, segs)
					if i < 0 {
						continue
					}
					where := "the " + from + " schema"
					if i > 0 {
						where = strconv.Quote(strings.Join(segs[:i], ".")) + " in " + where
					}
					ps.Add(at, "graph.%s.%s.prompt: field %s is optional: no \"required\" of %s lists %s, so an output without it stops the thread at this edge (add it to required, or leave it out of the prompt)",
						from, status, strconv.Quote(f), where, strconv.Quote(segs[i]))
					break
				}
			}
		}
	}
	list := slices.Clone(ps.List)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.Compact(list)
}

// optionalField follows a template path through the schemas ps as
// [findField] does and returns the index of the first segment that no
// "required" of the schemas it passes names, or -1 if every segment up to
// the end, or up to an array index, is required somewhere (in a union, a
// segment one branch requires counts: the check warns only when nothing
// asks for the field).
func optionalField(root any, ps []map[string]any, segs []string) int {
	cur := ps
	for i, seg := range segs {
		if _, isIndex := moderator.Index(seg); isIndex {
			return -1
		}
		required := false
		var next []any
		for _, p := range cur {
			if req, ok := p["required"].([]any); ok && slices.Contains(req, any(seg)) {
				required = true
			}
			if props, ok := p["properties"].(map[string]any); ok {
				if s, ok := props[seg]; ok {
					next = append(next, s)
				}
			}
		}
		if !required {
			return i
		}
		if len(next) == 0 {
			return -1 // the path's end is not in the schema: Validate reports it
		}
		cur = roleschema.Alternatives(root, next...)
	}
	return -1
}
