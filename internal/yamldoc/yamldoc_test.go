package yamldoc_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/yamldoc"
)

func TestNameProblem(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{"coder", ""},
		{"review-loop.v2_x", ""},
		{"9lives", ""},
		{strings.Repeat("a", yamldoc.MaxNameLen), ""},
		{"", "is empty"},
		{strings.Repeat("a", yamldoc.MaxNameLen+1), "is 191 characters, at most 190 are allowed"},
		{"-x", "may use only letters, digits, '.', '_' and '-', and must start with a letter or digit"},
		{"my agent", "may use only letters, digits, '.', '_' and '-', and must start with a letter or digit"},
		{"a/b", "may use only letters, digits, '.', '_' and '-', and must start with a letter or digit"},
		{"é", "may use only letters, digits, '.', '_' and '-', and must start with a letter or digit"},
	}
	for _, tc := range tests {
		if got := yamldoc.NameProblem(tc.name); got != tc.want {
			t.Errorf("NameProblem(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestProblemsErr(t *testing.T) {
	ps := &yamldoc.Problems{File: "f.yaml"}
	if err := ps.Err(); err != nil {
		t.Fatalf("Err() with no problems = %v", err)
	}
	ps.Add(yamldoc.Position{Line: 3, Col: 2}, "third %d", 3)
	ps.Add(yamldoc.Position{Line: 1, Col: 5}, "first")
	ps.Add(yamldoc.Position{}, "no position")
	ps.Add(yamldoc.Position{Line: 1, Col: 5}, "first")
	ps.Add(yamldoc.Position{Line: 2}, "line only")
	err := ps.Err()
	var ve *yamldoc.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, cas.ErrInvalid) {
		t.Fatalf("Err() = %#v, want a *ValidationError wrapping cas.ErrInvalid", err)
	}
	want := "f.yaml: no position\nf.yaml:1:5: first\nf.yaml:2: line only\nf.yaml:3:2: third 3"
	if err.Error() != want {
		t.Errorf("Err() =\n%s\nwant\n%s", err, want)
	}
	if len(ps.List) != 5 {
		t.Errorf("Err() changed the list: %d problems", len(ps.List))
	}
}

func TestCheckTree(t *testing.T) {
	tests := []struct {
		name, doc string
		fatal     bool
		want      string
	}{
		{"clean", "a: 1\nb: [x, {c: d}]\n", false, ""},
		{"duplicate", "a: 1\na: 2\n", false, `f.yaml:2:1: duplicate key "a" (first at line 1)`},
		{"merge key", "base: &b {x: 1}\nc:\n  <<: *b\n", false, ""},
		{"merge of a scalar", "base: &b x\nc:\n  <<: *b\n", false, "f.yaml:3:7: a merge (<<) needs a mapping or a sequence of mappings"},
		{"non-string key", "1: a\n", false, "f.yaml:1:1: key 1 is !!int, not a string: quote it"},
		{"two key problems", "1: a\nb: 1\nb: 2\n", false, "f.yaml:1:1: key 1 is !!int, not a string: quote it\nf.yaml:3:1: duplicate key \"b\" (first at line 2)"},
		{"cycle", "a: &a [*a]\n", true, "f.yaml:1:8: alias *a refers to a node that contains it"},
		{"laughs", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n", true, "aliases expand to more than 10000 nodes"},
		{"deep", strings.Repeat("[", cas.MaxDepth+1) + strings.Repeat("]", cas.MaxDepth+1) + "\n", true, "nesting deeper than 1000 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			ps := &yamldoc.Problems{File: "f.yaml"}
			fatal, _ := yamldoc.CheckTree(ps, &doc)
			err := ps.Err()
			if fatal != tc.fatal || (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckTree(%q) = fatal %v, %v; want fatal %v, %q", tc.name, fatal, err, tc.fatal, tc.want)
			}
		})
	}
}

func TestPairsMerged(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n"), &doc); err != nil {
		t.Fatal(err)
	}
	c := yamldoc.Lookup(doc.Content[0], "c")
	var got []string
	for k, v := range yamldoc.Pairs(c) {
		got = append(got, k.Value+"="+yamldoc.Resolve(v).Value)
	}
	if strings.Join(got, " ") != "y=3 x=1" {
		t.Errorf("Pairs of a mapping with a merge = %q, want [y=3 x=1]", got)
	}
	if x := yamldoc.Lookup(c, "x"); x == nil || x.Value != "1" {
		t.Errorf("Lookup of a merged key = %v, want 1", x)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(path, []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := yamldoc.ReadFile(path, 8); err != nil || string(data) != "name: x\n" {
		t.Errorf("ReadFile at the limit = %q, %v", data, err)
	}
	if _, err := yamldoc.ReadFile(path, 7); !errors.Is(err, cas.ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile over the limit = %v, want ErrTooLarge naming the file", err)
	}
	if _, err := yamldoc.ReadFile(filepath.Join(dir, "none.yaml"), 8); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file = %v, want fs.ErrNotExist", err)
	}
}
