package web

import (
	"bytes"
	"html/template"
	"sync"

	"github.com/uncaged/uwf/internal/gfm"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// maxMarkdown bounds the text rendered as markdown; a longer text is shown
// as plain text (escaped), which costs nothing to render.
const maxMarkdown = 1 << 20

// md renders CommonMark with GitHub tables, strikethrough and task lists.
// Raw HTML is off: it is shown as the text it is (goldmark would leave it
// out, and a reader would lose what an agent wrote); links keep their URLs,
// which the sanitiser checks. A column's alignment is an align attribute
// (goldmark's default, a style attribute, is blocked by the page's
// Content-Security-Policy). It is built on first use, not when uwf starts
// (issue 13).
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(
			gfm.NewTable(gfm.WithTableCellAlignMethod(gfm.TableCellAlignAttribute)),
			gfm.Strikethrough, gfm.TaskList),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 1))),
	)
})

// RenderMarkdown renders untrusted markdown src to HTML that is safe to put
// in a page: goldmark with raw HTML off, then an allowlist of the elements
// and attributes goldmark writes (see sanitise), so neither a `<script>`,
// an event handler nor a `javascript:`, `data:` or `mailto:` link
// survives, whatever the renderer let through; links are marked
// rel="nofollow noreferrer". A text longer than 1 MiB is escaped as plain
// text instead. It is safe for concurrent use.
func RenderMarkdown(src string) template.HTML {
	if len(src) > maxMarkdown {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	var b bytes.Buffer
	if err := md().Convert([]byte(src), &b); err != nil {
		// goldmark fails only when writing fails, which a buffer does not.
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(sanitise(b.String()))
}

// rawAsText renders raw HTML, inline or as a block, as escaped text. Its
// priority (1, before goldmark's HTML renderer at 1000) makes it the one
// that renders those kinds.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				seg := segs.At(i)
				template.HTMLEscape(w, seg.Value(src))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			_, _ = w.WriteString("<p>")
			lines := b.Lines()
			for i := range lines.Len() {
				line := lines.At(i)
				template.HTMLEscape(w, line.Value(src))
			}
			return ast.WalkContinue, nil
		}
		if b.HasClosure() {
			line := b.ClosureLine
			template.HTMLEscape(w, line.Value(src))
		}
		_, _ = w.WriteString("</p>\n")
		return ast.WalkContinue, nil
	})
}
