package secret

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Escaped secrets. A tool that writes JSON may escape any character of a
// string (`\u0041` for "A", `\/` for "/", a rune outside the BMP as a
// surrogate pair), and a string holding JSON escapes its escapes again
// (`\\u0041`), so no list of forms covers every way a secret can be
// written. Text with a backslash is therefore also decoded, up to
// [escapeLevels] times, each pass undoing one level of JSON escapes (and
// of Go's: `\xHH`, `\UXXXXXXXX`, `\a`, `\v`, `\'`); a known secret (any
// form) found in a decoded text is masked where its escaped text lies in
// the original, whole escapes at a time. Text without a backslash costs
// one scan for it; text whose escapes all decode to bytes no secret holds
// (the \n and \" of most JSON), one parse of its escapes.

// escapeLevels is how many levels of escaping are undone.
const escapeLevels = 3

// unescape decodes one level of backslash escapes in s. changed is false
// if s holds none (d is then s). With spans, start[i] and end[i] are the
// bytes s[start[i]:end[i]] that decoded byte i came from (the whole escape
// for each byte of a decoded rune). An escape that is not one (a
// backslash before another character, a \u with fewer than four hex
// digits) is kept as written; a lone surrogate decodes to U+FFFD, as
// encoding/json decodes it.
func unescape(s string, spans bool) (d string, start, end []int, changed bool) {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s, nil, nil, false
	}
	buf := make([]byte, 0, len(s))
	if spans {
		start, end = make([]int, 0, len(s)), make([]int, 0, len(s))
	}
	emit := func(b []byte, from, to int) {
		buf = append(buf, b...)
		if spans {
			for range b {
				start, end = append(start, from), append(end, to)
			}
		}
	}
	lit := func(from, to int) { // s[from:to] as written
		buf = append(buf, s[from:to]...)
		if spans {
			for k := from; k < to; k++ {
				start, end = append(start, k), append(end, k+1)
			}
		}
	}
	lit(0, i)
	var rb [utf8.UTFMax]byte
	for i < len(s) {
		j := strings.IndexByte(s[i:], '\\')
		if j < 0 {
			lit(i, len(s))
			break
		}
		lit(i, i+j)
		i += j
		n, r, b, ok := escapeAt(s, i)
		switch {
		case !ok:
			lit(i, i+1)
			i++
			continue
		case r >= 0:
			emit(utf8.AppendRune(rb[:0], r), i, i+n)
		default:
			emit([]byte{b}, i, i+n)
		}
		changed = true
		i += n
	}
	return string(buf), start, end, changed
}

// escapeAt decodes the escape at s[i] (a backslash): its length, and the
// rune it stands for (r >= 0) or the byte (r < 0: \xHH); ok is false if
// it is not an escape.
func escapeAt(s string, i int) (n int, r rune, b byte, ok bool) {
	if i+1 >= len(s) {
		return 0, 0, 0, false
	}
	switch c := s[i+1]; c {
	case '"', '\\', '/', '\'':
		return 2, rune(c), 0, true
	case 'b':
		return 2, '\b', 0, true
	case 'f':
		return 2, '\f', 0, true
	case 'n':
		return 2, '\n', 0, true
	case 'r':
		return 2, '\r', 0, true
	case 't':
		return 2, '\t', 0, true
	case 'a':
		return 2, '\a', 0, true
	case 'v':
		return 2, '\v', 0, true
	case 'x':
		if v, ok := hexAt(s, i+2, 2); ok {
			return 4, -1, byte(v), true
		}
	case 'U':
		if v, ok := hexAt(s, i+2, 8); ok && v <= utf8.MaxRune {
			return 10, rune(v), 0, true
		}
	case 'u':
		v, ok := hexAt(s, i+2, 4)
		if !ok {
			return 0, 0, 0, false
		}
		r := rune(v)
		if utf16.IsSurrogate(r) {
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if v2, ok := hexAt(s, i+8, 4); ok {
					if p := utf16.DecodeRune(r, rune(v2)); p != utf8.RuneError {
						return 12, p, 0, true
					}
				}
			}
			return 6, utf8.RuneError, 0, true
		}
		return 6, r, 0, true
	}
	return 0, 0, 0, false
}

// hexAt reads n hex digits at s[i:].
func hexAt(s string, i, n int) (uint32, bool) {
	if i+n > len(s) {
		return 0, false
	}
	var v uint32
	for _, c := range []byte(s[i : i+n]) {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(d)
	}
	return v, true
}

// indexAll yields the index of every occurrence of v in s, overlapping
// ones included.
func indexAll(s, v string) iter.Seq[int] {
	return func(yield func(int) bool) {
		for from := 0; ; {
			k := strings.Index(s[from:], v)
			if k < 0 || !yield(from+k) {
				return
			}
			from += k + 1
		}
	}
}

