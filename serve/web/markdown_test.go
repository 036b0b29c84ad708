package web_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/uncaged/uwf/serve/web"
)

func TestRenderMarkdown(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // substrings of the output
		wantNot []string // substrings that must not appear (lower-cased output)
	}{
		{"heading and list", "# Plan\n\n- one\n- two\n", []string{"<h1", "Plan</h1>", "<li>one</li>"}, nil},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |\n", []string{"<table>", "<td>1</td>"}, nil},
		{"code keeps its text", "```\n<script>x</script>\n```\n", []string{"&lt;script&gt;x&lt;/script&gt;"}, []string{"<script"}},
		{"raw script shows as text", "hi <script>window.pwned=1</script> there", []string{"hi &lt;script&gt;window.pwned=1&lt;/script&gt; there"}, []string{"<script"}},
		{"raw img shows as text", `<img src=x onerror="window.pwned=1">`, []string{"&lt;img src=x onerror="}, []string{"<img"}},
		{"html block shows as text", "<div>\n<script>x()</script>\n</div>\n\nafter", []string{"&lt;div&gt;", "&lt;script&gt;x()", "<p>after</p>"}, []string{"<div", "<script"}},
		{"javascript link", "[click](javascript:window.pwned=1)", []string{"click"}, []string{"javascript:"}},
		{"javascript autolink", "<javascript:alert(1)>", nil, []string{`href="javascript`}},
		{"mailto link", "[mail](mailto:a@example.com)", []string{"mail"}, []string{`href="mailto`}},
		{"other scheme", "[x](ftp://example.com/f)", []string{"x"}, []string{`href="ftp`}},
		{"https and relative links kept", "[a](https://example.com/p) [b](/threads/x)", []string{`href="https://example.com/p"`, `href="/threads/x"`}, nil},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", nil, []string{"data:text/html"}},
		{"image with onerror in title", `![a](x.png "\" onerror=\"alert(1)")`, nil, []string{" onerror="}},
		{"http link is kept", "[ok](https://example.com/a)", []string{`href="https://example.com/a"`, `rel="nofollow noreferrer"`}, nil},
		{"style attribute", `<p style="background:url(javascript:alert(1))">x</p>`, []string{"&lt;p style="}, []string{`style="`, "<p style"}},
		{"iframe", `<iframe src="https://evil.example"></iframe>`, nil, []string{"<iframe"}},
		{"svg shows as text", `<svg onload=alert(1)><script>alert(1)</script></svg>`, []string{"&lt;svg onload"}, []string{"<svg", "<script"}},
		{"entity-encoded javascript", "[x](&#106;avascript:alert(1))", nil, []string{"javascript:", `href="&#106;`}},
		{"column alignment as attributes", "| a | b |\n|:--|--:|\n| 1 | 2 |\n", []string{`<th align="left">a</th>`, `<td align="right">2</td>`}, []string{"style="}},
		{"ordered list keeps its start", "3. three\n4. four\n", []string{`<ol start="3">`}, nil},
		{"task list checkboxes, disabled", "- [x] done\n- [ ] todo\n", []string{`<input checked="" disabled="" type="checkbox"> done`, `<input disabled="" type="checkbox"> todo`}, nil},
		{"fenced code loses its class", "```go\nx\n```\n", []string{"<pre><code>x\n</code></pre>"}, []string{"class="}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(web.RenderMarkdown(tc.in))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("RenderMarkdown(%q) = %q, want it to contain %q", tc.in, got, w)
				}
			}
			for _, tag := range tagRE.FindAllString(strings.ToLower(got), -1) {
				if badTagRE.MatchString(tag) {
					t.Errorf("RenderMarkdown(%q) = %q lets through %q", tc.in, got, tag)
				}
			}
			low := strings.ToLower(got)
			for _, w := range tc.wantNot {
				if strings.Contains(low, strings.ToLower(w)) {
					t.Errorf("RenderMarkdown(%q) = %q, must not contain %q", tc.in, got, w)
				}
			}
		})
	}
}

func TestRenderMarkdownHuge(t *testing.T) {
	in := strings.Repeat("<b>x</b>", 1<<18) // over 1 MiB
	got := string(web.RenderMarkdown(in))
	if !strings.HasPrefix(got, "<pre>&lt;b&gt;") {
		t.Errorf("a text over 1 MiB should be escaped plain text, got %.40q", got)
	}
}

// FuzzRenderMarkdown feeds the renderer hostile markdown: whatever comes in,
// no script element, event handler or javascript: URL comes out, and the
// output parsed as a browser parses it holds only the sanitiser's elements
// and attributes (web.SafeHTMLErr).
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{
		"<script>alert(1)</script>", `<img src=x onerror=alert(1)>`, "[a](javascript:alert(1))",
		"<a href='jav&#x09;ascript:alert(1)'>x</a>", "```html\n<script>\n```", "<svg/onload=alert(1)>",
		"[x]( javascript:alert(1) )", "<<script>script>alert(1)<</script>/script>", "> <details open ontoggle=alert(1)>",
		"| a | b |\n|:-|-:|\n| [x](javascript:y) | ![i](data:x) |\n", "- [x] done\n- [ ] <b>todo</b>\n", "3. [t](/x \"=\" onclick=\"y\")\n",
		"<a@example.com> <https://example.com/?a=1&b=2>", "```js\" onload=x\nz\n```\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := string(web.RenderMarkdown(in))
		if err := web.SafeHTMLErr(out); err != nil {
			t.Fatalf("RenderMarkdown(%q) = %q: %v", in, out, err)
		}
		got := strings.ToLower(out)
		// Text has its "<" escaped, so every "<" starts a tag the
		// sanitiser let through.
		for _, tag := range tagRE.FindAllString(got, -1) {
			if badTagRE.MatchString(tag) {
				t.Fatalf("RenderMarkdown(%q) = %q lets through %q", in, got, tag)
			}
		}
	})
}

var (
	tagRE    = regexp.MustCompile(`<[^>]*>?`)
	badTagRE = regexp.MustCompile(`^</?(script|iframe|svg|object|embed|style|math|form|base|meta|link)\b|\son[a-z]+\s*=|(href|src)\s*=\s*["']?\s*(javascript|data|vbscript):`)
)
