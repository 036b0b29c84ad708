package cas

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects (JSON) or sequences
// and mappings (YAML, aliases expanded) that [ParseJSON], [ParseYAML],
// [YAMLValue], [Canonical] and [ToValue] accept. A scalar has depth 0 and
// `[[1]]` has depth 2, so MaxDepth levels are accepted and MaxDepth+1 are
// rejected. It bounds the stack those functions use on hostile input. It
// is the limit on a node's payload: [DecodeNode] reads a stored node, whose
// envelope {"payload":...,"type":...} adds one level, up to MaxDepth+1, so
// whatever [Repo.Put] accepts every reader of the store reads back.
const MaxDepth = 1000

// SyntaxError reports malformed or rejected user input (JSON or YAML) and
// where: Line and Column are 1-based (0 when unknown). Column counts
// characters (Unicode code points), not bytes; a JSON byte-order mark is not
// counted. It wraps [ErrInvalid].
type SyntaxError struct {
	Line, Column int
	Msg          string // what is wrong, lower case, e.g. `duplicate key "a"`
}

// Error returns "line L, column C: Msg", "line L: Msg" when the column is
// unknown, or just Msg when the line is unknown.
func (e *SyntaxError) Error() string {
	switch {
	case e.Line == 0:
		return e.Msg
	case e.Column == 0:
		return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return "line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Column) + ": " + e.Msg
}

// Unwrap returns [ErrInvalid].
func (e *SyntaxError) Unwrap() error { return ErrInvalid }

// ParseJSON decodes one JSON text into plain values: nil, bool, float64,
// string, []any and map[string]any. The result never holds a nil slice or
// map, and the caller owns it.
//
// It accepts only I-JSON (RFC 7493): duplicate object keys (compared after
// unescaping, so {"a":1,"\u0061":2} is a duplicate), invalid UTF-8, lone
// surrogates (\ud800 without its pair, or a low surrogate alone) and numbers
// that overflow a double (1e400) are rejected, not repaired; so is
// everything RFC 8259 forbids (trailing commas, leading zeros, NaN,
// Infinity, comments, control characters in strings, trailing data after
// the value). A number too small for a double (1e-400) is accepted and
// becomes 0 (or the nearest subnormal), as RFC 8785 implementations do; a
// number with more digits than a double holds is rounded to the nearest
// double. A leading UTF-8 byte-order mark is ignored. Any JSON value may be
// at the top level. Unicode noncharacters (U+FFFF, ...) are accepted, since
// [Canonical] writes them. Nesting deeper than [MaxDepth] is rejected.
//
// Every error is a *[SyntaxError] (which wraps [ErrInvalid]) giving the line
// and column of the problem. When the input has several problems, which one
// is reported is not specified. ParseJSON is safe for concurrent use.
//
// The strings of a small input (up to 16 KiB) share one copy of it, so a
// string kept from the result keeps that copy alive.
func ParseJSON(data []byte) (any, error) {
	return parseJSON(data, MaxDepth)
}

// parseJSON is [ParseJSON] with a limit on nesting: [DecodeNode] allows one
// level more than a payload may have, for the node's envelope.
func parseJSON(data []byte, maxDepth int) (any, error) {
	p := parserPool.Get().(*parser)
	p.maxDepth = maxDepth
	v, err := p.parse(data)
	p.release()
	return v, err
}

// parser is a recursive-descent I-JSON parser. Its scratch stacks (vals,
// members, buf) are reused across calls through parserPool, so parsing
// allocates only the values it returns.
type parser struct {
	data     []byte
	pos      int
	depth    int
	maxDepth int      // the deepest nesting accepted
	vals     []any    // array elements being collected, innermost last
	members  []member // object members being collected, innermost last
	buf      []byte   // unescaped string being built
	text     string   // a copy of data that strings without escapes slice, if small
}

type member struct {
	key string
	val any
	off int // offset of the key's opening quote, for the duplicate-key error
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

// maxSharedText is the largest input whose strings share one copy of it:
// one allocation instead of one per string, at the cost of a string kept
// from the result keeping up to this much memory alive.
const maxSharedText = 16 << 10

// maxPooledScratch bounds the scratch a pooled parser keeps, so one huge
// document does not pin its memory.
const maxPooledScratch = 1 << 16

func (p *parser) release() {
	// Entries beyond the lengths were cleared as they were popped; a
	// failed parse leaves entries below them.
	clear(p.vals)
	clear(p.members)
	p.vals, p.members, p.buf = p.vals[:0], p.members[:0], p.buf[:0]
	if cap(p.vals) > maxPooledScratch || cap(p.members) > maxPooledScratch || cap(p.buf) > maxPooledScratch {
		return
	}
	p.data, p.text = nil, ""
	parserPool.Put(p)
}

func (p *parser) parse(data []byte) (any, error) {
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		data = data[3:]
	}
	p.data, p.pos, p.depth = data, 0, 0
	if len(data) <= maxSharedText {
		p.text = string(data)
	}
	p.skipSpace()
	if p.pos == len(p.data) {
		return nil, p.errAt(p.pos, "empty input")
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errExpected(p.pos, "end of input after the value")
	}
	return v, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at p.pos, which is not whitespace.
func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errExpected(p.pos, "a value")
	}
	switch c := p.data[p.pos]; {
	case c == '"':
		return p.string()
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return p.literal()
	}
	return nil, p.errExpected(p.pos, "a value")
}

