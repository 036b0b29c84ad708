package cas_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
)

func TestParseYAMLAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"string", "a: hello", map[string]any{"a": "hello"}},
		{"int", "a: 42", map[string]any{"a": 42.0}},
		{"negative int", "a: -17", map[string]any{"a": -17.0}},
		{"octal 0o", "a: 0o17", map[string]any{"a": 15.0}},
		{"YAML 1.1 octal", "a: 017", map[string]any{"a": 15.0}},
		{"hex", "a: 0x1F", map[string]any{"a": 31.0}},
		{"binary", "a: 0b101", map[string]any{"a": 5.0}},
		{"negative binary", "a: -0b101", map[string]any{"a": -5.0}},
		{"negative hex", "a: -0x10", map[string]any{"a": -16.0}},
		{"underscores", "a: 1_000_000", map[string]any{"a": 1e6}},
		{"uint64", "a: 18446744073709551615", map[string]any{"a": 18446744073709551615.0}},
		{"beyond uint64 is a float", "a: 123456789012345678901234567890", map[string]any{"a": 123456789012345678901234567890.0}},
		{"float 1.10", "a: 1.10", map[string]any{"a": 1.1}},
		{"quoted 1.10 stays a string", `a: "1.10"`, map[string]any{"a": "1.10"}},
		{"single-quoted number", `a: '0o17'`, map[string]any{"a": "0o17"}},
		{"exponent", "a: 1e3", map[string]any{"a": 1000.0}},
		{"leading dot", "a: .5", map[string]any{"a": 0.5}},
		{"signed float", "a: -.5e-1", map[string]any{"a": -0.05}},
		{"underflow is zero", "a: 1e-400", map[string]any{"a": 0.0}},
		{"tilde is null", "a: ~", map[string]any{"a": nil}},
		{"null", "a: null", map[string]any{"a": nil}},
		{"empty is null", "a:", map[string]any{"a": nil}},
		{"bools", "a: true\nb: False\nc: TRUE", map[string]any{"a": true, "b": false, "c": true}},
		{"yes is a string in YAML 1.2", "a: yes\nb: on", map[string]any{"a": "yes", "b": "on"}},
		{"timestamp kept as written", "a: 2001-12-14t21:59:43.10-05:00", map[string]any{"a": "2001-12-14t21:59:43.10-05:00"}},
		{"date kept as written", "a: 2002-12-14", map[string]any{"a": "2002-12-14"}},
		{"space timestamp kept", "a: 2001-12-14 21:59:43.10", map[string]any{"a": "2001-12-14 21:59:43.10"}},
		{"explicit timestamp", "a: !!timestamp 2002-12-14", map[string]any{"a": "2002-12-14"}},
		{"binary kept as written", "a: !!binary R0lGODlhDAAMAIQAAP", map[string]any{"a": "R0lGODlhDAAMAIQAAP"}},
		{"explicit str", "a: !!str 12", map[string]any{"a": "12"}},
		{"explicit str of overflow", "a: !!str 1e400", map[string]any{"a": "1e400"}},
		{"explicit float", "a: !!float 1", map[string]any{"a": 1.0}},
		{"explicit int of quoted", `a: !!int "12"`, map[string]any{"a": 12.0}},
		{"explicit bool of quoted", `a: !!bool "true"`, map[string]any{"a": true}},
		{"explicit null", `a: !!null ""`, map[string]any{"a": nil}},
		{"long tag form", "a: !<tag:yaml.org,2002:str> 12", map[string]any{"a": "12"}},
		{"explicit map and seq", "a: !!map {b: !!seq [1]}", map[string]any{"a": map[string]any{"b": []any{1.0}}}},
		{"flow collections", "[1, a, {b: c}, []]", []any{1.0, "a", map[string]any{"b": "c"}, []any{}}},
		{"block sequence", "- 1\n- - x\n  - y\n", []any{1.0, []any{"x", "y"}}},
		{"literal block", "a: |\n  line1\n  line2\n", map[string]any{"a": "line1\nline2\n"}},
		{"folded block", "a: >-\n  one\n  two\n", map[string]any{"a": "one two"}},
		{"multi-line plain", "a: one\n  two", map[string]any{"a": "one two"}},
		{"escapes", `a: "tab\tnul\0 \u00e9 \U0001F600"`, map[string]any{"a": "tab\tnul\x00 é 😀"}},
		{"top-level scalar", "hello", "hello"},
		{"top-level number", "1.5", 1.5},
		{"lone document marker is null", "---\n", nil},
		{"document markers", "--- \na: 1\n...\n", map[string]any{"a": 1.0}},
		{"comments", "# head\na: 1 # line\n# foot\n", map[string]any{"a": 1.0}},
		{"BOM", "\ufeffa: 1", map[string]any{"a": 1.0}},
		{"CRLF", "a: 1\r\nb: x\r\n", map[string]any{"a": 1.0, "b": "x"}},
		{"empty string key", `"": 1`, map[string]any{"": 1.0}},
		{"quoted number key", `"1": a`, map[string]any{"1": "a"}},
		{"quoted merge key is a plain key", `"<<": 1`, map[string]any{"<<": 1.0}},
		{"merge marker as a value", "a: <<", map[string]any{"a": "<<"}},
		{"alias", "a: &x {k: v}\nb: *x", map[string]any{"a": map[string]any{"k": "v"}, "b": map[string]any{"k": "v"}}},
		{"alias as key", "a: &k name\nb:\n  *k : 1\n", map[string]any{"a": "name", "b": map[string]any{"name": 1.0}}},
		{"merge one", "base: &b {a: 1, b: 2}\nm:\n  <<: *b\n  b: 20\n",
			map[string]any{"base": map[string]any{"a": 1.0, "b": 2.0}, "m": map[string]any{"a": 1.0, "b": 20.0}}},
		{"explicit key before merge wins", "base: &b {a: 1}\nm:\n  a: 0\n  <<: *b\n",
			map[string]any{"base": map[string]any{"a": 1.0}, "m": map[string]any{"a": 0.0}}},
		{"merge list, earlier wins", "x: &x {a: 1, b: 2}\ny: &y {b: 3, c: 4}\nm:\n  <<: [*x, *y]\n  d: 5\nn:\n  <<: [*y, *x]\n",
			map[string]any{
				"x": map[string]any{"a": 1.0, "b": 2.0}, "y": map[string]any{"b": 3.0, "c": 4.0},
				"m": map[string]any{"a": 1.0, "b": 2.0, "c": 4.0, "d": 5.0},
				"n": map[string]any{"a": 1.0, "b": 3.0, "c": 4.0},
			}},
		{"inline merge", "m: {<<: {a: 1, b: 1}, b: 2}", map[string]any{"m": map[string]any{"a": 1.0, "b": 2.0}}},
		{"merge of an aliased list", "x: &x {a: 1}\nl: &l [*x]\nm: {<<: *l}", map[string]any{"x": map[string]any{"a": 1.0}, "l": []any{map[string]any{"a": 1.0}}, "m": map[string]any{"a": 1.0}}},
		{"nested merge", "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b}", map[string]any{
			"a": map[string]any{"x": 1.0}, "b": map[string]any{"x": 1.0, "y": 2.0}, "c": map[string]any{"x": 1.0, "y": 2.0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.ParseYAML([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseYAML(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseYAML(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
			// Readers that walk nodes (workflow files, config.yaml) see
			// the same mappings through CheckYAML and YAMLPairs.
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.in), &doc); err != nil {
				t.Fatal(err)
			}
			if ps, _, err := cas.CheckYAML(&doc); len(ps) > 0 || err != nil {
				t.Fatalf("CheckYAML(%q) = %v, %v; want no problem", tc.in, ps, err)
			}
			if got := pairsValue(t, &doc); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("read through YAMLPairs, %q = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

// pairsValue converts n as a node-walking reader does: mappings through
// cas.YAMLPairs, scalars through cas.YAMLValue.
func pairsValue(t *testing.T, n *yaml.Node) any {
	t.Helper()
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return pairsValue(t, n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for k, v := range cas.YAMLPairs(n) {
			kv, err := cas.YAMLValue(k)
			if err != nil {
				t.Fatal(err)
			}
			m[kv.(string)] = pairsValue(t, v)
		}
		return m
	case yaml.SequenceNode:
		out := []any{}
		for _, e := range n.Content {
			out = append(out, pairsValue(t, e))
		}
		return out
	}
	v, err := cas.YAMLValue(n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckYAML(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
	tests := []struct {
		name, doc string
		problems  []string // each "line:col: msg"
		fatal     string   // "line:col: msg" of the error ending the check
		bad       int      // mappings holding a key problem
	}{
		{"clean", "a: 1\nb: [x, {c: d}]\n", nil, "", 0},
		{"merge keys are accepted", "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\nd: {<<: [*b, {z: 3}]}\n", nil, "", 0},
		{"scalars are not judged", "a: .inf\nb: !foo x\nc: 1e400\n", nil, "", 0},
		{"every key problem", "a: 1\na: 2\nm:\n  1: x\n  true: y\n", []string{
			`2:1: duplicate key "a" (first at line 1)`,
			"4:3: key 1 is !!int, not a string: quote it",
			"5:3: key true is !!bool, not a string: quote it",
		}, "", 2},
		{"nested under a bad key", "1:\n  a: 1\n  a: 2\n", []string{
			"1:1: key 1 is !!int, not a string: quote it",
			`3:3: duplicate key "a" (first at line 2)`,
		}, "", 2},
		{"an anchored problem once", "a: &a {k: 1, k: 2}\nb: *a\nc: *a\n", []string{`1:14: duplicate key "k" (first at line 1)`}, "", 1},
		{"merge of a scalar", "s: &s x\nm:\n  <<: *s\n  y: 1\n", []string{"3:7: a merge (<<) needs a mapping or a sequence of mappings"}, "", 1},
		{"laughs", laughs, nil, "4:33: aliases expand to more than 10000 nodes", 0},
		{"cycle", "a: &a [1, *a]\n", nil, "1:11: alias *a refers to a node that contains it", 0},
		{"too deep", strings.Repeat("[", cas.MaxDepth+1) + strings.Repeat("]", cas.MaxDepth+1), nil,
			fmt.Sprintf("1:%d: nesting deeper than %d levels", cas.MaxDepth+1, cas.MaxDepth), 0},
	}
	at := func(e *cas.SyntaxError) string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg) }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			ps, bad, err := cas.CheckYAML(&doc)
			var got []string
			for _, p := range ps {
				got = append(got, at(p))
			}
			if !reflect.DeepEqual(got, tc.problems) {
				t.Errorf("problems = %q, want %q", got, tc.problems)
			}
			fatal := ""
			var se *cas.SyntaxError
			if errors.As(err, &se) {
				fatal = at(se)
			} else if err != nil {
				fatal = err.Error()
			}
			if fatal != tc.fatal {
				t.Errorf("error = %q, want %q", fatal, tc.fatal)
			}
			if len(bad) != tc.bad {
				t.Errorf("%d bad mappings, want %d", len(bad), tc.bad)
			}
			if tc.problems == nil && tc.fatal == "" {
				return
			}
			// ParseYAML fails at the first of them.
			if _, err := cas.ParseYAML([]byte(tc.doc)); err == nil {
				t.Errorf("ParseYAML accepts what CheckYAML reports")
			}
		})
	}
}

func TestYAMLPairs(t *testing.T) {
	var doc yaml.Node
	in := "x: &x {a: 1, b: 2}\ny: &y {b: 3, <<: *x, c: 4}\nm:\n  d: 5\n  <<: [*y, {a: 0, e: 6}]\n  b: 7\nself: &s {<<: *s, k: 1}\n"
	if err := yaml.Unmarshal([]byte(in), &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(name string) string {
		var out []string
		for k, v := range cas.YAMLPairs(doc.Content[0]) {
			if k.Value != name {
				continue
			}
			for k, v := range cas.YAMLPairs(v) {
				out = append(out, k.Value+"="+v.Value)
			}
		}
		return strings.Join(out, " ")
	}
	// Written keys first, in order, then merged ones: y's own before x's,
	// the list's mappings in turn.
	if got, want := keys("m"), "d=5 b=7 c=4 a=1 e=6"; got != want {
		t.Errorf("pairs of m = %q, want %q", got, want)
	}
	// A mapping that merges itself (CheckYAML rejects it) ends.
	if got, want := keys("self"), "k=1"; got != want {
		t.Errorf("pairs of self = %q, want %q", got, want)
	}
	var n int
	for range cas.YAMLPairs(&yaml.Node{Kind: yaml.ScalarNode, Value: "x"}) {
		n++
	}
	if n != 0 {
		t.Errorf("a scalar has %d pairs, want 0", n)
	}
}

func TestParseYAMLAliasesAreCopies(t *testing.T) {
	got, err := cas.ParseYAML([]byte("a: &x {k: [1]}\nb: *x\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	m["a"].(map[string]any)["k"].([]any)[0] = "changed"
	if b := m["b"].(map[string]any)["k"].([]any)[0]; b != 1.0 {
		t.Errorf("changing a changed its alias b: %v", b)
	}
}

// billionLaughs returns the classic document: each of levels anchors
// holds width aliases of the previous one.
func billionLaughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [" + strings.TrimSuffix(strings.Repeat(`"lol",`, width), ",") + "]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}

func TestParseYAMLBillionLaughs(t *testing.T) {
	in := []byte(billionLaughs(10, 10)) // 10^10 strings if expanded
	start := time.Now()
	var err error
	allocs := testing.AllocsPerRun(1, func() { _, err = cas.ParseYAML(in) })
	if err == nil {
		t.Fatal("ParseYAML(billion laughs) succeeded")
	}
	var se *cas.SyntaxError
	if !errors.As(err, &se) || se.Msg != "aliases expand to more than 10000 nodes" || se.Line != 4 || se.Column != 38 {
		t.Errorf("ParseYAML(billion laughs) error = %#v", err)
	}
	// The work is bounded by the expansion limit, not the document.
	if allocs > 50000 {
		t.Errorf("ParseYAML(billion laughs) allocated %v times, want under 50000", allocs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ParseYAML(billion laughs) took %v", d)
	}
}

// TestParseYAMLAliasBound pins the expansion rule: aliases may stand for
// 10,000 nodes in all, counting every node they stand for.
func TestParseYAMLAliasBound(t *testing.T) {
	// a is a sequence of 99 scalars: 100 nodes. 100 aliases of it make
	// exactly 10,000 nodes; 101 make 10,100.
	doc := func(aliases int) []byte {
		items := strings.TrimSuffix(strings.Repeat("x,", 99), ",")
		return []byte("a: &a [" + items + "]\nb: [" + strings.TrimSuffix(strings.Repeat("*a,", aliases), ",") + "]\n")
	}
	v, err := cas.ParseYAML(doc(100))
	if err != nil {
		t.Fatalf("ParseYAML with 10000 alias nodes: %v", err)
	}
	if n := len(v.(map[string]any)["b"].([]any)); n != 100 {
		t.Errorf("b has %d elements, want 100", n)
	}
	_, err = cas.ParseYAML(doc(101))
	var se *cas.SyntaxError
	if !errors.As(err, &se) || se.Msg != "aliases expand to more than 10000 nodes" || se.Line != 2 || se.Column != 305 {
		t.Errorf("ParseYAML with 10100 alias nodes: error = %#v, want the bound at 2:305 (the 101st alias)", err)
	}
	// Keys count too: a mapping of 49 pairs is 99 nodes, so 101 aliases of
	// it make 9,999 nodes and 102 make 10,098.
	mapDoc := func(aliases int) []byte {
		var pairs []string
		for i := range 49 {
			pairs = append(pairs, fmt.Sprintf("k%d: v", i))
		}
		return []byte("m: &m {" + strings.Join(pairs, ", ") + "}\nl: [" + strings.TrimSuffix(strings.Repeat("*m,", aliases), ",") + "]\n")
	}
	if _, err := cas.ParseYAML(mapDoc(101)); err != nil {
		t.Errorf("ParseYAML with 9999 alias nodes: %v", err)
	}
	if _, err := cas.ParseYAML(mapDoc(102)); err == nil {
		t.Errorf("ParseYAML with 10098 alias nodes (keys counted) succeeded")
	}
	// Aliases of scalars count one node each.
	scalars := "s: &s x\nl: [" + strings.TrimSuffix(strings.Repeat("*s,", 10000), ",") + "]\n"
	if _, err := cas.ParseYAML([]byte(scalars)); err != nil {
		t.Errorf("ParseYAML with 10000 scalar aliases: %v", err)
	}
	if _, err := cas.ParseYAML([]byte(scalars + "m: *s\n")); err == nil {
		t.Errorf("ParseYAML with 10001 scalar aliases succeeded")
	}
}

func TestParseYAMLRejects(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int
		msg       string
	}{
		{"empty", "", 0, 0, "empty document"},
		{"only comments", "# one\n\n# two\n", 0, 0, "empty document"},
		{"only whitespace", "  \n\n", 0, 0, "empty document"},
		{"two documents", "a: 1\n---\nb: 2\n", 2, 1, "more than one document: a second one starts here"},
		{"second document empty", "a: 1\n---\n", 2, 1, "more than one document: a second one starts here"},
		{"int key", "1: a", 1, 1, "key 1 is !!int, not a string: quote it"},
		{"bool key", "a: 1\ntrue: x", 2, 1, "key true is !!bool, not a string: quote it"},
		{"null key", "null: x", 1, 1, "key null is !!null, not a string: quote it"},
		{"tilde key", "~: x", 1, 1, "key ~ is !!null, not a string: quote it"},
		{"empty key", "? \n: x", 1, 2, `key "" is !!null, not a string: quote it`},
		{"float key", "a:\n  1.10: x", 2, 3, "key 1.10 is !!float, not a string: quote it"},
		{"timestamp key", "2001-01-01: x", 1, 1, "key 2001-01-01 is !!timestamp, not a string: quote it"},
		{"overflowing key", "1e400: x", 1, 1, "key 1e400 is a number, not a string: quote it"},
		{"sequence key", "? [a, b]\n: 1", 1, 3, "key is a sequence, not a string"},
		{"mapping key", "? {a: 1}\n: 1", 1, 3, "key is a mapping, not a string"},
		{"alias key to a number", "a: &n 1\nb: {*n : x}", 2, 5, "key 1 is !!int, not a string: quote it"},
		{"alias key to a mapping", "a: &m {x: 1}\nb: {*m : x}", 2, 5, "key is a mapping, not a string"},
		{"duplicate key", "a: 1\nb: 2\na: 3", 3, 1, `duplicate key "a" (first at line 1)`},
		{"duplicate key quoted", "a: 1\n'a': 2", 2, 1, `duplicate key "a" (first at line 1)`},
		{"duplicate key in flow", "x: {a: 1, a: 2}", 1, 11, `duplicate key "a" (first at line 1)`},
		{"column counts characters", "x: {éé: 1, 😀: 2, éé: 3}", 1, 18, `duplicate key "éé" (first at line 1)`},
		{"duplicate merge key", "b: &b {a: 1}\nm:\n  <<: *b\n  <<: *b\n", 4, 3, `duplicate key "<<" (first at line 3)`},
		{"inf", "a: .inf", 1, 4, "number .inf is not finite: JSON has no infinity or NaN"},
		{"minus inf", "a: [1, -.Inf]", 1, 8, "number -.Inf is not finite: JSON has no infinity or NaN"},
		{"nan", "a: .NaN", 1, 4, "number .NaN is not finite: JSON has no infinity or NaN"},
		{"overflow", "a: 1e400", 1, 4, "number 1e400 overflows a double"},
		{"negative overflow", "a: -1_0e400", 1, 4, "number -1_0e400 overflows a double"},
		{"explicit float overflow", "a: !!float 1e400", 1, 4, "number 1e400 overflows a double"},
		{"hex beyond 64 bits", "a: 0x1FFFFFFFFFFFFFFFFF", 1, 4, "number 0x1FFFFFFFFFFFFFFFFF is out of range"},
		{"custom tag", "a: !foo bar", 1, 4, "unsupported tag !foo"},
		{"custom tag on mapping", "a: !foo {b: 1}", 1, 4, "unsupported tag !foo"},
		{"set", "a: !!set {x}", 1, 4, "unsupported tag !!set"},
		{"str tag on a mapping", "a: !!str {b: 1}", 1, 4, "unsupported tag !!str"},
		{"invalid int", "a: !!int abc", 1, 4, `invalid !!int "abc"`},
		{"float as int", "a: !!int 1.5", 1, 4, `invalid !!int "1.5"`},
		{"invalid float", "a: !!float inf", 1, 4, `invalid !!float "inf"`},
		{"invalid bool", "a: !!bool yes", 1, 4, `invalid !!bool "yes"`},
		{"invalid null", "a: !!null x", 1, 4, `invalid !!null "x"`},
		{"merge of a scalar", "a: &s x\nm:\n  <<: *s\n", 3, 7, "a merge (<<) needs a mapping or a sequence of mappings"},
		{"merge list with a scalar", "a: &a {x: 1}\nm: {<<: [*a, 2]}", 2, 14, "a merge (<<) needs a mapping or a sequence of mappings"},
		{"recursive alias", "a: &a [1, *a]", 1, 11, "alias *a refers to a node that contains it"},
		{"recursive merge", "a: &a {<<: *a}", 1, 12, "alias *a refers to a node that contains it"},
		{"unknown anchor", "x: 1\ny: [*nope]", 2, 5, `unknown anchor "nope"`},
		{"mapping in plain scalar", "a: b: c", 1, 0, "mapping values are not allowed in this context"},
		{"unclosed flow mapping", "x: 1\ny: {a: 1\nz: 2\n", 2, 0, "did not find expected ',' or '}', in the block starting on this line"},
		{"sequence in mapping", "x: 1\ny: 2\n- a\n", 3, 0, "did not find expected key, in the block starting on this line"},
		{"bad indentation", "x:\n  - a\n  b: 1\n", 2, 0, "did not find expected '-' indicator, in the block starting on this line"},
		{"unterminated quote", "x: 1\ny: \"abc\n", 2, 0, "found unexpected end of stream"},
		{"bad escape", "x: 1\ny: \"\\q\"\n", 2, 0, "found unknown escape character"},
		{"surrogate escape", "a: \"\\ud800\"", 1, 0, "found invalid Unicode character escape code"},
		{"undefined tag handle", "x: 1\ny: !e!foo 1\n", 2, 0, "found undefined tag handle"},
		{"invalid UTF-8", "a: 1\nb: x\xffy", 2, 5, "invalid UTF-8 byte 0xff"},
		{"control character", "a: \x01", 1, 4, "control character U+0001 is not allowed in YAML"},
		{"DEL", "a: \"\x7f\"", 1, 5, "control character U+007F is not allowed in YAML"},
		{"noncharacter", "a: é\uFFFE", 1, 5, "character U+FFFE is not allowed in YAML"},
		{"too deep flow", strings.Repeat("[", cas.MaxDepth+1) + strings.Repeat("]", cas.MaxDepth+1), 1, cas.MaxDepth + 1, "nesting deeper than 1000 levels"},
		{"too deep through an alias",
			"a: &a " + strings.Repeat("[", 600) + strings.Repeat("]", 600) + "\nb: " + strings.Repeat("[", 400) + "*a" + strings.Repeat("]", 400),
			2, 404, "nesting deeper than 1000 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := cas.ParseYAML([]byte(tc.in))
			if err == nil {
				t.Fatalf("ParseYAML(%q) = %#v, want an error", tc.in, v)
			}
			var se *cas.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseYAML(%q) error %T %v, want *SyntaxError", tc.in, err, err)
			}
			if !errors.Is(err, cas.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid")
			}
			if se.Line != tc.line || se.Column != tc.col || se.Msg != tc.msg {
				t.Errorf("ParseYAML(%.60q) error = %d:%d %q, want %d:%d %q", tc.in, se.Line, se.Column, se.Msg, tc.line, tc.col, tc.msg)
			}
		})
	}
}

func TestYAMLValue(t *testing.T) {
	src := []byte("name: review\nroles:\n  planner:\n    status: 1.10\n  dev:\n    status: done\n")
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	whole, err := cas.YAMLValue(&doc)
	if err != nil {
		t.Fatal(err)
	}
	if whole.(map[string]any)["name"] != "review" {
		t.Errorf("YAMLValue(document) = %#v", whole)
	}
	// Convert a sub-tree, keeping the file's line numbers in errors.
	roles := doc.Content[0].Content[3]
	v, err := cas.YAMLValue(roles.Content[3])
	if err != nil || !reflect.DeepEqual(v, map[string]any{"status": "done"}) {
		t.Errorf("YAMLValue(dev) = %#v, %v", v, err)
	}
	v, err = cas.YAMLValue(roles.Content[1].Content[1])
	if err != nil || v != 1.1 {
		t.Errorf("YAMLValue(1.10) = %#v, %v", v, err)
	}
	_, err = cas.YAMLValue(nil)
	var se *cas.SyntaxError
	if !errors.As(err, &se) || se.Msg != "empty document" {
		t.Errorf("YAMLValue(nil) error = %v, want empty document", err)
	}
	_, err = cas.YAMLValue(&yaml.Node{})
	if !errors.As(err, &se) || se.Msg != "empty document" {
		t.Errorf("YAMLValue(zero node) error = %v, want empty document", err)
	}
	_, err = cas.YAMLValue(&yaml.Node{Kind: yaml.DocumentNode, Line: 4, Column: 2})
	if !errors.As(err, &se) || se.Msg != "empty document" || se.Line != 4 {
		t.Errorf("YAMLValue(empty DocumentNode) error = %v, want empty document at line 4", err)
	}
	// Nodes built by hand, with no line numbers.
	_, err = cas.YAMLValue(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "a"}}})
	if !errors.As(err, &se) || se.Msg != "mapping has a key without a value" {
		t.Errorf("YAMLValue(odd mapping) error = %v", err)
	}
}

