package registry

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/yamldoc"
	"github.com/uncaged/uwf/moderator"
)

// MaxNameLen is the longest workflow or role name: workflows/<name> must
// be a valid ref name (200 characters at most).
const MaxNameLen = yamldoc.MaxNameLen

const suspendInGraph = moderator.Suspend + " never appears in the graph: it is the status any role outputs to ask for a human"

// ValidName reports whether s can name a workflow or a role:
// [A-Za-z0-9][A-Za-z0-9._-]*, at most [MaxNameLen] characters.
func ValidName(s string) bool { return yamldoc.NameProblem(s) == "" }

// check adds every semantic problem of w to ps (the rules of SPEC §6 and
// docs/WORKFLOWS.md). It runs on parsed workflows and on workflows built in
// Go alike.
func (w *Workflow) check(ps *problems) {
	top := w.at(posKey{a: "top"})
	if w.flagged[posKey{a: "top"}] {
		return // not a mapping: nothing else to say
	}

	// Name and maxSteps.
	switch {
	case w.flagged[posKey{a: "name"}]:
	case w.Name == "" && !w.has(posKey{a: "name"}):
		ps.Add(top, "missing name")
	default:
		if why := yamldoc.NameProblem(w.Name); why != "" {
			ps.Add(w.at(posKey{a: "name"}), "name: %s %s", strconv.Quote(w.Name), why)
		}
	}
	if w.MaxSteps < 0 {
		ps.Add(w.at(posKey{a: "maxSteps"}), "maxSteps: must be a positive integer, not %d", w.MaxSteps)
	}

	// Roles and their schemas.
	if len(w.Roles) == 0 {
		if w.has(posKey{a: "roles"}) {
			if w.Roles != nil {
				ps.Add(w.at(posKey{a: "roles"}), "roles: a workflow needs at least one role")
			}
		} else {
			ps.Add(top, "missing roles")
		}
	}
	info := map[string]statusInfo{} // roles whose schema compiled and is not flagged
	for _, name := range w.RoleNames() {
		at := w.at(posKey{a: "roles", b: name})
		switch {
		case name == moderator.Start:
			ps.Add(at, "roles.%s: %s is reserved for the graph's source; it cannot be a role", name, name)
		case name == moderator.End:
			ps.Add(at, "roles.%s: %s is reserved for the graph's end; it cannot be a role", name, name)
		case name == moderator.Suspend:
			ps.Add(at, "roles.%s: %s is reserved for the status that asks for a human; it cannot be a role", name, name)
		case strings.HasPrefix(name, "$"):
			ps.Add(at, "roles.%s: role names may not start with \"$\" (reserved for the engine)", name)
		default:
			if why := yamldoc.NameProblem(name); why != "" {
				ps.Add(at, "roles.%s: role name %s %s", name, strconv.Quote(name), why)
			}
		}
		if strings.HasPrefix(name, "$") {
			continue // not a role: no further checks
		}
		if si, ok := w.checkSchema(ps, name); ok {
			info[name] = si
		}
	}
	w.checkCompose(ps)

	// The graph.
	if w.Graph == nil && !w.has(posKey{a: "graph"}) {
		ps.Add(top, "missing graph")
		return
	}
	if w.flagged[posKey{a: "graph"}] {
		return // not a mapping: reported
	}
	partial := w.flagged[partialGraph]
	graphAt := w.firstOf(posKey{a: "graph"}, posKey{a: "top"})
	roleList := strings.Join(w.RoleNames(), ", ")
	if roleList == "" {
		roleList = "none"
	}
	for _, from := range w.Graph.Roles() {
		fromAt := w.at(posKey{a: "graph", b: from})
		path := "graph." + from
		si, pinned := info[from]
		switch {
		case w.flagged[posKey{a: "graph", b: from}]:
			// not all of its statuses were read: reported
		case from == moderator.Start:
			if _, ok := w.Graph[from][moderator.StatusNew]; !ok {
				ps.Add(fromAt, "%s: missing status %q", path, moderator.StatusNew)
			}
		case from == moderator.End:
			ps.Add(fromAt, "%s: %s is a target only; it cannot have edges", path, from)
		case from == moderator.Suspend:
			ps.Add(fromAt, "%s: %s", path, suspendInGraph)
		case w.Roles[from] == nil:
			if _, ok := w.Roles[from]; !ok {
				ps.Add(fromAt, "%s: unknown role %s (roles: %s)", path, strconv.Quote(from), roleList)
			}
		case pinned && si.Pinned:
			for _, st := range si.statuses() {
				if _, ok := w.Graph[from][st]; !ok && !reservedStatus(st) {
					ps.Add(fromAt, "%s: missing status %s", path, strconv.Quote(st))
				}
			}
		}
		for _, status := range w.Graph.Statuses(from) {
			w.checkEdge(ps, from, status, info, roleList)
		}
	}
	if _, ok := w.Graph[moderator.Start]; !ok {
		ps.Add(graphAt, "graph: missing %s (the entry of every new thread: %s: { new: { role: ..., prompt: ... } })", moderator.Start, moderator.Start)
	}

	// Every role has edges and is reachable; some edge ends the thread.
	reached := map[string]bool{}
	queue := []string{moderator.Start}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, st := range w.Graph.Statuses(from) {
			to := w.Graph[from][st].Role
			if _, ok := w.Roles[to]; ok && !reached[to] {
				reached[to] = true
				queue = append(queue, to)
			}
			// A stage's members run under it.
			for _, m := range w.Roles[to].Members() {
				if _, ok := w.Roles[m]; ok && !reached[m] {
					reached[m] = true
					queue = append(queue, m)
				}
			}
		}
	}
	_, hasStart := w.Graph[moderator.Start]
	members := w.stageMembers()
	targets := map[string]bool{}
	for _, edges := range w.Graph {
		for _, e := range edges {
			targets[e.Role] = true
		}
	}
	for _, name := range w.RoleNames() {
		at := w.at(posKey{a: "roles", b: name})
		if strings.HasPrefix(name, "$") {
			continue
		}
		// A role run only as a stage's member routes nothing: its
		// output goes to the stage's join.
		if _, ok := w.Graph[name]; !ok && !(members[name] && !targets[name]) {
			if si, ok := info[name]; ok && si.Pinned {
				ps.Add(at, "roles.%s: no graph entry (graph.%s must give its statuses: %s)", name, name, strings.Join(si.statuses(), ", "))
			} else {
				ps.Add(at, "roles.%s: no graph entry", name)
			}
		}
		if hasStart && !partial && !reached[name] {
			ps.Add(at, "roles.%s: not reachable from %s", name, moderator.Start)
		}
	}
	if len(w.Graph) > 0 && !partial && !slices.Contains(w.Graph.Targets(), moderator.End) {
		ps.Add(graphAt, "graph: no edge leads to %s, so a thread could never finish", moderator.End)
	}
}

