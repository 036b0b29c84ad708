package cas

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxAliasNodes bounds alias expansion in [ParseYAML] and [YAMLValue]: all
// aliases of one conversion may stand for at most this many nodes in all.
const maxAliasNodes = 10000

// ParseYAML decodes a single YAML document with gopkg.in/yaml.v3 and
// converts it to plain JSON values (the types [ParseJSON] returns) by the
// nodes' resolved tags:
//   - !!str, !!bool and !!null as themselves;
//   - !!int and !!float as float64: every int form yaml.v3 resolves (1_000,
//     0x1F, 0o17, 0b101, -0b101, and YAML 1.1 octal 017 = 15), rounded to
//     the nearest double as JSON numbers are; .inf, -.inf and .nan are
//     rejected, and so is a plain scalar written as a number that yaml.v3
//     could not hold (1e400, a 0x.. beyond 64 bits), rather than read as a
//     string;
//   - !!timestamp and !!binary kept as the string written (2002-12-14
//     stays "2002-12-14");
//   - any other tag (!foo, !!set, ...) is rejected.
//
// Mapping keys must resolve to !!str: a key such as `1:`, `true:`, `null:`
// or `2001-01-01:` is rejected with a hint to quote it, and so is a complex
// key (`? [a, b]`). Duplicate keys are rejected. Merge keys (`<<: *a`,
// `<<: [*a, *b]`, or inline mappings) follow the YAML merge-key spec: keys
// written in the mapping win over merged ones, earlier merged mappings win
// over later ones, and merged keys never count as duplicates.
//
// Aliases are allowed, but their expansion is bounded: all aliases in the
// document together may stand for at most 10,000 nodes (an alias counts
// every node of what it stands for, keys included, recursively through
// nested aliases; the anchored nodes themselves count once, where they are
// written, and are not limited), so a "billion laughs" document fails
// after at most that much work. An alias inside its own anchor (a
// recursive structure) is rejected, and nesting, counted with aliases
// expanded, may be at most [MaxDepth].
//
// Empty input, or input that is only comments, is an error ("empty
// document"); a lone "---" is a document holding null. A second document
// (after "---") is an error, whatever it holds. Input must be valid UTF-8
// (or UTF-16 with a byte-order mark) without control characters other than
// tab and line breaks, as YAML requires.
//
// Every error is a *[SyntaxError] (which wraps [ErrInvalid]) with the line
// and column of the offending node. yaml.v3's own parse errors carry only a
// line, corrected from its messages (which count some lines from 0);
// Column is then 0. ParseYAML is safe for concurrent use.
func ParseYAML(data []byte) (any, error) {
	doc, err := ParseYAMLNode(data)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, &SyntaxError{Msg: "empty document"}
	}
	return YAMLValue(doc)
}

