package web_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/serve/web"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func edge(role string) moderator.Edge { return moderator.Edge{Role: role, Prompt: "p"} }

// graphs are the routing graphs drawn by the golden tests.
var graphs = []struct {
	name    string
	g       moderator.Graph
	current string
}{
	{"review-loop", moderator.Graph{
		"$START":    {"new": edge("planner")},
		"planner":   {"done": edge("developer")},
		"developer": {"done": edge("reviewer")},
		"reviewer":  {"approved": edge("$END"), "rejected": edge("developer")},
	}, "reviewer"},
	{"branches", moderator.Graph{
		"$START": {"new": edge("triage")},
		"triage": {"bug": edge("fix"), "feature": edge("design"), "noise": edge("$END"), "again": edge("triage")},
		"design": {"done": edge("build")},
		"build":  {"done": edge("test")},
		"fix":    {"done": edge("test")},
		"test":   {"pass": edge("$END"), "fail": edge("triage"), "flaky": edge("test")},
	}, ""},
	{"hostile", moderator.Graph{
		"$START":                    {"new": edge(`<script>alert(1)</script>`)},
		`<script>alert(1)</script>`: {`"><img src=x onerror=alert(1)>`: edge("a&b")},
		"a&b":                       {"done": edge("$END")},
	}, "a&b"},
}

func roleNames(g moderator.Graph) []string {
	var rs []string
	for from, es := range g {
		if from != moderator.Start {
			rs = append(rs, from)
		}
		for _, e := range es {
			if e.Role != moderator.End {
				rs = append(rs, e.Role)
			}
		}
	}
	return rs
}

func TestGraphSVGGolden(t *testing.T) {
	for _, tc := range graphs {
		t.Run(tc.name, func(t *testing.T) {
			got := web.LayoutGraph(tc.g, roleNames(tc.g), tc.current).SVG()
			again := web.LayoutGraph(tc.g, roleNames(tc.g), tc.current).SVG()
			if !bytes.Equal(got, again) {
				t.Fatal("two layouts of the same graph differ")
			}
			path := filepath.Join("testdata", tc.name+".svg")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("SVG of %s differs from %s (run with -update if the change is meant):\n%s", tc.name, path, got)
			}
		})
	}
}

// svgDoc is what the structural test reads back from a drawing.
type svgText struct {
	Class string `xml:"class,attr"`
	Text  string `xml:",chardata"`
}

type svgGroup struct {
	Class string    `xml:"class,attr"`
	Role  string    `xml:"data-role,attr"`
	From  string    `xml:"data-from,attr"`
	To    string    `xml:"data-to,attr"`
	Texts []svgText `xml:"text"`
	Rect  *struct {
		Y string `xml:"y,attr"`
	} `xml:"rect"`
}

func parseSVG(t *testing.T, b []byte) []svgGroup {
	t.Helper()
	var doc struct {
		Groups []svgGroup `xml:"g"`
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, b)
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if cd, ok := tok.(xml.CharData); err != nil || !ok || len(bytes.TrimSpace(cd)) > 0 {
			t.Fatalf("content after the SVG element: %v %v", tok, err)
		}
	}
	return doc.Groups
}

// TestGraphSVGNames checks what a reader of the drawing relies on: every
// role, $START and $END is a node labelled with its exact name (escaped, so
// a hostile name stays text), every edge is labelled with its statuses, and
// only the current role is marked.
func TestGraphSVGNames(t *testing.T) {
	for _, tc := range graphs {
		t.Run(tc.name, func(t *testing.T) {
			svg := web.LayoutGraph(tc.g, roleNames(tc.g), tc.current).SVG()
			if bytes.Contains(svg, []byte("<script")) || bytes.Contains(svg, []byte("<img")) {
				t.Fatalf("unescaped markup in the SVG:\n%s", svg)
			}
			nodes := map[string]svgGroup{}
			labels := map[[2]string]string{}
			for _, g := range parseSVG(t, svg) {
				switch {
				case strings.HasPrefix(g.Class, "node"):
					nodes[g.Role] = g
					if len(g.Texts) != 1 || g.Texts[0].Text != g.Role {
						t.Errorf("node %q is labelled %v", g.Role, g.Texts)
					}
					if cur := strings.Contains(g.Class, "current"); cur != (g.Role == tc.current) {
						t.Errorf("node %q: class %q, current role %q", g.Role, g.Class, tc.current)
					}
				case strings.HasPrefix(g.Class, "edge"):
					labels[[2]string{g.From, g.To}] = g.Texts[0].Text
				}
			}
			want := append(roleNames(tc.g), moderator.Start, moderator.End)
			for _, r := range want {
				if _, ok := nodes[r]; !ok {
					t.Errorf("no node for %q", r)
				}
			}
			for from, es := range tc.g {
				for status, e := range es {
					if l, ok := labels[[2]string{from, e.Role}]; !ok || !strings.Contains(l, status) {
						t.Errorf("edge %s -> %s: label %q, want it to name %q", from, e.Role, l, status)
					}
				}
			}
			if y := nodes[moderator.Start].Rect.Y; y != "24" {
				t.Errorf("$START at y=%s, want the top layer (24)", y)
			}
			endY, _ := strconv.ParseFloat(nodes[moderator.End].Rect.Y, 64)
			for r, n := range nodes {
				if y, _ := strconv.ParseFloat(n.Rect.Y, 64); r != moderator.End && y >= endY {
					t.Errorf("%q (y=%s) is not above $END (y=%s)", r, n.Rect.Y, nodes[moderator.End].Rect.Y)
				}
			}
		})
	}
}