// TestParseYAMLCanonical checks the path of YAML input into the store:
// formatting does not change the canonical bytes.
func TestParseYAMLCanonical(t *testing.T) {
	a, err := cas.ParseYAML([]byte("b: [1.0, 2.50]\na: {y: \"é\", x: ~}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cas.ParseJSON([]byte(`{"a":{"x":null,"y":"\u00e9"},"b":[1,2.5]}`))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cas.Canonical(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := cas.Canonical(b)
	if string(ca) != string(cb) || string(ca) != `{"a":{"x":null,"y":"é"},"b":[1,2.5]}` {
		t.Errorf("Canonical(YAML) = %s, Canonical(JSON) = %s", ca, cb)
	}
}

// FuzzCheckYAML checks that the readers that keep positions (ParseYAMLNode,
// CheckYAML, YAMLPairs) agree with ParseYAML: whatever they report,
// ParseYAML refuses, and whatever ParseYAML accepts reads the same through
// YAMLPairs.
func FuzzCheckYAML(f *testing.F) {
	for _, s := range []string{
		"a: 1\n", "", "# c\n", "a: 1\n---\nb: 2\n", "1: a\nb: 1\nb: 2\n", "a: &a [*a]\n",
		"base: &b {a: 1, b: 2}\nm:\n  <<: *b\n  b: 3\n", "m: {<<: [{a: 1}, {a: 2, b: 3}], c: 4}\n",
		"x: &x {a: 1}\ny: &y {<<: *x, b: 2}\nz: {<<: [*y, *x]}\n", "s: &s x\nm: {<<: *s}\n",
		"a: {k: 1, k: 2}\n", "? [a]\n: 1\n", "a: .inf\n", "a: b: c\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, perr := cas.ParseYAML(data)
		doc, err := cas.ParseYAMLNode(data)
		if err != nil || doc == nil {
			if perr == nil {
				t.Fatalf("ParseYAMLNode(%q) = %v, %v but ParseYAML accepts it", data, doc, err)
			}
			return
		}
		problems, _, err := cas.CheckYAML(doc)
		if len(problems) > 0 || err != nil {
			if perr == nil {
				t.Fatalf("CheckYAML(%q) = %v, %v but ParseYAML accepts it", data, problems, err)
			}
			return
		}
		if perr != nil {
			return // a scalar's problem: CheckYAML leaves values to their readers
		}
		if got := pairsValue(t, doc); !reflect.DeepEqual(got, v) {
			t.Fatalf("read through YAMLPairs, %q = %#v; ParseYAML = %#v", data, got, v)
		}
	})
}
