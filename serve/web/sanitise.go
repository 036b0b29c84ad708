package web

import (
	"html"
	"net/url"
	"strings"
)

// sanitise returns the HTML s with only the markup goldmark renders for
// [RenderMarkdown] kept, rebuilt from what was checked: an allowlist of
// elements, each with the attributes it may carry, every attribute value
// decoded, checked and escaped again. It is correct for any input bytes,
// not only goldmark's output; anything unexpected fails closed:
//
//   - A "<" that does not start a well-formed tag (a lower-case name,
//     attributes without a value or with a double-quoted one, an optional
//     "/", then ">"), or starts one of an element not on the list (script,
//     style, iframe, svg, a comment, a doctype...), is escaped, so the tag
//     shows as the text it is.
//   - An attribute not on its element's list (an event handler, style,
//     class, id) is dropped.
//   - A link or image address is kept only when, decoded, it is http, https
//     or relative (a path, a query, a fragment): javascript:, data:,
//     vbscript:, mailto: and every other scheme are dropped, and so is an
//     address with a control character, a space or a backslash, which a
//     browser might strip or rewrite before reading the scheme. A link without an address is
//     dropped with its end tag, its text kept; links get
//     rel="nofollow noreferrer".
//   - A checkbox (a task list's) is always disabled; an input of any other
//     type is escaped.
//
// Text between tags is copied as it is: without a "<" it holds no markup,
// and its character references decode to text.
func sanitise(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	var links []bool // for each <a> open: whether it was kept
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		t, n, ok := parseTag(s)
		if !ok || !writeTag(&b, t, &links) {
			b.WriteString("&lt;")
			s = s[1:]
			continue
		}
		s = s[n:]
	}
}

// tag is a start or end tag as parseTag read it.
type tag struct {
	name  string
	end   bool
	attrs []attr
}

type attr struct {
	name, value string // value as written, before decoding
}

// parseTag reads the tag at the start of s (which starts with "<") and
// returns it and its length. It accepts only the strict form goldmark
// writes: a lower-case ASCII name, then attributes (a lower-case name,
// alone or followed by ="value") separated by HTML white space, an
// optional "/" and ">"; an end tag has no attributes.
func parseTag(s string) (t tag, n int, ok bool) {
	i := 1
	if i < len(s) && s[i] == '/' {
		t.end = true
		i++
	}
	name, j := scanName(s, i)
	if name == "" {
		return t, 0, false
	}
	t.name, i = name, j
	for {
		ws := i
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return t, 0, false
		}
		switch s[i] {
		case '>':
			return t, i + 1, true
		case '/':
			if t.end || i+1 >= len(s) || s[i+1] != '>' {
				return t, 0, false
			}
			return t, i + 2, true
		}
		if t.end || i == ws {
			// an end tag's attribute, or an attribute not set off by space
			return t, 0, false
		}
		name, j := scanName(s, i)
		if name == "" {
			return t, 0, false
		}
		i = j
		a := attr{name: name}
		if i < len(s) && s[i] == '=' {
			if i+1 >= len(s) || s[i+1] != '"' {
				return t, 0, false // only double-quoted values
			}
			k := strings.IndexByte(s[i+2:], '"')
			if k < 0 {
				return t, 0, false
			}
			a.value = s[i+2 : i+2+k]
			i += 2 + k + 1
		}
		t.attrs = append(t.attrs, a)
	}
}

// scanName reads a name ([a-z][a-z0-9-]*) at s[i:] and returns it and the
// index after it; "" when there is none.
func scanName(s string, i int) (string, int) {
	j := i
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || j > i && (s[j] >= '0' && s[j] <= '9' || s[j] == '-')) {
		j++
	}
	return s[i:j], j
}

// isSpace reports whether c is HTML white space, which separates
// attributes.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// Kinds of attribute value.
const (
	attrNone   = iota // not allowed on the element
	attrText          // any text (escaped again)
	attrURL           // an address: http, https or relative
	attrDigits        // a whole number
	attrAlign         // left, center or right
)

// element reports whether the element name is kept and whether it is void
// (has no end tag). The list is goldmark's vocabulary with the Table,
// Strikethrough and TaskList extensions, all of which bluemonday's
// user-content policy (used before) allowed too.
func element(name string) (kept, void bool) {
	switch name {
	case "p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code",
		"ul", "ol", "li", "em", "strong", "del", "a",
		"table", "thead", "tbody", "tr", "th", "td":
		return true, false
	case "br", "hr", "img", "input":
		return true, true
	}
	return false, false
}

