package registry

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Bounds on what a YAML file may make the parser do.
const (
	// maxAliasNodes bounds the nodes that aliases add to a document when
	// expanded: a "billion laughs" file is rejected before it is expanded.
	maxAliasNodes = 10_000
	// maxYAMLDepth bounds the nesting of a document.
	maxYAMLDepth = 200
)

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func posOf(n *yaml.Node) position {
	if n == nil {
		return position{}
	}
	return position{n.Line, n.Column}
}

// isText reports whether a scalar is a string to JSON: a YAML string, or a
// timestamp, which is kept as the text written (SPEC §3).
func isText(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	t := n.ShortTag()
	return t == "!!str" || t == "!!timestamp"
}

// describe says what YAML reads a node as: "a mapping", "a boolean", ...
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	}
	switch t := n.ShortTag(); t {
	case "!!str", "!!timestamp":
		return "a string"
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!binary":
		return "binary data"
	case "!!merge":
		return "a merge key"
	default:
		return "a value tagged " + t
	}
}

// notString explains why a node is not a string: ", not a mapping",
// "; YAML reads 12 as an integer: quote it (\"12\")".
func notString(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "" {
			return ", not empty"
		}
		if t := n.ShortTag(); t == "!!binary" || !strings.HasPrefix(t, "!!") {
			return ", not " + describe(n)
		}
		return fmt.Sprintf("; YAML reads %s as %s: quote it (%s)", n.Value, describe(n), strconv.Quote(n.Value))
	}
	return ", not " + describe(n)
}

// pairs yields the key and value nodes of a mapping, keys resolved, and
// skips what the tree check has reported: keys that are not strings and
// duplicates (the first one is kept).
func pairs(m *yaml.Node) iter.Seq2[*yaml.Node, *yaml.Node] {
	return func(yield func(*yaml.Node, *yaml.Node) bool) {
		seen := map[string]bool{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := resolve(m.Content[i])
			if k == nil || !isText(k) || seen[k.Value] {
				continue
			}
			seen[k.Value] = true
			if !yield(m.Content[i], m.Content[i+1]) {
				return
			}
		}
	}
}

// treeCheck walks a whole document once before anything reads it: it bounds
// depth and alias expansion, finds alias cycles, and rejects keys that are
// not strings, merge keys and duplicate keys.
type treeCheck struct {
	ps         *problems
	size       map[*yaml.Node]int  // expanded size of nodes an alias named
	visiting   map[*yaml.Node]bool // for cycles
	aliasNodes int                 // nodes added by aliases so far
	fatal      bool                // stop: nothing may read this document
	bad        map[*yaml.Node]bool // mappings with a key problem
}

func newTreeCheck(ps *problems) *treeCheck {
	return &treeCheck{ps: ps, size: map[*yaml.Node]int{}, visiting: map[*yaml.Node]bool{}, bad: map[*yaml.Node]bool{}}
}

func (t *treeCheck) walk(n *yaml.Node, depth int) {
	if n == nil || t.fatal {
		return
	}
	if depth > maxYAMLDepth {
		t.ps.add(posOf(n), "nested deeper than %d levels", maxYAMLDepth)
		t.fatal = true
		return
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			t.walk(c, depth+1)
		}
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				t.walk(k, depth+1)
			}
			kr := resolve(k)
			switch {
			case kr == nil || t.fatal:
			case kr.Kind == yaml.ScalarNode && kr.ShortTag() == "!!merge":
				t.ps.add(posOf(k), "merge keys (<<) are not supported: write the keys out")
				t.bad[n] = true
			case kr.Kind != yaml.ScalarNode:
				t.ps.add(posOf(k), "a key must be a string, not %s", describe(kr))
				t.bad[n] = true
			case !isText(kr):
				if kr.Value == "" {
					t.ps.add(posOf(k), "a key must be a string, not empty")
				} else {
					t.ps.add(posOf(k), "key %s is %s to YAML: quote it (%s)", kr.Value, describe(kr), strconv.Quote(kr.Value))
				}
				t.bad[n] = true
			default:
				if first, dup := seen[kr.Value]; dup {
					t.ps.add(posOf(k), "duplicate key %s (first at line %d)", strconv.Quote(kr.Value), first.Line)
					t.bad[n] = true
				} else {
					seen[kr.Value] = k
				}
			}
			t.walk(v, depth+1)
		}
	case yaml.AliasNode:
		sz := t.expand(n.Alias, 0)
		if sz < 0 {
			t.ps.add(posOf(n), "alias *%s is inside the node it names (a cycle)", n.Value)
			t.fatal = true
			return
		}
		t.aliasNodes += sz
		if t.aliasNodes > maxAliasNodes {
			t.ps.add(posOf(n), "aliases expand to more than %d nodes (at *%s): anchors and aliases may not multiply the document", maxAliasNodes, n.Value)
			t.fatal = true
		}
	}
}

// expand returns the number of nodes n stands for with its aliases
// expanded, saturating just past maxAliasNodes, or -1 if n contains an alias
// to itself. It remembers sizes, so a document of nested aliases costs time
// linear in its text.
func (t *treeCheck) expand(n *yaml.Node, depth int) int {
	if n == nil {
		return 0
	}
	if s, ok := t.size[n]; ok {
		return s
	}
	if t.visiting[n] || depth > 10*maxYAMLDepth {
		return -1
	}
	t.visiting[n] = true
	defer delete(t.visiting, n)
	total := 1
	if n.Kind == yaml.AliasNode {
		total = 0
	}
	kids := n.Content
	if n.Kind == yaml.AliasNode {
		kids = []*yaml.Node{n.Alias}
	}
	for _, c := range kids {
		s := t.expand(c, depth+1)
		if s < 0 {
			return -1
		}
		total = min(total+s, maxAliasNodes+1)
	}
	t.size[n] = total
	return total
}

// containsBad reports whether the tree under n holds a mapping with a key
// problem already reported.
func containsBad(n *yaml.Node, bad map[*yaml.Node]bool) bool {
	if len(bad) == 0 {
		return false
	}
	found := false
	visit(n, func(m *yaml.Node) bool {
		if bad[m] {
			found = true
		}
		return !found
	})
	return found
}

// visit calls f on every node under n (n included), aliases resolved, each
// node once, until f returns false.
func visit(n *yaml.Node, f func(*yaml.Node) bool) {
	seen := map[*yaml.Node]bool{}
	var walk func(*yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		n = resolve(n)
		if n == nil || seen[n] {
			return true
		}
		seen[n] = true
		if !f(n) {
			return false
		}
		for _, c := range n.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	walk(n)
}

// lookup returns the value of key in mapping m (resolved), or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for k, v := range pairs(m) {
		if resolve(k).Value == key {
			return resolve(v)
		}
	}
	return nil
}

var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserErrors are the YAML parser's (not scanner's) messages: yaml.v3
// reports them with the 0-based line of the construct being parsed.
var parserErrors = []string{
	"did not find expected key",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected <document start>",
}

// addYAMLError records an error of the YAML parser, with its line if known.
func addYAMLError(ps *problems, err error) {
	if m := yamlLineError.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg := m[2]
		if slices.Contains(parserErrors, msg) {
			line++
			msg += ", in the block starting on this line"
		}
		ps.list = append(ps.list, Problem{Line: line, Msg: "YAML syntax: " + msg})
		return
	}
	msg := err.Error()
	if len(msg) > 6 && msg[:6] == "yaml: " {
		msg = msg[6:]
	}
	ps.list = append(ps.list, Problem{Msg: "YAML: " + msg})
}