// ParseYAMLNode reads a single YAML document into its yaml.v3 node tree
// (a DocumentNode) with the checks of [ParseYAML] on its text: valid UTF-8
// without control characters, exactly one document (a second one,
// whatever it holds, is an error where it starts). Empty input, or input
// that is only comments, gives nil and no error. The tree itself is not
// checked yet: run [CheckYAML] or [YAMLValue] before reading it. Errors
// are *[SyntaxError]s, with yaml.v3's lines corrected as ParseYAML's.
// Readers that keep positions (workflow files, config.yaml) parse with it.
func ParseYAMLNode(data []byte) (*yaml.Node, error) {
	if err := checkYAMLText(data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlSyntaxError(data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlSyntaxError(data, err)
	default:
		return nil, &SyntaxError{Line: next.Line, Column: next.Column, Msg: "more than one document: a second one starts here"}
	}
	return &doc, nil
}

// YAMLValue converts one parsed yaml.v3 node (a DocumentNode or any node
// below it) to plain JSON values with the rules of [ParseYAML], including
// its bounds on aliases and depth. The readers of workflow files and
// config.yaml use it to keep line numbers: they parse a file into a
// yaml.Node themselves, check it with [CheckYAML], walk its mappings with
// [YAMLPairs], and convert sub-trees. Every error is a *[SyntaxError] with the line and
// column of the offending node (the node's own Line and Column fields).
// A nil node or an empty DocumentNode is an error ("empty document").
func YAMLValue(n *yaml.Node) (any, error) {
	if n == nil {
		return nil, &SyntaxError{Msg: "empty document"}
	}
	var c yamlConv
	return c.value(n, 0)
}

// CheckYAML checks a parsed document (or a node below one) by the rules
// of [YAMLValue], without converting its scalars, and finds every problem
// with its keys instead of stopping at the first: a key that is not a
// string, a duplicate key, a merge (<<) of something that is not a
// mapping. They come back in document order, each a *[SyntaxError] with
// its line and column, with bad, the mappings holding one. err is a
// problem after which nothing may read the document: nesting deeper than
// [MaxDepth], aliases that expand to more than 10,000 nodes or into
// themselves. Merge keys are accepted; read a checked mapping's pairs,
// merged ones included, with [YAMLPairs].
//
// It is the one YAML safety check: [ParseYAML] and [YAMLValue] apply the
// same rules (failing at the first problem), and the readers of workflow
// files and config.yaml run it before they read a document.
func CheckYAML(n *yaml.Node) (problems []*SyntaxError, bad map[*yaml.Node]bool, err error) {
	if n == nil {
		return nil, nil, &SyntaxError{Msg: "empty document"}
	}
	c := yamlConv{check: true, bad: map[*yaml.Node]bool{}, reported: map[SyntaxError]bool{}}
	if _, err := c.value(n, 0); err != nil {
		return c.problems, c.bad, err
	}
	return c.problems, c.bad, nil
}

// yamlConv converts yaml.v3 nodes, counting the nodes aliases expand to.
// With check set it converts no scalar and records key problems (in
// problems and bad) instead of returning them; it then returns only the
// errors marked fatal.
type yamlConv struct {
	aliasNodes int                 // nodes produced inside alias expansions so far
	inAlias    int                 // how many aliases are being expanded
	outer      *yaml.Node          // the outermost alias being expanded
	active     map[*yaml.Node]bool // anchored nodes being converted (to find cycles)

	check    bool
	fatal    bool           // the error being returned ends the check
	problems []*SyntaxError // key problems found in check mode
	reported map[SyntaxError]bool
	bad      map[*yaml.Node]bool // mappings holding one
}

// keyProblem records, in check mode, the problem err of a key of the
// mapping m and returns nil so the walk goes on; otherwise (or if err ends
// the check) it returns err.
func (c *yamlConv) keyProblem(m *yaml.Node, err error) error {
	var se *SyntaxError
	if !c.check || c.fatal || !errors.As(err, &se) {
		return err
	}
	c.bad[m] = true
	if !c.reported[*se] { // else an anchored mapping's problem, met again through an alias
		c.reported[*se] = true
		c.problems = append(c.problems, se)
	}
	return nil
}

func nodeError(n *yaml.Node, format string, args ...any) error {
	return &SyntaxError{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// value converts n, which is nested depth levels deep (its parent's depth).
func (c *yamlConv) value(n *yaml.Node, depth int) (any, error) {
	if err := c.count(); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nodeError(n, "empty document")
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		return c.alias(n, func(t *yaml.Node) (any, error) { return c.value(t, depth) })
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return nil, nodeError(n, "unsupported tag %s", tag)
		}
		if depth >= MaxDepth {
			return nil, c.tooDeep(n)
		}
		defer c.enter(n)()
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		if tag := n.ShortTag(); tag != "!!map" {
			return nil, nodeError(n, "unsupported tag %s", tag)
		}
		if depth >= MaxDepth {
			return nil, c.tooDeep(n)
		}
		defer c.enter(n)()
		return c.mapping(n, depth)
	}
	if n.Kind == 0 && n.IsZero() {
		return nil, &SyntaxError{Msg: "empty document"}
	}
	return nil, nodeError(n, "unknown YAML node kind %d", n.Kind)
}

// count counts one node towards the alias bound if an alias is being
// expanded.
func (c *yamlConv) count() error {
	if c.inAlias == 0 {
		return nil
	}
	if c.aliasNodes++; c.aliasNodes > maxAliasNodes {
		c.fatal = true
		return nodeError(c.outer, "aliases expand to more than %d nodes", maxAliasNodes)
	}
	return nil
}

// tooDeep reports nesting beyond MaxDepth at n or, inside an alias, at the
// outermost alias being expanded (the nodes of an anchor are not too deep
// where they are written).
func (c *yamlConv) tooDeep(n *yaml.Node) error {
	if c.inAlias > 0 {
		n = c.outer
	}
	c.fatal = true
	return nodeError(n, "nesting deeper than %d levels", MaxDepth)
}

// alias expands the alias n by calling f on its target, counting the
// expansion and refusing an alias inside its own anchor.
func (c *yamlConv) alias(n *yaml.Node, f func(*yaml.Node) (any, error)) (any, error) {
	t := n.Alias
	if t == nil {
		c.fatal = true
		return nil, nodeError(n, "unknown anchor %q", n.Value)
	}
	if c.active[t] {
		c.fatal = true
		return nil, nodeError(n, "alias *%s refers to a node that contains it", n.Value)
	}
	if c.inAlias == 0 {
		c.outer = n
	}
	c.inAlias++
	v, err := f(t)
	c.inAlias--
	return v, err
}

// enter marks an anchored node as being converted; the returned func
// unmarks it.
func (c *yamlConv) enter(n *yaml.Node) func() {
	if n.Anchor == "" {
		return func() {}
	}
	if c.active == nil {
		c.active = make(map[*yaml.Node]bool)
	}
	c.active[n] = true
	return func() { delete(c.active, n) }
}

func (c *yamlConv) mapping(n *yaml.Node, depth int) (any, error) {
	if len(n.Content)%2 != 0 {
		return nil, nodeError(n, "mapping has a key without a value")
	}
	m := make(map[string]any, len(n.Content)/2)
	first := make(map[string]*yaml.Node, len(n.Content)/2) // where each key was written
	var merge, mergeKey *yaml.Node
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, isMerge, err := c.key(k)
		switch {
		case err != nil:
		case isMerge && merge != nil:
			err = nodeError(k, "duplicate key %q (first at line %d)", "<<", mergeKey.Line)
		case isMerge:
			merge, mergeKey = v, k
			continue
		case first[key] != nil:
			err = nodeError(k, "duplicate key %q (first at line %d)", key, first[key].Line)
		}
		if err != nil {
			if err := c.keyProblem(n, err); err != nil {
				return nil, err
			}
			// Check mode: the value may hold problems of its own.
			if _, err := c.value(v, depth+1); err != nil {
				return nil, err
			}
			continue
		}
		first[key] = k
		val, err := c.value(v, depth+1)
		if err != nil {
			return nil, err
		}
		m[key] = val
	}
	if merge != nil {
		if err := c.merge(m, merge, depth); err != nil {
			if err := c.keyProblem(n, err); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// merge adds to m the keys it lacks from the mapping, or sequence of
// mappings, mv.
func (c *yamlConv) merge(m map[string]any, mv *yaml.Node, depth int) error {
	addFrom := func(src *yaml.Node) error {
		t := src
		if t.Kind == yaml.AliasNode && t.Alias != nil {
			t = t.Alias
		}
		if t.Kind != yaml.MappingNode {
			return nodeError(src, "a merge (<<) needs a mapping or a sequence of mappings")
		}
		v, err := c.value(src, depth)
		if err != nil {
			return err
		}
		for k, e := range v.(map[string]any) {
			if _, ok := m[k]; !ok {
				m[k] = e
			}
		}
		return nil
	}
	t := mv
	if t.Kind == yaml.AliasNode && t.Alias != nil {
		t = t.Alias
	}
	if t.Kind != yaml.SequenceNode {
		return addFrom(mv)
	}
	if tag := t.ShortTag(); tag != "!!seq" {
		return nodeError(t, "unsupported tag %s", tag)
	}
	each := func(seq *yaml.Node) (any, error) {
		for _, e := range seq.Content {
			if err := addFrom(e); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	var err error
	if mv.Kind == yaml.AliasNode {
		_, err = c.alias(mv, func(t *yaml.Node) (any, error) {
			if err := c.count(); err != nil {
				return nil, err
			}
			return each(t)
		})
	} else {
		_, err = each(mv)
	}
	return err
}

// key returns the string a mapping key stands for, or isMerge for "<<".
func (c *yamlConv) key(k *yaml.Node) (key string, isMerge bool, err error) {
	if err := c.count(); err != nil {
		return "", false, err
	}
	t := k
	if k.Kind == yaml.AliasNode {
		if k.Alias == nil {
			return "", false, nodeError(k, "unknown anchor %q", k.Value)
		}
		t = k.Alias
		if c.inAlias == 0 {
			c.outer = k
		}
		c.inAlias++
		err := c.count()
		c.inAlias--
		if err != nil {
			return "", false, err
		}
	}
	return keyText(k, t)
}

// keyText returns the string the key k stands for (t is k with its alias
// resolved), or isMerge for "<<", or the error naming what is wrong.
func keyText(k, t *yaml.Node) (key string, isMerge bool, err error) {
	switch t.Kind {
	case yaml.ScalarNode:
	case yaml.MappingNode:
		return "", false, nodeError(k, "key is a mapping, not a string")
	case yaml.SequenceNode:
		return "", false, nodeError(k, "key is a sequence, not a string")
	default:
		return "", false, nodeError(k, "key is not a string")
	}
	switch tag := t.ShortTag(); tag {
	case "!!merge":
		return "", true, nil
	case "!!str":
		if isPlainScalar(t) && yamlNumberSyntax(t.Value) {
			return "", false, nodeError(k, "key %s is a number, not a string: quote it", t.Value)
		}
		if !utf8.ValidString(t.Value) {
			return "", false, nodeError(k, "key is not valid UTF-8")
		}
		return t.Value, false, nil
	default:
		shown := t.Value
		if shown == "" {
			shown = `""`
		}
		return "", false, nodeError(k, "key %s is %s, not a string: quote it", shown, tag)
	}
}

// YAMLPairs yields the keys and values of the mapping m (aliases
// resolved) as [YAMLValue] reads it: the pairs written, in order, but for
// "<<", then the pairs that merge keys bring, from each merged mapping in
// turn (itself merged first) and only for keys not yet seen, so written
// keys win over merged ones and earlier merged mappings over later ones.
// Keys that are not strings, and repeats, are skipped: [CheckYAML]
// reports them. It yields nothing for a node that is not a mapping. Call
// it on a document CheckYAML accepted (whose aliases are bounded).
func YAMLPairs(m *yaml.Node) iter.Seq2[*yaml.Node, *yaml.Node] {
	return func(yield func(*yaml.Node, *yaml.Node) bool) {
		seen := map[string]bool{}
		merged := map[*yaml.Node]bool{}
		var pairs func(m *yaml.Node) bool
		pairs = func(m *yaml.Node) bool {
			m = resolveAlias(m)
			if m == nil || m.Kind != yaml.MappingNode || merged[m] {
				return true // merging a mapping again adds nothing (and a cycle stops)
			}
			merged[m] = true
			var merges []*yaml.Node
			for i := 0; i+1 < len(m.Content); i += 2 {
				k, v := m.Content[i], m.Content[i+1]
				t := resolveAlias(k)
				if t == nil {
					continue
				}
				key, isMerge, err := keyText(k, t)
				switch {
				case err != nil, seen[key] && !isMerge:
				case isMerge:
					merges = append(merges, v)
				default:
					seen[key] = true
					if !yield(k, v) {
						return false
					}
				}
			}
			for _, mv := range merges {
				srcs := []*yaml.Node{mv}
				if t := resolveAlias(mv); t != nil && t.Kind == yaml.SequenceNode {
					srcs = t.Content
				}
				for _, src := range srcs {
					if !pairs(src) {
						return false
					}
				}
			}
			return true
		}
		pairs(m)
	}
}

// resolveAlias follows aliases to the node they name (nil for an unknown
// anchor or a chain longer than any a parser makes).
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == MaxDepth {
			return nil
		}
		n = n.Alias
	}
	return n
}

// isPlainScalar reports whether n was written unquoted and untagged, so
// its tag was resolved from its text.
func isPlainScalar(n *yaml.Node) bool {
	return n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

func (c *yamlConv) scalar(n *yaml.Node) (any, error) {
	if c.check {
		return nil, nil // values are for their readers to judge
	}
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp", "!!binary", "!!merge":
		// A "<<" outside a key position is just text.
		if tag == "!!str" && isPlainScalar(n) && yamlNumberSyntax(n.Value) {
			if isYAMLFloat(strings.ReplaceAll(n.Value, "_", "")) {
				return nil, nodeError(n, "number %s overflows a double", n.Value)
			}
			return nil, nodeError(n, "number %s is out of range", n.Value)
		}
		if !utf8.ValidString(n.Value) {
			return nil, nodeError(n, "string is not valid UTF-8")
		}
		return n.Value, nil
	case "!!bool":
		switch n.Value {
		case "true", "True", "TRUE":
			return true, nil
		case "false", "False", "FALSE":
			return false, nil
		}
		return nil, nodeError(n, "invalid !!bool %q", n.Value)
	case "!!null":
		switch n.Value {
		case "", "~", "null", "Null", "NULL":
			return nil, nil
		}
		return nil, nodeError(n, "invalid !!null %q", n.Value)
	case "!!int", "!!float":
		return yamlNumber(n, tag)
	default:
		return nil, nodeError(n, "unsupported tag %s", tag)
	}
}

// yamlNumber converts an !!int or !!float scalar as yaml.v3 resolves it.
func yamlNumber(n *yaml.Node, tag string) (any, error) {
	s := n.Value
	switch s {
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
		return nil, nodeError(n, "number %s is not finite: JSON has no infinity or NaN", s)
	}
	plain := s
	if s != "" && s[0] != '.' {
		plain = strings.ReplaceAll(s, "_", "")
	}
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return float64(i), nil
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return float64(u), nil
	}
	if tag == "!!float" && isYAMLFloat(plain) {
		f, err := strconv.ParseFloat(plain, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, nodeError(n, "number %s overflows a double", s)
		}
		return f, nil
	}
	if !isYAMLFloat(plain) && yamlNumberSyntax(s) {
		// An explicitly tagged 0x.., 0o.. or 0b.. beyond 64 bits.
		return nil, nodeError(n, "number %s is out of range", s)
	}
	return nil, nodeError(n, "invalid %s %q", tag, s)
}

// yamlNumberSyntax reports whether a plain scalar is written as a number
// by yaml.v3's rules (decimal ints and floats, 0x, 0o and 0b ints; "_"
// ignored except after a leading "."). yaml.v3 resolves such a scalar to
// !!str only when the number does not fit, so for a !!str it means
// overflow.
func yamlNumberSyntax(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '.' {
		return isYAMLFloat(s)
	}
	if c := s[0]; c != '+' && c != '-' && (c < '0' || c > '9') {
		return false
	}
	plain := strings.ReplaceAll(s, "_", "")
	if isYAMLFloat(plain) {
		return true
	}
	body := strings.TrimLeft(plain, "+-")
	if len(plain)-len(body) > 1 || len(body) < 3 || body[0] != '0' {
		return false
	}
	var ok func(byte) bool
	switch body[1] {
	case 'x':
		ok = func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	case 'o':
		ok = func(c byte) bool { return c >= '0' && c <= '7' }
	case 'b':
		ok = func(c byte) bool { return c == '0' || c == '1' }
	default:
		return false
	}
	for i := 2; i < len(body); i++ {
		if !ok(body[i]) {
			return false
		}
	}
	return true
}

// isYAMLFloat matches yaml.v3's float syntax:
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
func isYAMLFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// checkYAMLText finds what yaml.v3's reader would reject (invalid UTF-8,
// characters YAML does not allow) and reports it with its position, which
// yaml.v3's own errors lack. UTF-16 input (with a byte-order mark) is left
// to yaml.v3.
func checkYAMLText(data []byte) error {
	if len(data) >= 2 && (data[0] == 0xFE && data[1] == 0xFF || data[0] == 0xFF && data[1] == 0xFE) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		c := data[i]
		if c < 0x80 {
			switch {
			case c == '\n':
				line, col = line+1, 1
			case c == '\r':
				if i+1 < len(data) && data[i+1] == '\n' {
					col++
				} else {
					line, col = line+1, 1
				}
			case c == '\t' || c >= 0x20 && c < 0x7F:
				col++
			default:
				return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf("control character U+%04X is not allowed in YAML", c)}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf("invalid UTF-8 byte 0x%02x", c)}
		}
		if !(r == 0x85 || r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000) {
			return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf("character U+%04X is not allowed in YAML", r)}
		}
		i += size
		col++
	}
	return nil
}

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to
// its scanner) errors. For these yaml.v3 reports the line counted from 0
// (or no line when it is 0); for scanner errors it counts from 1 (or gives
// no line for the first line).
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// yamlSyntaxError converts an error from yaml.v3's parser to a
// *SyntaxError, taking the line out of its message.
func yamlSyntaxError(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				line, msg = n, text
			}
		}
	}
	if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok && strings.HasSuffix(name, "' referenced") {
		name = strings.TrimSuffix(name, "' referenced")
		l, c := findAlias(data, name)
		return &SyntaxError{Line: l, Column: c, Msg: fmt.Sprintf("unknown anchor %q", name)}
	}
	if yamlParserProblems[msg] {
		// The parser names the line where the block it was reading starts.
		line++
		if strings.HasPrefix(msg, "did not find expected") {
			msg += ", in the block starting on this line"
		}
	} else if line == 0 && !strings.Contains(msg, "'") {
		// A scanner error on the first line. (yaml.v3's other messages
		// without a line name an anchor or an event, in quotes.)
		line = 1
	}
	return &SyntaxError{Line: line, Msg: msg}
}

// findAlias returns the position of the first alias *name in data, or 0, 0.
func findAlias(data []byte, name string) (line, col int) {
	pat := []byte("*" + name)
	for off := 0; ; {
		i := bytes.Index(data[off:], pat)
		if i < 0 {
			return 0, 0
		}
		end := off + i + len(pat)
		if end == len(data) || bytes.IndexByte([]byte(" \t\r\n,[]{}"), data[end]) >= 0 {
			return position(data, off+i)
		}
		off = end
	}
}
