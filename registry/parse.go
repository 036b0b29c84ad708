package registry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/yamldoc"
	"github.com/uncaged/uwf/moderator"
)

// MaxWorkflowSize is the largest workflow file [Parse] reads: 1 MiB.
const MaxWorkflowSize = 1 << 20

// maxSteps bounds maxSteps as the workflow schema does (an int up to 2^53).
const maxMaxSteps = 1 << 53

// Parse reads a workflow file and validates it. file names the file in
// messages ("review.yaml"); data is its content.
//
// The file must be one YAML document, a mapping with the keys name,
// description, maxSteps, roles and graph (docs/WORKFLOWS.md). Keys must be
// strings and unique, merge keys (<<) are resolved, and aliases may not
// expand the document by more than 10,000 nodes ([cas.CheckYAML]). Every problem is reported
// at once: the error is a *[ValidationError] (wrapping [cas.ErrInvalid])
// whose Error prints one "file:line:col: message" per line. Data larger
// than [MaxWorkflowSize] is refused before it is parsed, with an error
// wrapping [cas.ErrTooLarge].
//
// Role schemas are converted from YAML to plain JSON values by
// [cas.YAMLValue], so formatting (key order, quoting, comments, flow or
// block style, anchors) never changes the workflow's hash.
func Parse(file string, data []byte) (*Workflow, error) {
	if len(data) > MaxWorkflowSize {
		return nil, fmt.Errorf("%s: %w: the file is %d bytes, the limit is %d", file, cas.ErrTooLarge, len(data), MaxWorkflowSize)
	}
	w, ps := parse(file, data)
	if w != nil {
		w.prepareStages()
		w.check(ps)
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	return w, nil
}

// Validate reports whether data is a valid workflow file, exactly as
// [Parse] does, without returning the workflow: it backs
// "uwf workflow validate <file>".
func Validate(file string, data []byte) error {
	_, err := Parse(file, data)
	return err
}

// Validate checks w against every rule of docs/WORKFLOWS.md: names, roles,
// status sets, graph and templates. A workflow from [Parse] reports with
// its file's lines and columns; one built in Go without positions. The
// error is a *[ValidationError] listing every problem.
func (w *Workflow) Validate() error {
	ps := &problems{File: w.file}
	w.check(ps)
	return ps.Err()
}

// parse reads the YAML into a Workflow, recording positions, and reports
// what is wrong with the file as YAML and as a workflow's shape. It returns
// a nil Workflow when the file cannot be read at all.
func parse(file string, data []byte) (w *Workflow, ps *problems) {
	ps = &problems{File: file}
	defer func() {
		if r := recover(); r != nil { // the YAML library must not take the caller down
			w = nil
			ps.List = append(ps.List, Problem{Msg: fmt.Sprintf("YAML: cannot parse: %v", r)})
		}
	}()
	doc, err := cas.ParseYAMLNode(data)
	switch {
	case err != nil:
		yamldoc.AddYAMLError(ps, err)
		return nil, ps
	case doc == nil:
		ps.List = append(ps.List, Problem{Msg: "the file is empty: a workflow is a YAML mapping with name, roles and graph"})
		return nil, ps
	}
	fatal, bad := yamldoc.CheckTree(ps, doc)
	if fatal || len(doc.Content) == 0 {
		return nil, ps
	}
	p := &parser{ps: ps, bad: bad, w: &Workflow{
		file:    file,
		pos:     map[posKey]position{},
		flagged: map[posKey]bool{},
	}}
	p.top(doc.Content[0])
	return p.w, ps
}

// parser fills a Workflow from a checked YAML tree.
type parser struct {
	ps  *problems
	w   *Workflow
	bad map[*yaml.Node]bool // mappings with key problems (tree check)
}

func (p *parser) top(root *yaml.Node) {
	n := yamldoc.Resolve(root)
	p.w.pos[posKey{a: "top"}] = yamldoc.Pos(root)
	if n.Kind != yaml.MappingNode {
		p.w.flagged[posKey{a: "top"}] = true
		p.ps.Add(yamldoc.Pos(root), "a workflow is a YAML mapping with name, description, maxSteps, roles and graph, not %s", yamldoc.Describe(n))
		return
	}
	for k, v := range yamldoc.Pairs(n) {
		switch key := yamldoc.Resolve(k).Value; key {
		case "name":
			p.w.pos[posKey{a: "name"}] = yamldoc.Pos(v)
			var ok bool
			if p.w.Name, ok = p.str(v, "name"); !ok {
				p.w.flagged[posKey{a: "name"}] = true
			}
		case "description":
			p.w.Description, _ = p.str(v, "description")
		case "maxSteps":
			p.w.pos[posKey{a: "maxSteps"}] = yamldoc.Pos(v)
			p.maxSteps(v)
		case "roles":
			p.w.pos[posKey{a: "roles"}] = yamldoc.Pos(k)
			p.roles(v)
		case "graph":
			p.w.pos[posKey{a: "graph"}] = yamldoc.Pos(k)
			p.graph(v)
		default:
			p.ps.Add(yamldoc.Pos(k), "unknown key %s (a workflow has name, description, maxSteps, roles, graph)", strconv.Quote(key))
		}
	}
}

// str reads a string scalar, reporting anything else under path.
func (p *parser) str(v *yaml.Node, path string) (string, bool) {
	n := yamldoc.Resolve(v)
	if yamldoc.IsText(n) {
		return n.Value, true
	}
	p.ps.Add(yamldoc.Pos(v), "%s: must be a string%s", path, yamldoc.NotString(n))
	return "", false
}

// mapping checks that v is a mapping, reporting anything else under path.
func (p *parser) mapping(v *yaml.Node, path, what string) (*yaml.Node, bool) {
	n := yamldoc.Resolve(v)
	if n.Kind == yaml.MappingNode {
		return n, true
	}
	p.ps.Add(yamldoc.Pos(v), "%s: must be %s, not %s", path, what, yamldoc.Describe(n))
	return nil, false
}

func (p *parser) maxSteps(v *yaml.Node) {
	n := yamldoc.Resolve(v)
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || i <= 0 {
		what := n.Value
		switch {
		case n.Kind != yaml.ScalarNode:
			what = yamldoc.Describe(n)
		case n.Value == "":
			what = "empty"
		case yamldoc.IsText(n):
			what = "the string " + strconv.Quote(n.Value)
		}
		p.ps.Add(yamldoc.Pos(v), "maxSteps: must be a positive integer, not %s", what)
		return
	}
	if i > maxMaxSteps {
		p.ps.Add(yamldoc.Pos(v), "maxSteps: must be at most %d", int64(maxMaxSteps))
		return
	}
	p.w.MaxSteps = int(i)
}

func (p *parser) roles(v *yaml.Node) {
	m, ok := p.mapping(v, "roles", "a mapping of role names to roles")
	if !ok {
		return
	}
	p.w.Roles = map[string]*Role{}
	for k, rv := range yamldoc.Pairs(m) {
		name := yamldoc.Resolve(k).Value
		p.w.pos[posKey{a: "roles", b: name}] = yamldoc.Pos(k)
		p.w.Roles[name] = p.role(name, rv)
	}
}

func (p *parser) role(name string, v *yaml.Node) *Role {
	r := &Role{}
	path := "roles." + name
	m, ok := p.mapping(v, path, "a mapping (description, goal, procedure, output, capabilities, frontmatter)")
	if !ok {
		p.w.flagged[posKey{a: "roles", b: name}] = true
		return r
	}
	for k, fv := range yamldoc.Pairs(m) {
		switch key := yamldoc.Resolve(k).Value; key {
		case "description":
			r.Description, _ = p.str(fv, path+".description")
		case "goal":
			r.Goal, _ = p.str(fv, path+".goal")
		case "procedure":
			r.Procedure, _ = p.str(fv, path+".procedure")
		case "output":
			r.Output, _ = p.str(fv, path+".output")
		case "capabilities":
			r.Capabilities = p.strings(fv, path+".capabilities")
		case "frontmatter":
			p.w.pos[posKey{a: "roles", b: name, c: "frontmatter"}] = yamldoc.Pos(k)
			r.Frontmatter = p.frontmatter(name, k, fv)
		default:
			if !p.composeKey(name, key, k, fv, r) {
				p.ps.Add(yamldoc.Pos(k), "%s: unknown key %s (a role has description, goal, procedure, output, capabilities, frontmatter; or, to compose, %s)", path, strconv.Quote(key), composeKeys)
			}
		}
	}
	return r
}

func (p *parser) strings(v *yaml.Node, path string) []string {
	n := yamldoc.Resolve(v)
	if n.Kind != yaml.SequenceNode {
		p.ps.Add(yamldoc.Pos(v), "%s: must be a list of strings, not %s", path, yamldoc.Describe(n))
		return nil
	}
	var out []string
	for i, c := range n.Content {
		if s, ok := p.str(c, fmt.Sprintf("%s[%d]", path, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// frontmatter converts a role's schema to plain JSON values, after checking
// that its status values are strings to YAML.
func (p *parser) frontmatter(role string, k, v *yaml.Node) any {
	if p.quoteStatuses(v) || yamldoc.ContainsBad(v, p.bad) {
		p.w.flagged[posKey{a: "roles", b: role}] = true
		return nil
	}
	val, err := cas.YAMLValue(v)
	if err != nil {
		p.w.flagged[posKey{a: "roles", b: role}] = true
		var se *cas.SyntaxError
		if errors.As(err, &se) && se.Line > 0 {
			p.ps.Add(position{Line: se.Line, Col: se.Column}, "roles.%s.frontmatter: %s", role, se.Msg)
		} else {
			p.ps.Add(yamldoc.Pos(k), "roles.%s.frontmatter: %s", role, casMessage(err))
		}
		return nil
	}
	return val
}

// quoteStatuses reports status const and enum values that YAML reads as
// something other than a string (SPEC §6), anywhere in a schema: under any
// properties.status. It reports whether it found one.
func (p *parser) quoteStatuses(fm *yaml.Node) bool {
	found := false
	check := func(n *yaml.Node) {
		r := yamldoc.Resolve(n)
		if r == nil || r.Kind != yaml.ScalarNode || yamldoc.IsText(r) {
			return
		}
		found = true
		if r.Value == "" {
			p.ps.Add(yamldoc.Pos(n), "status value is empty, which YAML reads as null: write the status")
			return
		}
		p.ps.Add(yamldoc.Pos(n), "status value %s is %s to YAML: quote it (%s)", r.Value, yamldoc.Describe(r), strconv.Quote(r.Value))
	}
	yamldoc.Visit(fm, func(n *yaml.Node) bool {
		st := yamldoc.Lookup(yamldoc.Lookup(n, "properties"), "status")
		if st == nil || st.Kind != yaml.MappingNode {
			return true
		}
		for k, v := range yamldoc.Pairs(st) {
			switch yamldoc.Resolve(k).Value {
			case "const":
				check(v)
			case "enum":
				if e := yamldoc.Resolve(v); e.Kind == yaml.SequenceNode {
					for _, c := range e.Content {
						check(c)
					}
				}
			}
		}
		return true
	})
	return found
}

// casMessage strips the "cas: invalid: " prefix of a cas error, which the
// position and path already convey.
func casMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, cas.ErrInvalid.Error()+": ")
	return strings.TrimPrefix(msg, "schema: ")
}

func (p *parser) graph(v *yaml.Node) {
	m, ok := p.mapping(v, "graph", "a mapping of roles to their edges")
	if !ok {
		p.w.flagged[posKey{a: "graph"}] = true
		return
	}
	if p.bad[m] {
		p.w.flagged[partialGraph] = true
	}
	p.w.Graph = moderator.Graph{}
	for fk, fv := range yamldoc.Pairs(m) {
		from := yamldoc.Resolve(fk).Value
		p.w.pos[posKey{a: "graph", b: from}] = yamldoc.Pos(fk)
		edges := map[string]moderator.Edge{}
		p.w.Graph[from] = edges
		fm, ok := p.mapping(fv, "graph."+from, "a mapping of statuses to edges")
		if !ok || p.bad[fm] {
			p.w.flagged[posKey{a: "graph", b: from}] = true
			p.w.flagged[partialGraph] = true
		}
		if !ok {
			continue
		}
		for sk, ev := range yamldoc.Pairs(fm) {
			status := yamldoc.Resolve(sk).Value
			path := "graph." + from + "." + status
			p.w.pos[posKey{a: "graph", b: from, c: status}] = yamldoc.Pos(sk)
			var e moderator.Edge
			if em, ok := p.mapping(ev, path, "a mapping with role and prompt"); ok {
				for k, x := range yamldoc.Pairs(em) {
					switch key := yamldoc.Resolve(k).Value; key {
					case "role":
						p.w.pos[posKey{a: "graph", b: from, c: status, d: "role"}] = yamldoc.Pos(x)
						if e.Role, ok = p.str(x, path+".role"); !ok {
							p.w.flagged[posKey{a: "graph", b: from, c: status}] = true
							p.w.flagged[partialGraph] = true
						}
					case "prompt":
						p.w.pos[posKey{a: "graph", b: from, c: status, d: "prompt"}] = yamldoc.Pos(x)
						e.Prompt, _ = p.str(x, path+".prompt")
					default:
						p.ps.Add(yamldoc.Pos(k), "%s: unknown key %s (an edge has role, prompt)", path, strconv.Quote(key))
					}
				}
			} else {
				p.w.flagged[posKey{a: "graph", b: from, c: status}] = true
				p.w.flagged[partialGraph] = true
			}
			edges[status] = e
		}
	}
}
