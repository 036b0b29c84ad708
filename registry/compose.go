package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/yamldoc"
)

// Composition (docs/WORKFLOWS.md, "Composition"): a role may run a whole
// workflow as a child thread instead of an agent, and a stage runs several
// roles at once, in parallel or as a race. A workflow that has either is
// stored as a workflow2 node (format version 2); one that has neither stays
// a version-1 workflow node, its hash unchanged.

// Modes of a call: how a role or stage runs its branches.
const (
	ModeChild    = "child"    // a role that runs a workflow as one child thread
	ModeParallel = "parallel" // a stage whose branches all run; the join waits for all
	ModeRace     = "race"     // a stage whose first success wins; the others are cancelled
)

// MaxTimeout bounds a stage's timeout: 30 days.
const MaxTimeout = 30 * 24 * time.Hour

// JoinRule derives a stage's status from its branches' statuses: the first
// rule that matches gives the status. A rule with All matches when every
// branch finished with that status; with Any when some branch did; with
// neither it always matches (put it last, as the otherwise case).
type JoinRule struct {
	Status string
	All    string
	Any    string
}

// Matches reports whether the rule holds for the statuses of the branches
// of a call (one per branch; "" for a branch that did not finish).
func (r JoinRule) Matches(statuses []string) bool {
	switch {
	case r.All != "":
		for _, s := range statuses {
			if s != r.All {
				return false
			}
		}
		return len(statuses) > 0
	case r.Any != "":
		return slices.Contains(statuses, r.Any)
	}
	return true
}

// Each is a fan-out: one branch of Role per item of the list at field Over
// (a dotted path) of the output the stage is routed from.
type Each struct {
	Role string
	Over string
}

// Mode returns how r runs: [ModeChild] for a role that names a workflow,
// [ModeParallel] or [ModeRace] for a stage, "" for an agent role.
func (r *Role) Mode() string {
	switch {
	case r == nil:
		return ""
	case r.Workflow != "":
		return ModeChild
	case len(r.Parallel) > 0, r.Each != nil:
		return ModeParallel
	case len(r.Race) > 0:
		return ModeRace
	}
	return ""
}

// Members returns the roles a stage runs; nil for other roles.
func (r *Role) Members() []string {
	if r == nil {
		return nil
	}
	if len(r.Parallel) > 0 {
		return r.Parallel
	}
	if r.Each != nil {
		return []string{r.Each.Role}
	}
	return r.Race
}

// IsStage reports whether r is a parallel, race or each stage.
func (r *Role) IsStage() bool { return len(r.Members()) > 0 }

// Composes reports whether w has a role that runs a workflow or a stage:
// such a workflow is stored as a workflow2 node (format version 2).
func (w *Workflow) Composes() bool {
	for _, r := range w.Roles {
		if r.Mode() != "" {
			return true
		}
	}
	return false
}

// IsWorkflowType reports whether t is the type of a workflow node: the
// version-1 workflow or the version-2 workflow2.
func IsWorkflowType(t cas.Hash) bool { return t == cas.WorkflowSchema || t == cas.Workflow2Schema }

// StageSchema returns the output schema of a stage, derived from its
// members: {status, branches: {<member>: <member's output>}}, its statuses
// those of its join rules, or without rules every status a member can
// output (the winner's for a race; the one all branches share for a
// parallel stage). Members without a schema accept any output.
func (w *Workflow) StageSchema(stage string) any {
	r := w.Roles[stage]
	statuses := w.StageStatuses(stage)
	enum := make([]any, len(statuses))
	for i, s := range statuses {
		enum[i] = s
	}
	memberSchema := func(m string) any {
		if mr := w.Roles[m]; mr != nil && mr.Frontmatter != nil {
			if v, err := cas.ToValue(mr.Frontmatter); err == nil {
				return v
			}
		}
		return true
	}
	branches := map[string]any{"type": "object"}
	if r.Each != nil {
		// Keyed by item index: 0, 1, ...
		branches["propertyNames"] = map[string]any{"pattern": "^(0|[1-9][0-9]*)$"}
		branches["additionalProperties"] = memberSchema(r.Each.Role)
	} else {
		props := map[string]any{}
		for _, m := range r.Members() {
			props[m] = memberSchema(m)
		}
		branches["additionalProperties"], branches["properties"] = false, props
	}
	return map[string]any{
		"type":     "object",
		"required": []any{"status", "branches"},
		"properties": map[string]any{
			"status":   map[string]any{"enum": enum},
			"branches": branches,
		},
		"additionalProperties": false,
	}
}