// escaped is what masking escaped text needs of a Masker's secrets.
type escaped struct {
	forms  []string  // every form of every secret
	bytes  [256]bool // the bytes of the forms
	astral bool      // a form holds a rune beyond the BMP (a surrogate pair's)
}

func newEscaped(forms []string) *escaped {
	e := &escaped{forms: slices.Clone(forms)}
	for _, f := range forms {
		for _, c := range []byte(f) {
			e.bytes[c] = true
			e.astral = e.astral || c >= 0xF0
		}
	}
	return e
}

// mayHide reports whether an escape in s may be part of a secret: it
// decodes to a byte of a secret's form, or to a backslash that, with the
// text after it, is such an escape a level down. When none is, decoding s
// can show no secret that is not already in s as written.
func (e *escaped) mayHide(s string) bool {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		n, ok := e.hides(s, i, 1)
		if ok {
			return true
		}
		i += max(n, 1)
	}
}

// hides reports whether the escape at s[i] (its length n, 0 if none)
// decodes to a byte of a form, or to a backslash beginning such an escape
// at the next level, up to [escapeLevels].
func (e *escaped) hides(s string, i, level int) (n int, ok bool) {
	n, r, b, ok := escapeAt(s, i)
	if !ok {
		return 0, false
	}
	var buf [utf8.UTFMax]byte
	dec := []byte{b}
	if r >= 0 {
		dec = utf8.AppendRune(buf[:0], r)
	}
	for _, c := range dec {
		if e.bytes[c] {
			return n, true
		}
	}
	if r == utf8.RuneError && e.astral {
		// A surrogate whose pair lies a level down.
		return n, true
	}
	if len(dec) == 1 && dec[0] == '\\' && level < escapeLevels {
		next := "\\" + s[i+n:min(len(s), i+n+12)]
		_, ok := e.hides(next, 0, level+1)
		return n, ok
	}
	return n, false
}

