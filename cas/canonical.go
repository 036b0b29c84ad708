package cas

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) encoding
// of v: object keys sorted by their UTF-16 code units, no insignificant
// whitespace, no trailing newline, numbers in ECMAScript shortest form
// (Number.prototype.toString: 1e+21, 1e-7, 0.000001, -0 as 0), strings with
// minimal escaping (only " \ and control characters below U+0020 are
// escaped: \b \t \n \f \r by name, the others as lowercase \u00xx;
// U+2028, U+2029, DEL, "/" and all other characters are written raw).
// The caller owns the returned slice.
//
// v holds plain values as [ParseJSON] returns them: nil, bool, float64,
// string, []any, map[string]any. For convenience it also accepts, at any
// depth of a []any or map[string]any:
//   - [Hash], written as its text form;
//   - int, int8..int64, uint, uint8..uint64, uintptr, converted to float64
//     (so integers beyond 2^53 are rounded, as JSON numbers are);
//   - float32, as the shortest decimal that round-trips it (as
//     encoding/json writes it), read as a float64;
//   - []string, []Hash, map[string]string;
//   - json.RawMessage and json.Number, parsed with [ParseJSON] (a
//     json.Number must be a number);
//   - a [json.Marshaler], its output parsed with [ParseJSON];
//   - an [encoding.TextMarshaler], as the string it marshals to;
//   - anything else (structs, pointers, other slices and maps) as
//     encoding/json would encode it: marshalled, then parsed with ParseJSON.
//
// Nil slices, nil maps and nil pointers are written as null, as
// encoding/json writes them.
//
// Errors wrap [ErrInvalid] and name the path to the bad value (a JSON
// Pointer, e.g. "/payload/steps/3"): a NaN or infinite number, a string
// (or key) that is not valid UTF-8 (for values encoded through
// encoding/json: one that encoding/json had to repair), nesting deeper than
// [MaxDepth] (which includes cycles), and an unsupported value: a func, a
// chan, a complex number, a map whose keys are neither strings nor
// TextMarshalers, or anything encoding/json refuses. Values reached through
// an interface inside a struct are checked by encoding/json's rules only.
// Canonical is safe for concurrent use (v must not be modified meanwhile).
func Canonical(v any) ([]byte, error) {
	b := bufPool.Get().(*[]byte)
	out, err := AppendCanonical((*b)[:0], v)
	var res []byte
	if err == nil {
		res = make([]byte, len(out))
		copy(res, out)
	}
	if cap(out) <= maxPooledScratch {
		*b = out[:0]
		bufPool.Put(b)
	}
	return res, err
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// AppendCanonical appends the canonical encoding of v to dst and returns
// the extended slice, with the rules and errors of [Canonical]. On error it
// returns dst unchanged (bytes beyond its length may have been written).
// For plain values it does not allocate beyond growing dst.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	e := encPool.Get().(*encoder)
	out, err := e.value(dst, v, 0)
	encPool.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// encoder holds the scratch space for sorting object members; it is reused
// through encPool.
type encoder struct {
	members []kv // members of the objects being written, innermost last
}

type kv struct {
	key string
	val any
}

var encPool = sync.Pool{New: func() any { return new(encoder) }}

func (e *encoder) value(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, x)
	case float64:
		return appendNumber(dst, x)
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		base := len(e.members)
		for k, v := range x {
			e.members = append(e.members, kv{k, v})
		}
		return e.object(dst, base, depth)
	case []any:
		return appendArray(dst, x, depth, func(dst []byte, v any) ([]byte, error) { return e.value(dst, v, depth+1) })
	case Hash:
		return append(x.AppendText(append(dst, '"')), '"'), nil
	case []string:
		return appendArray(dst, x, depth, appendString)
	case []Hash:
		return appendArray(dst, x, depth, func(dst []byte, h Hash) ([]byte, error) {
			return append(h.AppendText(append(dst, '"')), '"'), nil
		})
	case map[string]string:
		if x == nil {
			return append(dst, "null"...), nil
		}
		base := len(e.members)
		for k, v := range x {
			e.members = append(e.members, kv{k, v})
		}
		return e.object(dst, base, depth)
	case int:
		return appendNumber(dst, float64(x))
	case int64:
		return appendNumber(dst, float64(x))
	case int32:
		return appendNumber(dst, float64(x))
	case int16:
		return appendNumber(dst, float64(x))
	case int8:
		return appendNumber(dst, float64(x))
	case uint:
		return appendNumber(dst, float64(x))
	case uint64:
		return appendNumber(dst, float64(x))
	case uint32:
		return appendNumber(dst, float64(x))
	case uint16:
		return appendNumber(dst, float64(x))
	case uint8:
		return appendNumber(dst, float64(x))
	case uintptr:
		return appendNumber(dst, float64(x))
	case float32:
		f, err := float32Value(x)
		if err != nil {
			return dst, err
		}
		return appendNumber(dst, f)
	}
	pv, err := convertOther(v)
	if err != nil {
		return dst, err
	}
	return e.value(dst, pv, depth)
}