// StageStatuses returns the statuses a stage's join can carry, sorted.
func (w *Workflow) StageStatuses(stage string) []string {
	r := w.Roles[stage]
	var out []string
	if len(r.Join) > 0 {
		for _, j := range r.Join {
			out = append(out, j.Status)
		}
	} else {
		for _, m := range r.Members() {
			out = append(out, w.Statuses(m)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// JoinStatus derives a stage's status from its branches' statuses (in the
// order of its members; "" for a branch that did not finish) and, for a
// race, its winner's: the first join rule that matches; without one, the
// winner's status for a race and the status every finished branch shares
// for a parallel stage. The error says why none could be derived.
func (r *Role) JoinStatus(statuses []string, winner string) (string, error) {
	for _, j := range r.Join {
		if j.Matches(statuses) {
			return j.Status, nil
		}
	}
	if len(r.Join) > 0 {
		return "", fmt.Errorf("no join rule matches the branches' statuses %s", quoteList(statuses))
	}
	if r.Mode() == ModeRace {
		return winner, nil
	}
	common := ""
	for _, s := range statuses {
		if s == "" {
			continue
		}
		if common != "" && s != common {
			return "", fmt.Errorf("the branches finished with different statuses %s and the stage has no join rules to say which wins", quoteList(statuses))
		}
		common = s
	}
	if common == "" {
		return "", fmt.Errorf("no branch finished")
	}
	return common, nil
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// composeKeys are the role keys of composition, for messages.
const composeKeys = "workflow, version, parallel, race, each, timeout, concurrency, join"

// composeKey reads a role key of composition; it reports false for a key
// that is not one.
func (p *parser) composeKey(name, key string, k, v *yaml.Node, r *Role) bool {
	path := "roles." + name + "." + key
	p.w.pos[posKey{a: "roles", b: name, c: key}] = yamldoc.Pos(k)
	switch key {
	case "workflow":
		r.Workflow, _ = p.str(v, path)
	case "version":
		s, ok := p.str(v, path)
		if !ok {
			return true
		}
		h, err := cas.ParseHash(s)
		if err != nil {
			p.ps.Add(yamldoc.Pos(v), "%s: %s", path, casMessage(err))
			return true
		}
		r.Version = h
	case "parallel":
		r.Parallel = p.strings(v, path)
	case "each":
		m, ok := p.mapping(v, path, "a mapping {role, over}")
		if !ok {
			return true
		}
		r.Each = &Each{}
		for ek, ev := range yamldoc.Pairs(m) {
			switch key := yamldoc.Resolve(ek).Value; key {
			case "role":
				r.Each.Role, _ = p.str(ev, path+".role")
			case "over":
				r.Each.Over, _ = p.str(ev, path+".over")
			default:
				p.ps.Add(yamldoc.Pos(ek), "%s: unknown key %s (each has role, over)", path, strconv.Quote(key))
			}
		}
	case "race":
		r.Race = p.strings(v, path)
	case "timeout":
		s, ok := p.str(v, path)
		if !ok {
			return true
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Millisecond || d > MaxTimeout {
			p.ps.Add(yamldoc.Pos(v), "%s: must be a duration of at least 1ms (\"90s\", \"10m\"), not %s", path, strconv.Quote(s))
			return true
		}
		r.Timeout = d
	case "concurrency":
		n := yamldoc.Resolve(v)
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || i <= 0 || i > maxMaxSteps {
			p.ps.Add(yamldoc.Pos(v), "%s: must be a positive integer, not %s", path, yamldoc.Describe(n))
			return true
		}
		r.Concurrency = int(i)
	case "join":
		n := yamldoc.Resolve(v)
		if n.Kind != yaml.SequenceNode {
			p.ps.Add(yamldoc.Pos(v), "%s: must be a list of rules ({status, all} , {status, any} or {status}), not %s", path, yamldoc.Describe(n))
			return true
		}
		for i, c := range n.Content {
			rp := fmt.Sprintf("%s[%d]", path, i)
			m, ok := p.mapping(c, rp, "a rule: {status, all}, {status, any} or {status}")
			if !ok {
				continue
			}
			var j JoinRule
			for rk, rv := range yamldoc.Pairs(m) {
				switch key := yamldoc.Resolve(rk).Value; key {
				case "status":
					j.Status, _ = p.str(rv, rp+".status")
				case "all":
					j.All, _ = p.str(rv, rp+".all")
				case "any":
					j.Any, _ = p.str(rv, rp+".any")
				default:
					p.ps.Add(yamldoc.Pos(rk), "%s: unknown key %s (a join rule has status, all, any)", rp, strconv.Quote(key))
				}
			}
			r.Join = append(r.Join, j)
		}
	default:
		delete(p.w.pos, posKey{a: "roles", b: name, c: key})
		return false
	}
	return true
}

// prepareStages derives the schema of every stage that has none (one
// built in Go, or parsed: a stage's schema is always derived).
func (w *Workflow) prepareStages() {
	for _, name := range w.RoleNames() {
		if r := w.Roles[name]; r != nil && r.IsStage() && r.Frontmatter == nil {
			r.Frontmatter = w.StageSchema(name)
			r.derived = true
		}
	}
}

// checkCompose adds the problems of composing roles: a role is an agent,
// a child workflow or a stage, never two; a stage's members are agent or
// child roles of w; timeouts, concurrency and join rules belong to stages.
func (w *Workflow) checkCompose(ps *problems) {
	for _, name := range w.RoleNames() {
		r := w.Roles[name]
		if r == nil || strings.HasPrefix(name, "$") {
			continue
		}
		at := func(key string) position {
			return w.firstOf(posKey{a: "roles", b: name, c: key}, posKey{a: "roles", b: name})
		}
		path := "roles." + name
		kinds := 0
		for _, b := range []bool{r.Workflow != "", len(r.Parallel) > 0, len(r.Race) > 0, r.Each != nil} {
			if b {
				kinds++
			}
		}
		if kinds > 1 {
			ps.Add(at("workflow"), "%s: a role is run by an agent, by a workflow (workflow), or is a stage (parallel, race or each): not more than one of these", path)
			continue
		}
		if r.Workflow != "" {
			if why := yamldoc.NameProblem(r.Workflow); why != "" {
				ps.Add(at("workflow"), "%s.workflow: %s %s", path, strconv.Quote(r.Workflow), why)
			}
		} else if !r.Version.IsZero() {
			ps.Add(at("version"), "%s.version: pins the version of a workflow: give workflow too", path)
		}
		if !r.IsStage() {
			for key, set := range map[string]bool{"timeout": r.Timeout != 0, "concurrency": r.Concurrency != 0, "join": len(r.Join) > 0} {
				if set {
					ps.Add(at(key), "%s.%s: only a stage (parallel or race) has %s", path, key, key)
				}
			}
			continue
		}
		key := "parallel"
		switch {
		case r.Mode() == ModeRace:
			key = "race"
		case r.Each != nil:
			key = "each"
			if r.Each.Over == "" {
				ps.Add(at(key), "%s.each.over: name the field of the routed output that holds the list", path)
			}
			if r.Each.Role == "" {
				ps.Add(at(key), "%s.each.role: name the role each item runs", path)
			}
		}
		if !r.derived {
			ps.Add(at("frontmatter"), "%s.frontmatter: a stage's output is derived from its members ({status, branches}): remove frontmatter", path)
		}
		if len(r.Members()) < 2 && r.Each == nil {
			ps.Add(at(key), "%s.%s: a stage runs at least two roles", path, key)
		}
		seen := map[string]bool{}
		for _, m := range r.Members() {
			mr, ok := w.Roles[m]
			switch {
			case seen[m]:
				ps.Add(at(key), "%s.%s: role %s is listed twice", path, key, strconv.Quote(m))
			case !ok:
				ps.Add(at(key), "%s.%s: unknown role %s (roles: %s)", path, key, strconv.Quote(m), strings.Join(w.RoleNames(), ", "))
			case m == name:
				ps.Add(at(key), "%s.%s: a stage cannot run itself", path, key)
			case mr.IsStage():
				ps.Add(at(key), "%s.%s: role %s is a stage: a stage runs agent or workflow roles", path, key, strconv.Quote(m))
			}
			seen[m] = true
		}
		if r.Concurrency > maxMaxSteps {
			ps.Add(at("concurrency"), "%s.concurrency: must be at most %d", path, int64(maxMaxSteps))
		}
		if r.Timeout < 0 || r.Timeout > MaxTimeout {
			ps.Add(at("timeout"), "%s.timeout: must be between 1ms and %s", path, MaxTimeout)
		}
		var memberStatuses []string
		for _, m := range r.Members() {
			memberStatuses = append(memberStatuses, w.Statuses(m)...)
		}
		for i, j := range r.Join {
			rp := fmt.Sprintf("%s.join[%d]", path, i)
			switch {
			case j.Status == "":
				ps.Add(at("join"), "%s: missing status", rp)
			case reservedStatus(j.Status):
				ps.Add(at("join"), "%s: status %q is reserved", rp, j.Status)
			}
			if j.All != "" && j.Any != "" {
				ps.Add(at("join"), "%s: a rule has all or any, not both", rp)
			}
			for _, s := range []string{j.All, j.Any} {
				if s != "" && !slices.Contains(memberStatuses, s) {
					ps.Add(at("join"), "%s: no member of the stage outputs status %s", rp, strconv.Quote(s))
				}
			}
		}
	}
}

// stageMembers returns the roles some stage of w runs.
func (w *Workflow) stageMembers() map[string]bool {
	out := map[string]bool{}
	for _, r := range w.Roles {
		for _, m := range r.Members() {
			out[m] = true
		}
	}
	return out
}

// composePayload adds r's composition fields to its stored payload rp.
func composePayload(r *Role, rp map[string]any) {
	if r.Workflow != "" {
		rp["workflow"] = r.Workflow
	}
	if !r.Version.IsZero() {
		rp["version"] = r.Version.String()
	}
	list := func(ss []string) []any {
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	if len(r.Parallel) > 0 {
		rp["parallel"] = list(r.Parallel)
	}
	if len(r.Race) > 0 {
		rp["race"] = list(r.Race)
	}
	if r.Each != nil {
		rp["each"] = map[string]any{"role": r.Each.Role, "over": r.Each.Over}
	}
	if r.Timeout > 0 {
		rp["timeoutMs"] = float64(r.Timeout.Milliseconds())
	}
	if r.Concurrency > 0 {
		rp["concurrency"] = float64(r.Concurrency)
	}
	if len(r.Join) > 0 {
		rules := make([]any, len(r.Join))
		for i, j := range r.Join {
			m := map[string]any{"status": j.Status}
			if j.All != "" {
				m["all"] = j.All
			}
			if j.Any != "" {
				m["any"] = j.Any
			}
			rules[i] = m
		}
		rp["join"] = rules
	}
}

// loadCompose reads r's composition fields from its stored payload rp.
func loadCompose(r *Role, rp map[string]any) {
	r.Workflow, _ = rp["workflow"].(string)
	if s, ok := rp["version"].(string); ok {
		r.Version, _ = cas.ParseCanonicalHash(s)
	}
	strs := func(v any) []string {
		l, _ := v.([]any)
		var out []string
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	r.Parallel, r.Race = strs(rp["parallel"]), strs(rp["race"])
	if m, ok := rp["each"].(map[string]any); ok {
		r.Each = &Each{}
		r.Each.Role, _ = m["role"].(string)
		r.Each.Over, _ = m["over"].(string)
	}
	if f, ok := rp["timeoutMs"].(float64); ok {
		r.Timeout = time.Duration(f) * time.Millisecond
	}
	if f, ok := rp["concurrency"].(float64); ok {
		r.Concurrency = int(f)
	}
	rules, _ := rp["join"].([]any)
	for _, e := range rules {
		m, _ := e.(map[string]any)
		var j JoinRule
		j.Status, _ = m["status"].(string)
		j.All, _ = m["all"].(string)
		j.Any, _ = m["any"].(string)
		r.Join = append(r.Join, j)
	}
	r.derived = r.IsStage()
}

// ChildWorkflow resolves the workflow a child role runs: its pinned
// version, or the current version of workflows/<name>. The error wraps
// [cas.ErrNotFound] when there is none, [cas.ErrInvalid] when the pinned
// node is not a workflow of that name.
func (r *Registry) ChildWorkflow(ctx context.Context, role *Role) (cas.Hash, error) {
	if !role.Version.IsZero() {
		st, err := r.load(ctx, role.Version)
		if err != nil {
			return 0, fmt.Errorf("workflow %s version %s: %w", role.Workflow, role.Version, err)
		}
		if st.Name != role.Workflow {
			return 0, fmt.Errorf("workflow %s version %s: %w: that node is workflow %s", role.Workflow, role.Version, cas.ErrInvalid, st.Name)
		}
		return role.Version, nil
	}
	h, err := r.repo.Refs().Get(ctx, RefName(role.Workflow))
	if errors.Is(err, cas.ErrNotFound) {
		return 0, fmt.Errorf("workflow %s is not registered: %w (register it first: uwf workflow put <file>)", role.Workflow, cas.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("workflow %s: %w", role.Workflow, err)
	}
	return h, nil
}

// checkChildren checks, before w is stored, that the workflow of every
// child role resolves.
func (r *Registry) checkChildren(ctx context.Context, w *Workflow) error {
	ps := &problems{File: w.file}
	for _, name := range w.RoleNames() {
		role := w.Roles[name]
		if role.Mode() != ModeChild {
			continue
		}
		if _, err := r.ChildWorkflow(ctx, role); err != nil {
			ps.Add(w.firstOf(posKey{a: "roles", b: name, c: "workflow"}, posKey{a: "roles", b: name}), "roles.%s.workflow: %s", name, err.Error())
		}
	}
	return ps.Err()
}
