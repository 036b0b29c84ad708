package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/serve/web"
	"github.com/uncaged/uwf/thread"
)

// Untrusted markdown comes out as safe HTML: raw HTML shows as text, and
// a javascript: link loses its target.
func ExampleRenderMarkdown() {
	fmt.Print(web.RenderMarkdown("# Plan\n\nRun <script>alert(1)</script> [now](javascript:alert(1))\n"))
	// Output:
	// <h1>Plan</h1>
	// <p>Run &lt;script&gt;alert(1)&lt;/script&gt; now</p>
}

// A workflow's routing graph, laid out in layers from $START and drawn as
// SVG with the running role marked.
func ExampleLayoutGraph() {
	g := moderator.Graph{
		"$START":   {"new": {Role: "planner"}},
		"planner":  {"done": {Role: "reviewer"}},
		"reviewer": {"approved": {Role: "$END"}, "rejected": {Role: "planner"}},
	}
	svg := string(web.LayoutGraph(g, []string{"planner", "reviewer"}, "reviewer").SVG())
	fmt.Println(strings.HasPrefix(svg, "<svg "), strings.Count(svg, `class="node`), strings.Contains(svg, `class="node role current" data-role="reviewer"`))
	// Output: true 4 true
}

// The viewer mounts on the server's mux beside the API.
func ExampleRegister() {
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(context.Background(), mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	web.Register(mux, thread.New(repo, nil), nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Security-Policy") == web.CSP)
	// Output: 200 text/html; charset=utf-8 true
}
