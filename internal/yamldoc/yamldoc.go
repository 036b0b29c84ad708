package yamldoc

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
)

// Problem is one thing wrong with a file, at a 1-based line and column.
// Line 0 means the problem has no position (a workflow built in Go, or an
// empty file); Column 0 means only the line is known (a YAML syntax error).
type Problem struct {
	Line, Column int
	Msg          string
}

// String returns "line:col: msg", "line: msg" or "msg", by what is known.
func (p Problem) String() string {
	switch {
	case p.Line == 0:
		return p.Msg
	case p.Column == 0:
		return fmt.Sprintf("%d: %s", p.Line, p.Msg)
	}
	return fmt.Sprintf("%d:%d: %s", p.Line, p.Column, p.Msg)
}

// ValidationError lists every problem found in one file (a workflow,
// config.yaml or .env), sorted by position (problems without a position
// first). It wraps [cas.ErrInvalid]. Packages registry and config export
// it under their own names.
type ValidationError struct {
	File     string // the file name as given; "" for a workflow built in Go
	Problems []Problem
}

// Error returns one problem per line, each as "file:line:col: message".
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File)
			if p.Line == 0 {
				b.WriteString(": ")
			} else {
				b.WriteByte(':')
			}
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns [cas.ErrInvalid].
func (e *ValidationError) Unwrap() error { return cas.ErrInvalid }

// ReadFile reads the file a person wrote, refusing one larger than limit
// bytes (the error wraps [cas.ErrTooLarge]) before reading it whole. A
// missing file's error wraps [fs.ErrNotExist].
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := cas.ReadLimited(f, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// Position is where a node stands in its file: a 1-based line and column;
// 0 where unknown.
type Position struct {
	Line, Col int
}

// Problems collects the problems of one file. The zero value (with File
// set) is ready to use; it is not safe for concurrent use.
type Problems struct {
	File string    // the file's name, as messages print it
	List []Problem // the problems so far, in the order found
}

// Add records a problem at a position.
func (ps *Problems) Add(at Position, format string, args ...any) {
	ps.List = append(ps.List, Problem{Line: at.Line, Column: at.Col, Msg: fmt.Sprintf(format, args...)})
}

// Err returns the problems as a *[ValidationError], sorted by position
// and without repeats, or nil if there are none.
func (ps *Problems) Err() error {
	if len(ps.List) == 0 {
		return nil
	}
	list := slices.Clone(ps.List)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	list = slices.Compact(list)
	return &ValidationError{File: ps.File, Problems: list}
}

// MaxNameLen is the longest name a uwf file may give a workflow, role,
// agent, provider or model: workflows/<name> must be a valid ref name
// (200 characters at most).
const MaxNameLen = 190

// NameProblem says what is wrong with the name of something a uwf file
// defines (a workflow, role, agent, provider or model), or "" if nothing:
// names are [A-Za-z0-9][A-Za-z0-9._-]*, at most [MaxNameLen] characters.
func NameProblem(s string) string {
	if s == "" {
		return "is empty"
	}
	if len(s) > MaxNameLen {
		return fmt.Sprintf("is %d characters, at most %d are allowed", len(s), MaxNameLen)
	}
	ok := isAlnum(s[0])
	for i := 1; ok && i < len(s); i++ {
		c := s[i]
		ok = isAlnum(c) || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return "may use only letters, digits, '.', '_' and '-', and must start with a letter or digit"
	}
	return ""
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Resolve follows an alias to the node it names.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// Pos returns where n stands in its file; the zero Position for nil.
func Pos(n *yaml.Node) Position {
	if n == nil {
		return Position{}
	}
	return Position{Line: n.Line, Col: n.Column}
}

// IsText reports whether a scalar is a string to JSON: a YAML string, or a
// timestamp, which is kept as the text written (SPEC §3).
func IsText(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	t := n.ShortTag()
	return t == "!!str" || t == "!!timestamp"
}

// Describe says what YAML reads a node as: "a mapping", "a boolean", ...
func Describe(n *yaml.Node) string {
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

// NotString explains why a node is not a string: ", not a mapping",
// "; YAML reads 12 as an integer: quote it (\"12\")".
func NotString(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "" {
			return ", not empty"
		}
		if t := n.ShortTag(); t == "!!binary" || !strings.HasPrefix(t, "!!") {
			return ", not " + Describe(n)
		}
		return fmt.Sprintf("; YAML reads %s as %s: quote it (%s)", n.Value, Describe(n), strconv.Quote(n.Value))
	}
	return ", not " + Describe(n)
}

// Pairs yields the key and value nodes of a mapping as YAML's merge keys
// make them ([cas.YAMLPairs]): the keys written, then merged ones, and
// skips what [CheckTree] has reported: keys that are not strings and
// duplicates (the first one is kept).
func Pairs(m *yaml.Node) iter.Seq2[*yaml.Node, *yaml.Node] {
	return cas.YAMLPairs(Resolve(m))
}

// CheckTree checks a whole document once before anything reads it, with
// the rules of [cas.CheckYAML] (the ones every YAML value uwf reads
// follows), adding to ps what is wrong: nesting deeper than [cas.MaxDepth]
// levels, aliases that expand to more than 10,000 nodes or into
// themselves, keys that are not strings, duplicate keys, merges (<<) of
// what is not a mapping. Merge keys are accepted. fatal means nothing may
// read the document; bad holds the mappings with a key problem (see
// [ContainsBad]).
func CheckTree(ps *Problems, doc *yaml.Node) (fatal bool, bad map[*yaml.Node]bool) {
	problems, bad, err := cas.CheckYAML(doc)
	for _, p := range problems {
		ps.Add(Position{Line: p.Line, Col: p.Column}, "%s", p.Msg)
	}
	if err != nil {
		var se *cas.SyntaxError
		if errors.As(err, &se) {
			ps.Add(Position{Line: se.Line, Col: se.Column}, "%s", se.Msg)
		} else {
			ps.Add(Position{}, "%s", err)
		}
		return true, bad
	}
	return false, bad
}

// ContainsBad reports whether the tree under n holds a mapping with a key
// problem already reported.
func ContainsBad(n *yaml.Node, bad map[*yaml.Node]bool) bool {
	if len(bad) == 0 {
		return false
	}
	found := false
	Visit(n, func(m *yaml.Node) bool {
		if bad[m] {
			found = true
		}
		return !found
	})
	return found
}

// Visit calls f on every node under n (n included), aliases resolved, each
// node once, until f returns false.
func Visit(n *yaml.Node, f func(*yaml.Node) bool) {
	seen := map[*yaml.Node]bool{}
	var walk func(*yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		n = Resolve(n)
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

// Lookup returns the value of key in mapping m (resolved), or nil.
func Lookup(m *yaml.Node, key string) *yaml.Node {
	m = Resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for k, v := range Pairs(m) {
		if Resolve(k).Value == key {
			return Resolve(v)
		}
	}
	return nil
}

// AddYAMLError records an error of [cas.ParseYAMLNode] (a *[cas.SyntaxError],
// with its position) as a problem of the file.
func AddYAMLError(ps *Problems, err error) {
	var se *cas.SyntaxError
	if errors.As(err, &se) {
		ps.List = append(ps.List, Problem{Line: se.Line, Column: se.Column, Msg: "YAML syntax: " + se.Msg})
		return
	}
	ps.List = append(ps.List, Problem{Msg: "YAML: " + err.Error()})
}