func (p *parser) literal() (any, error) {
	start := p.pos
	end := start
	for end < len(p.data) && isWordByte(p.data[end]) {
		end++
	}
	word := p.data[start:end]
	p.pos = end
	switch string(word) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	return nil, p.errAt(start, fmt.Sprintf("invalid literal %q", clip(word)))
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isNumberByte(c byte) bool {
	return isWordByte(c) || c == '.' || c == '+' || c == '-'
}

// number parses a number by the RFC 8259 grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (p *parser) number() (any, error) {
	data := p.data
	start := p.pos
	i := start
	neg := false
	if data[i] == '-' {
		neg = true
		i++
	}
	digits := i
	switch {
	case i < len(data) && data[i] == '0':
		i++
		if i < len(data) && data[i] >= '0' && data[i] <= '9' {
			return nil, p.badNumber(start, " (leading zero)")
		}
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return nil, p.badNumber(start, "")
	}
	intEnd := i
	simple := true
	if i < len(data) && data[i] == '.' {
		simple = false
		i++
		d := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == d {
			return nil, p.badNumber(start, "")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		simple = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		d := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == d {
			return nil, p.badNumber(start, "")
		}
	}
	if i < len(data) && isNumberByte(data[i]) {
		return nil, p.badNumber(start, "")
	}
	p.pos = i
	if simple && intEnd-digits <= 15 {
		// Exact: fewer than 2^53.
		var n int64
		for _, c := range data[digits:intEnd] {
			n = n*10 + int64(c-'0')
		}
		f := float64(n)
		if neg {
			f = -f
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(data[start:i]), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, p.errAt(start, "number "+string(clip(data[start:i]))+" overflows a double")
	}
	return f, nil
}

func (p *parser) badNumber(start int, why string) error {
	end := start
	for end < len(p.data) && isNumberByte(p.data[end]) {
		end++
	}
	return p.errAt(start, fmt.Sprintf("invalid number %q%s", clip(p.data[start:end]), why))
}

// strPlain[c] reports whether byte c may appear in a string unescaped
// without further thought: not a quote, backslash, control or non-ASCII.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// string parses the string at p.pos (an opening quote).
func (p *parser) string() (string, error) {
	data := p.data
	start := p.pos + 1
	i := start
	ascii := true
	for {
		for i < len(data) && strPlain[data[i]] {
			i++
		}
		if i >= len(data) {
			return "", p.errAt(start-1, "unterminated string")
		}
		switch c := data[i]; {
		case c == '"':
			if !ascii {
				if err := p.checkUTF8(start, i); err != nil {
					return "", err
				}
			}
			p.pos = i + 1
			if p.text != "" {
				return p.text[start:i], nil
			}
			return string(data[start:i]), nil
		case c == '\\':
			return p.escapedString(start, i, ascii)
		case c < 0x20:
			return "", p.errAt(i, fmt.Sprintf("control character U+%04X in string", c))
		default:
			ascii = false
			i++
		}
	}
}

// escapedString continues parsing a string that starts at start (after the
// quote) and has its first backslash at i.
func (p *parser) escapedString(start, i int, ascii bool) (string, error) {
	data := p.data
	if !ascii {
		if err := p.checkUTF8(start, i); err != nil {
			return "", err
		}
	}
	buf := append(p.buf[:0], data[start:i]...)
	for {
		// data[i] is a backslash.
		if i+1 >= len(data) {
			return "", p.errAt(start-1, "unterminated string")
		}
		switch c := data[i+1]; c {
		case '"', '\\', '/':
			buf = append(buf, c)
			i += 2
		case 'b':
			buf = append(buf, '\b')
			i += 2
		case 'f':
			buf = append(buf, '\f')
			i += 2
		case 'n':
			buf = append(buf, '\n')
			i += 2
		case 'r':
			buf = append(buf, '\r')
			i += 2
		case 't':
			buf = append(buf, '\t')
			i += 2
		case 'u':
			r, ok := hex4(data, i+2)
			if !ok {
				return "", p.badEscape(i)
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return "", p.errAt(i, fmt.Sprintf(`lone surrogate \u%04x`, r))
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), false
				if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
					lo, ok = hex4(data, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return "", p.errAt(i, fmt.Sprintf(`lone surrogate \u%04x`, r))
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			buf = utf8.AppendRune(buf, r)
			i += 6
		default:
			return "", p.badEscape(i)
		}
		// Copy the run up to the next backslash or the closing quote.
		run := i
		runASCII := true
		for {
			for i < len(data) && strPlain[data[i]] {
				i++
			}
			if i >= len(data) {
				p.buf = buf
				return "", p.errAt(start-1, "unterminated string")
			}
			c := data[i]
			if c == '"' || c == '\\' {
				break
			}
			if c < 0x20 {
				p.buf = buf
				return "", p.errAt(i, fmt.Sprintf("control character U+%04X in string", c))
			}
			runASCII = false
			i++
		}
		if !runASCII {
			if err := p.checkUTF8(run, i); err != nil {
				p.buf = buf
				return "", err
			}
		}
		buf = append(buf, data[run:i]...)
		if data[i] == '"' {
			p.pos = i + 1
			p.buf = buf
			return string(buf), nil
		}
	}
}

// hex4 decodes the four hex digits at data[i:i+4].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// badEscape reports the invalid escape sequence at data[i] (a backslash
// followed by at least one byte).
func (p *parser) badEscape(i int) error {
	data := p.data
	if data[i+1] == 'u' {
		end := i + 2
		for end < i+6 && end < len(data) && strPlain[data[end]] {
			end++
		}
		return p.errAt(i, "invalid escape "+string(data[i:end]))
	}
	r, size := utf8.DecodeRune(data[i+1:])
	switch {
	case r == utf8.RuneError && size == 1:
		return p.errAt(i, fmt.Sprintf("invalid escape: backslash before invalid UTF-8 byte 0x%02x", data[i+1]))
	case r < 0x20:
		return p.errAt(i, fmt.Sprintf("invalid escape: backslash before control character U+%04X", r))
	}
	return p.errAt(i, "invalid escape \\"+string(r))
}

// checkUTF8 reports the first invalid UTF-8 byte in data[start:end].
func (p *parser) checkUTF8(start, end int) error {
	s := p.data[start:end]
	if utf8.Valid(s) {
		return nil
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			return p.errAt(start+i, fmt.Sprintf("invalid UTF-8 byte 0x%02x in string", s[i]))
		}
		i += size
	}
	return nil // unreachable: utf8.Valid said otherwise
}

func (p *parser) object() (any, error) {
	open := p.pos
	if p.depth++; p.depth > p.maxDepth {
		return nil, p.errAt(open, "nesting deeper than "+strconv.Itoa(p.maxDepth)+" levels")
	}
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return map[string]any{}, nil
	}
	base := len(p.members)
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errExpected(p.pos, "a string key")
		}
		keyOff := p.pos
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errExpected(p.pos, "':' after object key")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		p.members = append(p.members, member{key, val, keyOff})
		if done, err := p.separator('}', "object member"); err != nil {
			return nil, err
		} else if done {
			break
		}
	}
	ms := p.members[base:]
	m := make(map[string]any, len(ms))
	for i := range ms {
		m[ms[i].key] = ms[i].val
		if len(m) != i+1 {
			return nil, p.errAt(ms[i].off, "duplicate key "+strconv.Quote(ms[i].key))
		}
	}
	clear(ms)
	p.members = p.members[:base]
	p.depth--
	return m, nil
}

