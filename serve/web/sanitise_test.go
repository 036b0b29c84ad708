package web

import (
	"fmt"
	stdhtml "html"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The elements a sanitised text may hold and the attributes each may carry,
// written out here apart from sanitise's own lists so that a mistake in
// those is caught.
var safeElements = map[string][]string{
	"p": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"blockquote": nil, "pre": nil, "code": nil, "ul": nil, "ol": {"start"}, "li": nil,
	"em": nil, "strong": nil, "del": nil, "br": nil, "hr": nil,
	"a": {"href", "title", "rel"}, "img": {"src", "alt", "title"},
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"align"}, "td": {"align"},
	"input": {"checked", "disabled", "type"},
}

// safeHTMLErr parses out as a browser does (golang.org/x/net/html) and
// returns what in it is not safe: an element or attribute off the lists
// above, a namespace (svg, math), an event handler, an address other than
// http, https or relative, a link without rel="nofollow noreferrer", a
// checkbox that is not disabled.
func safeHTMLErr(out string) error {
	nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		return fmt.Errorf("parse: %v", err)
	}
	var check func(n *html.Node) error
	check = func(n *html.Node) error {
		switch n.Type {
		case html.ElementNode:
			allowed, ok := safeElements[n.Data]
			if !ok || n.Namespace != "" {
				return fmt.Errorf("element <%s> (namespace %q)", n.Data, n.Namespace)
			}
			attrs := map[string]string{}
			for _, a := range n.Attr {
				attrs[a.Key] = a.Val
				if a.Namespace != "" || !contains(allowed, a.Key) || strings.HasPrefix(a.Key, "on") {
					return fmt.Errorf("attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				if (a.Key == "href" || a.Key == "src") && !browserSafeURL(a.Val) {
					return fmt.Errorf("address %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
			}
			if n.Data == "a" && attrs["rel"] != "nofollow noreferrer" {
				return fmt.Errorf("link without rel=\"nofollow noreferrer\": %q", attrs)
			}
			if n.Data == "input" {
				if _, ok := attrs["disabled"]; !ok || attrs["type"] != "checkbox" {
					return fmt.Errorf("input that is not a disabled checkbox: %q", attrs)
				}
			}
		case html.TextNode:
		default:
			return fmt.Errorf("node of type %d (%q)", n.Type, n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if err := check(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range nodes {
		if err := check(n); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// browserSafeURL reads a decoded address as a browser would (leading and
// trailing spaces and control characters stripped, tabs and newlines
// removed) and reports whether its scheme, if any, is http or https.
func browserSafeURL(u string) bool {
	u = strings.TrimFunc(u, func(r rune) bool { return r <= ' ' })
	u = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, u)
	low := strings.ToLower(u)
	for _, bad := range []string{"javascript:", "data:", "vbscript:", "mailto:", "file:"} {
		if strings.HasPrefix(low, bad) {
			return false
		}
	}
	if i := strings.IndexAny(low, ":/?#"); i > 0 && low[i] == ':' {
		return low[:i] == "http" || low[:i] == "https"
	}
	return true
}

func TestSanitise(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"goldmark's vocabulary kept", "<h2>T</h2>\n<p><em>a</em> <strong>b</strong> <del>c</del> <code>d</code><br>\n</p><hr><blockquote><ol start=\"3\"><li>x</li></ol><ul><li>y</li></ul></blockquote>",
			"<h2>T</h2>\n<p><em>a</em> <strong>b</strong> <del>c</del> <code>d</code><br>\n</p><hr><blockquote><ol start=\"3\"><li>x</li></ol><ul><li>y</li></ul></blockquote>"},
		{"table with alignment", `<table><thead><tr><th align="left">a</th></tr></thead><tbody><tr><td align="right">1</td><td align="justify">2</td></tr></tbody></table>`,
			`<table><thead><tr><th align="left">a</th></tr></thead><tbody><tr><td align="right">1</td><td>2</td></tr></tbody></table>`},
		{"link gets rel", `<a href="https://example.com/a?b=c&amp;d" title="t">x</a>`, `<a href="https://example.com/a?b=c&amp;d" title="t" rel="nofollow noreferrer">x</a>`},
		{"relative links", `<a href="/threads/x">a</a><a href="#f">b</a><a href="?q=1">c</a><a href="p/q:r">d</a>`,
			`<a href="/threads/x" rel="nofollow noreferrer">a</a><a href="#f" rel="nofollow noreferrer">b</a><a href="?q=1" rel="nofollow noreferrer">c</a><a href="p/q:r" rel="nofollow noreferrer">d</a>`},
		{"rel given is replaced", `<a href="/x" rel="opener">x</a>`, `<a href="/x" rel="nofollow noreferrer">x</a>`},
		{"javascript link keeps its text", `<a href="javascript:alert(1)">click</a> after`, "click after"},
		{"upper-case scheme", `<a href="JaVaScRiPt:alert(1)">x</a>`, "x"},
		{"entity-encoded scheme", `<a href="&#106;avascript:alert(1)">x</a><a href="&#x6A;avascript&colon;alert(1)">y</a>`, "xy"},
		{"tab in the scheme", `<a href="jav&#x09;ascript:alert(1)">x</a><a href="java	script:alert(1)">y</a>`, "xy"},
		{"leading space", `<a href=" javascript:alert(1)">x</a><a href="&#32;javascript:alert(1)">y</a>`, "xy"},
		{"data, vbscript, mailto, ftp, file", `<a href="data:text/html,x">a</a><a href="vbscript:x">b</a><a href="mailto:a@b">c</a><a href="ftp://h/">d</a><a href="file:///etc/passwd">e</a>`, "abcde"},
		{"empty address", `<a href="">x</a>`, "x"},
		{"colon in a first segment", `<a href="foo:bar">x</a><a href="1http:x">y</a>`, "xy"},
		{"backslash", `<a href="\\evil.example">x</a>`, "x"},
		{"unparseable", `<a href="http://h/%zz">x</a>`, "x"},
		{"dropped link's end tag only", `<a href="javascript:x">a<a href="/ok">b</a>c</a>d</a>`, `a<a href="/ok" rel="nofollow noreferrer">b</a>cd`},
		{"event handlers dropped", `<p onclick="alert(1)">x</p><img src="x.png" onerror="alert(1)" alt="a">`, `<p>x</p><img src="x.png" alt="a">`},
		{"image with a bad source keeps its alt", `<img src="javascript:alert(1)" alt="a"><img src="data:image/svg+xml,x" alt="b">`, `<img alt="a"><img alt="b">`},
		{"style, class, id dropped", `<p style="x:expression(alert(1))" class="c" id="i">x</p><code class="language-go">y</code>`, `<p>x</p><code>y</code>`},
		{"quotes and = in a title", `<a href="/x" title="&#34; onerror=&#34;alert(1)">x</a>`, `<a href="/x" title="&#34; onerror&#61;&#34;alert(1)" rel="nofollow noreferrer">x</a>`},
		{"first of a repeated attribute", `<a href="/ok" href="javascript:x">x</a>`, `<a href="/ok" rel="nofollow noreferrer">x</a>`},
		{"repeated bad first", `<a href="javascript:x" href="/ok">x</a>`, `<a href="/ok" rel="nofollow noreferrer">x</a>`},
		{"script escaped", `<script>alert(1)</script>`, `&lt;script>alert(1)&lt;/script>`},
		{"upper-case tags escaped", `<SCRIPT>x</SCRIPT><P>y</P>`, `&lt;SCRIPT>x&lt;/SCRIPT>&lt;P>y&lt;/P>`},
		{"nested script", `<scr<script>ipt>alert(1)</script>`, `&lt;scr&lt;script>ipt>alert(1)&lt;/script>`},
		{"other elements escaped", `<iframe src="x"></iframe><svg onload=x><math><style>x</style><form><base href="x"><meta><link><object><embed><details open ontoggle=x><div><span>`,
			`&lt;iframe src="x">&lt;/iframe>&lt;svg onload=x>&lt;math>&lt;style>x&lt;/style>&lt;form>&lt;base href="x">&lt;meta>&lt;link>&lt;object>&lt;embed>&lt;details open ontoggle=x>&lt;div>&lt;span>`},
		{"comments, doctype, CDATA, processing instruction", `<!-- x --><!DOCTYPE html><![CDATA[x]]><?php x ?>`, `&lt;!-- x -->&lt;!DOCTYPE html>&lt;![CDATA[x]]>&lt;?php x ?>`},
		{"single-quoted and unquoted values escaped", `<a href='javascript:x'>a</a><a href=javascript:x>b</a>`, `&lt;a href='javascript:x'>a&lt;a href=javascript:x>b`},
		{"unterminated tags escaped", `<p`, `&lt;p`},
		{"unterminated value", `<a href="/x>y`, `&lt;a href="/x>y`},
		{"attribute without space", `<a href="/x"title="y">z</a>`, `&lt;a href="/x"title="y">z`},
		{"slash inside", `<img/src="x"/onerror="y">`, `&lt;img/src="x"/onerror="y">`},
		{"self-closing", `<br /><hr/><p/>x`, `<br><hr><p>x`},
		{"void end tag escaped", `</br></img>`, `&lt;/br>&lt;/img>`},
		{"end tag with attributes escaped", `</p class="x">`, `&lt;/p class="x">`},
		{"checkboxes", `<input checked="" disabled="" type="checkbox"><input type="checkbox"><input type="checkbox" onfocus="x" autofocus>`,
			`<input checked="" disabled="" type="checkbox"><input disabled="" type="checkbox"><input disabled="" type="checkbox">`},
		{"other inputs escaped", `<input type="text" value="x"><input><input type="hidden">`, `&lt;input type="text" value="x">&lt;input>&lt;input type="hidden">`},
		{"bad digits and alignments", `<ol start="-1"><ol start="1e3"><ol start="12345678901"><td align="x">`, `<ol><ol><ol><td>`},
		{"text and references kept", `a &amp; b &lt; c > d &copy; "e" 'f' &#0;`, `a &amp; b &lt; c > d &copy; "e" 'f' &#0;`},
		{"lone <", `a < b <3 <`, `a &lt; b &lt;3 &lt;`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sanitise(tc.in)
			if got != tc.want {
				t.Errorf("sanitise(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
			if err := safeHTMLErr(got); err != nil {
				t.Errorf("sanitise(%q) = %q: %v", tc.in, got, err)
			}
		})
	}
}

// FuzzSanitise feeds the sanitiser any bytes: what comes out, parsed as a
// browser parses it, holds only allowed elements and attributes, no event
// handler and no address but http, https or relative; sanitising it again
// changes nothing; and text, escaped and put in a paragraph, comes out as
// the same text.
func FuzzSanitise(f *testing.F) {
	for _, s := range []string{
		`<p>x</p>`, `<a href="javascript:alert(1)">x</a>`, `<a href="/x" title="t">y</a>`, `<img src="x" alt="a" onerror="b">`,
		`<input checked="" disabled="" type="checkbox">`, `<scr<script>ipt>`, `<a href="jav&#x09;ascript:x">`,
		`<td align="left">1</td>`, `<ol start="7"><li>x</li></ol>`, `<svg><a href="/x">`, `<!--<a href="/x">-->`, "a & b <c> \x00 \xff",
		`<a href="javascript:x">a<a href="/ok">b</a>c</a>`, `<a href="/x"title="y">`, `<br/>`, `</br>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := sanitise(in)
		if err := safeHTMLErr(got); err != nil {
			t.Fatalf("sanitise(%q) = %q: %v", in, got, err)
		}
		if again := sanitise(got); again != got {
			t.Fatalf("sanitise(%q) = %q, and sanitised again %q", in, got, again)
		}
		if !strings.Contains(in, "<") && got != in {
			t.Fatalf("sanitise(%q) = %q, want the text unchanged", in, got)
		}
		if !utf8.ValidString(in) || strings.ContainsAny(in, "\x00\r") {
			return // a parser's normalisation, not the sanitiser's
		}
		wrapped := sanitise("<p>" + stdhtml.EscapeString(in) + "</p>")
		nodes, err := html.ParseFragment(strings.NewReader(wrapped), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
		if err != nil || len(nodes) != 1 || nodes[0].Data != "p" {
			t.Fatalf("sanitise of %q as an escaped paragraph = %q, want one <p> (%v)", in, wrapped, err)
		}
		var text strings.Builder
		for c := nodes[0].FirstChild; c != nil; c = c.NextSibling {
			text.WriteString(c.Data)
		}
		if text.String() != in {
			t.Fatalf("sanitise of %q as an escaped paragraph reads %q", in, text.String())
		}
	})
}