// containsAny reports whether s contains one of values.
func containsAny(s string, values []string) bool {
	for _, v := range values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// mask masks in s the known secrets (all their forms) that appear in it
// or once its escapes are decoded (see the top of this file); ok is false,
// and s is not masked, if s holds no secret either way. Where matches
// overlap, their union is masked.
func (e *escaped) mask(s string) (masked string, ok bool) {
	values := e.forms
	if len(values) == 0 || strings.IndexByte(s, '\\') < 0 {
		return s, false
	}
	// First find whether s or a decoded level holds a secret at all,
	// keeping no spans: the common case, no secret, allocates one string
	// a level.
	found := containsAny(s, values)
	for cur, level := s, 0; !found && level < escapeLevels; level++ {
		d, _, _, changed := unescape(cur, false)
		if !changed {
			break
		}
		found, cur = containsAny(d, values), d
	}
	if !found {
		return s, false
	}
	// Then search s and each decoded level again, with spans composed back
	// to s. A match is widened to whole escapes of the text it was found
	// in (a form may match inside one: the digits of a \u), so that
	// masked JSON stays JSON.
	type span struct{ a, b int }
	var hits []span
	cur := s
	var start, end []int // of cur's bytes in s; nil for s itself
	for level := 0; ; level++ {
		d, ls, le, changed := unescape(cur, true)
		var unitStart, unitEnd []int // the escape holding each byte of cur
		if changed {
			unitStart, unitEnd = make([]int, len(cur)), make([]int, len(cur))
			for i := range ls {
				for k := ls[i]; k < le[i]; k++ {
					unitStart[k], unitEnd[k] = ls[i], le[i]
				}
			}
		}
		for _, v := range values {
			for k := range indexAll(cur, v) {
				a, b := k, k+len(v)
				if changed {
					a, b = unitStart[a], unitEnd[b-1]
				}
				if start != nil {
					a, b = start[a], end[b-1]
				}
				hits = append(hits, span{a, b})
			}
		}
		if !changed || level == escapeLevels {
			break
		}
		if start != nil {
			for k := range ls {
				ls[k], le[k] = start[ls[k]], end[le[k]-1]
			}
		}
		cur, start, end = d, ls, le
	}
	if len(hits) == 0 {
		return s, false
	}
	slices.SortFunc(hits, func(x, y span) int { return x.a - y.a })
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for k := 0; k < len(hits); {
		a, e := hits[k].a, hits[k].b
		for k++; k < len(hits) && hits[k].a < e; k++ {
			e = max(e, hits[k].b)
		}
		b.WriteString(s[at:a])
		b.WriteString(Mask)
		at = e
	}
	b.WriteString(s[at:])
	return b.String(), true
}

// escapeBodies returns the escapes of c as written after their backslash,
// in either case: `u00e9`, `U000000e9`, `x41` (ASCII only), a surrogate
// pair `ud83d\udd11`, a short escape (`n`, `/`, ...).
func escapeBodies(c rune) []string {
	var out []string
	if hi, lo := utf16.EncodeRune(c); hi != utf8.RuneError {
		out = append(out, fmt.Sprintf(`u%04x\u%04x`, hi, lo), fmt.Sprintf(`u%04X\u%04X`, hi, lo))
	} else {
		out = append(out, fmt.Sprintf("u%04x", c), fmt.Sprintf("u%04X", c))
	}
	out = append(out, fmt.Sprintf("U%08x", c), fmt.Sprintf("U%08X", c))
	if c < utf8.RuneSelf {
		out = append(out, fmt.Sprintf("x%02x", c), fmt.Sprintf("x%02X", c))
	}
	if short, ok := shortEscapes[c]; ok {
		out = append(out, short)
	}
	return out
}

var shortEscapes = map[rune]string{'"': `"`, '\\': `\`, '/': "/", '\'': "'", '\b': "b", '\f': "f", '\n': "n",
	'\r': "r", '\t': "t", '\a': "a", '\v': "v"}

// maxEscape is the longest escape, in bytes: a surrogate pair.
const maxEscape = 12

// spansOf decodes one level of s with spans; for s without an escape,
// the identity.
func spansOf(s string) (d string, start, end []int) {
	d, start, end, _ = unescape(s, true)
	if start == nil {
		start, end = make([]int, len(s)), make([]int, len(s))
		for k := range len(s) {
			start[k], end[k] = k, k+1
		}
	}
	return d, start, end
}

// window returns how many bytes at a cut edge may hold a secret's escaped
// text: every byte of the longest form escaped.
func (e *escaped) window() int {
	n := 0
	for _, f := range e.forms {
		n = max(n, len(f))
	}
	return maxEscape * (n + 1)
}

// cutEnd is the escape-aware part of [Masker.TrimCutEnd]: the bytes at the
// end of s that, their escapes decoded (one level), are the start of a form
// cut short, the last of them perhaps an escape itself cut short (`\u00`).
func (e *escaped) cutEnd(s string) int {
	off := max(0, len(s)-e.window())
	w := s[off:]
	if strings.IndexByte(w, '\\') < 0 {
		return 0
	}
	best := 0
	for p := 0; p < maxEscape && p <= len(w); p++ {
		if p > 0 && (w[len(w)-p] != '\\' || trailingBackslashes(w[:len(w)-p])%2 == 1) {
			continue
		}
		t, pb := w[:len(w)-p], ""
		if p > 0 {
			pb = w[len(w)-p+1:]
		}
		d, start, _ := spansOf(t)
		for i := 0; i <= len(d); i++ {
			if i > 0 && i < len(d) && start[i] == start[i-1] {
				continue
			}
			from := len(t)
			if i < len(d) {
				from = start[i]
			}
			drop := len(w) - from
			if drop <= best {
				break
			}
			if e.begins(d[i:], p > 0, pb) {
				best = drop
				break
			}
		}
	}
	return best
}

// begins reports whether x begins a form cut short: after x, with partial,
// comes the start pb of an escape of the form's next character.
func (e *escaped) begins(x string, partial bool, pb string) bool {
	for _, f := range e.forms {
		if len(x) >= len(f) || !strings.HasPrefix(f, x) {
			continue
		}
		if !partial {
			if x != "" {
				return true
			}
			continue
		}
		c, _ := utf8.DecodeRuneInString(f[len(x):])
		for _, b := range escapeBodies(c) {
			if len(pb) < len(b) && strings.HasPrefix(b, pb) {
				return true
			}
		}
	}
	return false
}

// cutStart is the escape-aware part of [Masker.TrimCutStart]: the bytes at
// the start of s that, their escapes decoded (one level), are the end of a
// form cut short, the first of them perhaps the rest of an escape cut
// short (`0041`).
func (e *escaped) cutStart(s string) int {
	w := s[:min(len(s), e.window())]
	best := 0
	for t := 0; t < maxEscape && t <= len(w); t++ {
		if t == 0 && strings.IndexByte(w, '\\') < 0 {
			continue
		}
		d, start, end := spansOf(w[t:])
		for j := len(d); j >= 0; j-- {
			if j > 0 && j < len(d) && start[j] == start[j-1] {
				continue
			}
			drop := t
			if j > 0 {
				drop += end[j-1]
			}
			if drop <= best {
				break
			}
			if e.ends(d[:j], w[:t]) {
				best = drop
				break
			}
		}
	}
	return best
}

// ends reports whether x ends a form cut short: before x, if tail is not
// empty, comes the end tail of an escape of the form's character before x.
func (e *escaped) ends(x, tail string) bool {
	for _, f := range e.forms {
		if len(x) >= len(f) || !strings.HasSuffix(f, x) {
			continue
		}
		if tail == "" {
			if x != "" {
				return true
			}
			continue
		}
		c, _ := utf8.DecodeLastRuneInString(f[:len(f)-len(x)])
		for _, b := range escapeBodies(c) {
			if strings.HasSuffix(b, tail) || strings.HasSuffix(`\`+b, tail) {
				return true
			}
		}
	}
	return false
}

// trailingBackslashes counts the backslashes that end s.
func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}