// reservedStatus reports whether a schema may not list st (reported by
// checkSchema).
func reservedStatus(st string) bool {
	return st == "" || st == moderator.StatusNew || strings.HasPrefix(st, "$")
}

// checkSchema checks one role's schema: present, a valid JSON Schema,
// pinning status to strings that are not reserved. It returns what the
// schema says about statuses, and false if the later checks must skip it.
func (w *Workflow) checkSchema(ps *problems, name string) (statusInfo, bool) {
	r := w.Roles[name]
	roleKey := posKey{a: "roles", b: name}
	if w.flagged[roleKey] {
		return statusInfo{}, false
	}
	if r == nil {
		r = &Role{} // built in Go: reported as a missing schema
	}
	fmKey := posKey{a: "roles", b: name, c: "frontmatter"}
	at := w.firstOf(fmKey, roleKey)
	path := "roles." + name + ".frontmatter"
	if r.Frontmatter == nil {
		if w.has(fmKey) {
			ps.Add(at, "%s: is empty: write the JSON Schema of the role's output", path)
		} else {
			ps.Add(at, "roles.%s: missing frontmatter (the JSON Schema of the role's output)", name)
		}
		return statusInfo{}, false
	}
	if _, err := cas.CompileSchema(r.Frontmatter); err != nil {
		ps.Add(at, "%s: invalid JSON Schema: %s", path, casMessage(err))
		return statusInfo{}, false
	}
	si := analyse(r.Frontmatter)
	for _, v := range si.NonString {
		b, err := cas.Canonical(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		ps.Add(at, "%s: status value %s is not a string", path, b)
	}
	if !si.Pinned {
		ps.Add(at, "%s: the schema does not pin status to a const or an enum (nor is it a oneOf or anyOf of variants that each do)", path)
		return si, true
	}
	if len(si.Statuses) == 0 {
		ps.Add(at, "%s: the schema admits no status for role %s: its const, enum and variants for status leave no string that one output could carry (they share none, or a oneOf allows each in more than one branch), so no output can validate", path, name)
		return si, false
	}
	for _, st := range si.statuses() {
		switch {
		case st == "":
			ps.Add(at, "%s: status \"\" is empty", path)
		case st == moderator.Suspend:
			ps.Add(at, "%s: status %q is reserved: any role may output it to ask for a human, so no schema lists it", path, st)
		case strings.HasPrefix(st, "$"):
			ps.Add(at, "%s: status %q is reserved: statuses starting with \"$\" belong to the engine", path, st)
		case st == moderator.StatusNew:
			ps.Add(at, "%s: status %q is reserved for %s (a new thread)", path, st, moderator.Start)
		}
	}
	return si, true
}

// checkEdge checks one edge: its status, its target and its prompt.
func (w *Workflow) checkEdge(ps *problems, from, status string, info map[string]statusInfo, roleList string) {
	e := w.Graph[from][status]
	edgeKey := posKey{a: "graph", b: from, c: status}
	path := "graph." + from + "." + status
	at := w.at(edgeKey)
	si, known := info[from]
	switch {
	case status == moderator.Suspend:
		ps.Add(at, "%s: %s", path, suspendInGraph)
		return
	case status == "":
		ps.Add(at, "%s: a status may not be empty", path)
	case from == moderator.Start && status != moderator.StatusNew:
		ps.Add(at, "%s: %s has only the status %q", path, moderator.Start, moderator.StatusNew)
	case known && si.Pinned && !slices.Contains(si.Statuses, status):
		ps.Add(at, "%s: status %s is not in the %s schema (%s)", path, strconv.Quote(status), from, strings.Join(si.statuses(), ", "))
		known = false // no variant to look fields up in
	}

	// The target.
	roleAt := w.firstOf(posKey{a: "graph", b: from, c: status, d: "role"}, edgeKey)
	switch {
	case w.flagged[edgeKey]:
	case e.Role == "" && !w.has(posKey{a: "graph", b: from, c: status, d: "role"}):
		ps.Add(at, "%s: missing role", path)
	case e.Role == moderator.Start:
		ps.Add(roleAt, "%s.role: %s is the graph's source only; it cannot be a target", path, moderator.Start)
	case e.Role == moderator.Suspend:
		ps.Add(roleAt, "%s.role: %s", path, suspendInGraph)
	case e.Role == moderator.End:
	default:
		if _, ok := w.Roles[e.Role]; !ok {
			ps.Add(roleAt, "%s.role: unknown role %s (roles: %s; or %s)", path, strconv.Quote(e.Role), roleList, moderator.End)
		}
	}

	// The prompt.
	promptAt := w.firstOf(posKey{a: "graph", b: from, c: status, d: "prompt"}, edgeKey)
	fields, err := moderator.Fields(e.Prompt)
	if err != nil {
		var me *moderator.Error
		if errors.As(err, &me) {
			ps.Add(promptAt, "%s.prompt: bad template at offset %d: %s", path, me.Offset, me.Detail)
		} else {
			ps.Add(promptAt, "%s.prompt: bad template: %s", path, err.Error())
		}
		return
	}
	if len(fields) == 0 {
		return
	}
	if from == moderator.Start {
		quoted := make([]string, len(fields))
		for i, f := range fields {
			quoted[i] = strconv.Quote(f)
		}
		ps.Add(promptAt, "%s.prompt: the %s prompt may not name fields (it names %s): a new thread has no output to fill them", path, moderator.Start, strings.Join(quoted, ", "))
		return
	}
	if !known {
		return
	}
	scopes := si.scopes(status)
	forStatus := ""
	if si.Pinned && len(si.variants) > 1 {
		forStatus = " for status " + strconv.Quote(status)
	}
	for _, f := range fields {
		segs := strings.Split(f, ".")
		for _, v := range scopes {
			i := findField(si.root, v, segs)
			if i < 0 {
				continue
			}
			var why string
			if i == 0 {
				why = "its properties: " + strings.Join(propertyNames(v), ", ")
			} else {
				why = fmt.Sprintf("%s has no property %s", strconv.Quote(strings.Join(segs[:i], ".")), strconv.Quote(segs[i]))
			}
			ps.Add(promptAt, "%s.prompt: field %s is not in the %s schema%s (%s)", path, strconv.Quote(f), from, forStatus, why)
			break
		}
	}
}