func compareMembers(a, b kv) int { return compareUTF16(a.key, b.key) }

// compareUTF16 compares two strings (valid UTF-8) by their UTF-16 code
// units, as RFC 8785 sorts keys. UTF-8 byte order is code point order, and
// UTF-16 order differs from it only between a character in U+E000..U+FFFF
// (UTF-8 lead byte 0xEE or 0xEF) and one above U+FFFF (lead byte 0xF0 and
// up, a surrogate pair 0xD800.. in UTF-16, which sorts first). At the first
// differing byte both strings are at the same offset in the same
// character; if that byte is a continuation byte, both characters share a
// lead byte, so they are in the same range and byte order holds.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	ca, cb := a[i], b[i]
	if ca >= 0xF0 && (cb == 0xEE || cb == 0xEF) {
		return -1
	}
	if cb >= 0xF0 && (ca == 0xEE || ca == 0xEF) {
		return 1
	}
	return int(ca) - int(cb)
}

const hexDigits = "0123456789abcdef"

// strSafe[c] reports whether the ASCII byte c is written unescaped.
var strSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string with RFC 8785's minimal escaping,
// checking in the same pass that s is valid UTF-8.
func appendString(dst []byte, s string) ([]byte, error) {
	n := len(dst)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return dst[:n], invalidString(s)
			}
			i += size
			continue
		}
		if strSafe[c] {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

// appendNumber appends f as ECMAScript's Number::toString writes it
// (ECMA-262, 6th edition, 7.1.12.1), which RFC 8785 requires.
func appendNumber(dst []byte, f float64) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return dst, &valueError{msg: "NaN is not a JSON number"}
	case math.IsInf(f, 0):
		return dst, &valueError{msg: "infinity is not a JSON number"}
	case f == 0: // and -0
		return append(dst, '0'), nil
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		// Every integer below 2^53 is its own shortest representation.
		return strconv.AppendInt(dst, int64(f), 10), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits: "d.ddde±x" or "de±x".
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [24]byte
	k := 0
	i := 0
	for ; b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[k] = b[i]
			k++
		}
	}
	exp := 0
	expNeg := b[i+1] == '-'
	for _, c := range b[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if expNeg {
		exp = -exp
	}
	// f = 0.d1d2...dk × 10^n
	n := exp + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// float32Value returns the float64 nearest to the shortest decimal that
// round-trips x, which is what encoding/json writes for a float32.
func float32Value(x float32) (float64, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		_, err := appendNumber(nil, f)
		return 0, err
	}
	var buf [32]byte
	f, _ = strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], f, 'g', -1, 32)), 64)
	return f, nil
}

// object writes the members e.members[base:] as a JSON object, sorted by
// key (UTF-16 code units), and drops them from e.members.
func (e *encoder) object(dst []byte, base, depth int) ([]byte, error) {
	ms := e.members[base:]
	defer func() {
		clear(ms)
		e.members = e.members[:base]
	}()
	if depth >= MaxDepth {
		return dst, errTooDeep()
	}
	slices.SortFunc(ms, compareMembers)
	dst = append(dst, '{')
	for i := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendString(dst, ms[i].key); err != nil {
			return dst, atKey(err, ms[i].key)
		}
		dst = append(dst, ':')
		if dst, err = e.value(dst, ms[i].val, depth+1); err != nil {
			return dst, atKey(err, ms[i].key)
		}
	}
	return append(dst, '}'), nil
}

// appendArray writes xs as a JSON array, each element with elem; a nil
// slice is null.
func appendArray[T any](dst []byte, xs []T, depth int, elem func([]byte, T) ([]byte, error)) ([]byte, error) {
	if xs == nil {
		return append(dst, "null"...), nil
	}
	if depth >= MaxDepth {
		return dst, errTooDeep()
	}
	dst = append(dst, '[')
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = elem(dst, x); err != nil {
			return dst, atIndex(err, i)
		}
	}
	return append(dst, ']'), nil
}