// attribute returns the kind of value the attribute name may have on the
// element el, attrNone when it is not allowed there.
func attribute(el, name string) int {
	switch el + " " + name {
	case "a href", "img src":
		return attrURL
	case "a title", "img alt", "img title":
		return attrText
	case "ol start":
		return attrDigits
	case "th align", "td align":
		return attrAlign
	}
	return attrNone
}

// writeTag writes the tag t as checked and rebuilt, or reports false when
// it is to be escaped instead. links tracks the open <a> elements, so that
// the end tag of a dropped link is dropped too.
func writeTag(b *strings.Builder, t tag, links *[]bool) bool {
	kept, void := element(t.name)
	switch {
	case !kept:
		return false
	case t.end && void:
		return false // a browser reads </br> as <br>
	case t.end && t.name == "a":
		if len(*links) == 0 {
			return true // an end tag with nothing to end: dropped
		}
		open := (*links)[len(*links)-1]
		*links = (*links)[:len(*links)-1]
		if open {
			b.WriteString("</a>")
		}
		return true
	case t.end:
		b.WriteString("</" + t.name + ">")
		return true
	case t.name == "input":
		return writeCheckbox(b, t.attrs)
	}
	var out []attr // checked and decoded
	for _, a := range t.attrs {
		kind := attribute(t.name, a.name)
		if kind == attrNone || hasAttr(out, a.name) {
			continue // the first of a repeated attribute is the one a browser uses
		}
		v := html.UnescapeString(a.value)
		switch kind {
		case attrURL:
			if !safeURL(v) {
				continue
			}
		case attrDigits:
			if v == "" || len(v) > 9 || strings.Trim(v, "0123456789") != "" {
				continue
			}
		case attrAlign:
			if v != "left" && v != "center" && v != "right" {
				continue
			}
		}
		out = append(out, attr{a.name, v})
	}
	if t.name == "a" {
		link := hasAttr(out, "href")
		*links = append(*links, link)
		if !link {
			return true // a link without an address: its text only
		}
	}
	b.WriteString("<" + t.name)
	for _, a := range out {
		b.WriteString(" " + a.name + `="`)
		v := html.EscapeString(a.value)
		if attribute(t.name, a.name) == attrText {
			// A title or alt is text: "=" escaped too, so that even a
			// scanner that ignores quotes does not read an attribute in
			// it (a title of ` onerror=alert(1)`). An address has no
			// space, so no attribute can be read in it.
			v = strings.ReplaceAll(v, "=", "&#61;")
		}
		b.WriteString(v)
		b.WriteByte('"')
	}
	if t.name == "a" {
		b.WriteString(` rel="nofollow noreferrer"`)
	}
	b.WriteByte('>')
	return true
}

// writeCheckbox writes a task list's checkbox, always disabled, or reports
// false for an input of another type (a form field), which is escaped.
func writeCheckbox(b *strings.Builder, attrs []attr) bool {
	var typ, checked *attr
	for i, a := range attrs {
		switch {
		case a.name == "type" && typ == nil:
			typ = &attrs[i]
		case a.name == "checked" && checked == nil:
			checked = &attrs[i]
		}
	}
	if typ == nil || html.UnescapeString(typ.value) != "checkbox" {
		return false
	}
	if checked != nil {
		b.WriteString(`<input checked="" disabled="" type="checkbox">`)
	} else {
		b.WriteString(`<input disabled="" type="checkbox">`)
	}
	return true
}

func hasAttr(attrs []attr, name string) bool {
	for _, a := range attrs {
		if a.name == name {
			return true
		}
	}
	return false
}

// safeURL reports whether the decoded address u may be a link or an image
// source: http or https, or relative (a path, a query or a fragment, with
// no colon before its first "/", "?" or "#"), and parseable by net/url.
// An address with a control character, a space or a backslash is refused:
// goldmark percent-encodes those, and a browser strips or rewrites some of
// them before it reads the scheme.
func safeURL(u string) bool {
	if u == "" {
		return false
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return false
		}
	}
	if end := strings.IndexAny(u, "/?#"); end != 0 {
		head := u
		if end > 0 {
			head = u[:end]
		}
		if c := strings.IndexByte(head, ':'); c >= 0 {
			if scheme := strings.ToLower(head[:c]); scheme != "http" && scheme != "https" {
				return false
			}
		}
	}
	_, err := url.Parse(u)
	return err == nil
}