// separator reads what follows a member or element: a ',' (then more must
// come) or the closing byte (done). A trailing comma, or anything else, is
// an error naming what came before.
func (p *parser) separator(closing byte, after string) (done bool, err error) {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ',' {
		comma := p.pos
		p.pos++
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == closing {
			return false, p.errAt(comma, "trailing comma before '"+string(closing)+"'")
		}
		return false, nil
	}
	if p.pos < len(p.data) && p.data[p.pos] == closing {
		p.pos++
		return true, nil
	}
	return false, p.errExpected(p.pos, "',' or '"+string(closing)+"' after "+after)
}

func (p *parser) array() (any, error) {
	open := p.pos
	if p.depth++; p.depth > p.maxDepth {
		return nil, p.errAt(open, "nesting deeper than "+strconv.Itoa(p.maxDepth)+" levels")
	}
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return []any{}, nil
	}
	base := len(p.vals)
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.vals = append(p.vals, v)
		if done, err := p.separator(']', "array element"); err != nil {
			return nil, err
		} else if done {
			break
		}
	}
	a := make([]any, len(p.vals)-base)
	copy(a, p.vals[base:])
	clear(p.vals[base:])
	p.vals = p.vals[:base]
	p.depth--
	return a, nil
}

// errExpected reports that what was expected at off and something else was
// found there.
func (p *parser) errExpected(off int, what string) error {
	data := p.data
	if off < len(data) && data[off] == '/' && off+1 < len(data) && (data[off+1] == '/' || data[off+1] == '*') {
		return p.errAt(off, "comments are not allowed")
	}
	return p.errAt(off, "expected "+what+", found "+describeByte(data, off))
}

// describeByte names the character at data[off] for an error message.
func describeByte(data []byte, off int) string {
	if off >= len(data) {
		return "end of input"
	}
	r, size := utf8.DecodeRune(data[off:])
	if r == utf8.RuneError && size == 1 {
		return fmt.Sprintf("invalid UTF-8 byte 0x%02x", data[off])
	}
	return strconv.QuoteRune(r)
}

// errAt returns a *SyntaxError for the byte offset off of p.data.
func (p *parser) errAt(off int, msg string) error {
	line, col := position(p.data, off)
	return &SyntaxError{Line: line, Column: col, Msg: msg}
}

// position returns the 1-based line and column (in code points) of the byte
// offset off of data. Lines end at "\n".
func position(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	line, lineStart := 1, 0
	for i, c := range data[:off] {
		if c == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, 1 + utf8.RuneCount(data[lineStart:off])
}

// clip shortens a token quoted in an error message.
func clip(b []byte) []byte {
	const max = 40
	if len(b) <= max {
		return b
	}
	return append(b[:max:max], "..."...)
}
