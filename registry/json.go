package registry

import (
	"encoding/json"
	"slices"

	"github.com/uncaged/uwf/cas"
)

// The JSON shapes below are the stable --json output of `uwf workflow`
// (docs/CLI.md) and the bodies of the HTTP API's workflow routes
// (docs/HTTP.md): both build them here.

// EntryJSON is a workflow as `workflow list --json` prints it.
type EntryJSON struct {
	Name        string   `json:"name"`
	Hash        cas.Hash `json:"hash"`
	Updated     int64    `json:"updated"`
	Description string   `json:"description"`
}

// JSON returns the entry as `workflow list --json` prints it.
func (e Entry) JSON() EntryJSON {
	return EntryJSON{e.Name, e.Hash, e.Updated.UnixMilli(), e.Description}
}

// VersionJSON is a version as `workflow history --json` prints it.
type VersionJSON struct {
	Hash    cas.Hash `json:"hash"`
	Old     cas.Hash `json:"old"`
	Time    int64    `json:"time"`
	Message string   `json:"message"`
}

// JSON returns the version as `workflow history --json` prints it.
func (v Version) JSON() VersionJSON {
	return VersionJSON{v.Hash, v.Old, v.Time.UnixMilli(), v.Message}
}

// StoredJSON is `workflow show --json`: the name, the node's hash and its
// payload as stored.
type StoredJSON struct {
	Name    string          `json:"name"`
	Hash    cas.Hash        `json:"hash"`
	Payload json.RawMessage `json:"payload"`
}

// JSON returns the workflow as `workflow show --json` prints it.
func (s *Stored) JSON() (*StoredJSON, error) {
	payload, err := cas.Canonical(s.Payload)
	if err != nil {
		return nil, err
	}
	return &StoredJSON{s.Name, s.Hash, payload}, nil
}

// GraphJSON is a workflow's routing graph as a list of roles and edges,
// sorted, for drawing: every role with its schema and statuses, and every
// edge from a role (or $START) on a status to a role (or $END).
type GraphJSON struct {
	Roles []GraphRoleJSON `json:"roles"`
	Edges []GraphEdgeJSON `json:"edges"`
}

// GraphRoleJSON is a role in [GraphJSON].
type GraphRoleJSON struct {
	Name     string   `json:"name"`
	Schema   cas.Hash `json:"schema"`
	Statuses []string `json:"statuses"`
}

// GraphEdgeJSON is an edge in [GraphJSON].
type GraphEdgeJSON struct {
	From   string `json:"from"`
	Status string `json:"status"`
	To     string `json:"to"`
	Prompt string `json:"prompt"`
}

// Graph returns the stored workflow's graph.
func (s *Stored) Graph() GraphJSON {
	wf := s.Workflow
	g := GraphJSON{Roles: []GraphRoleJSON{}, Edges: []GraphEdgeJSON{}}
	for _, name := range wf.RoleNames() {
		st := wf.Statuses(name)
		if st == nil {
			st = []string{}
		}
		g.Roles = append(g.Roles, GraphRoleJSON{name, s.Schemas[name], st})
	}
	for from, edges := range wf.Graph {
		for status, e := range edges {
			g.Edges = append(g.Edges, GraphEdgeJSON{from, status, e.Role, e.Prompt})
		}
	}
	slices.SortFunc(g.Edges, func(a, b GraphEdgeJSON) int {
		if a.From != b.From {
			return cmpString(a.From, b.From)
		}
		return cmpString(a.Status, b.Status)
	})
	return g
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
