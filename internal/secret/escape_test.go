package secret_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/uncaged/uwf/internal/secret"
)

// TestMaskerEscaped: a secret a tool wrote JSON- or Go-escaped (any
// character as \uXXXX in either case, a surrogate pair, \/, \xHH,
// \UXXXXXXXX, escaped again inside a JSON string up to three levels) is
// masked, its whole escaped text replaced and the text around it kept as
// written; escaped text holding no secret, and broken escapes, are left
// as they are.
func TestMaskerEscaped(t *testing.T) {
	const key = "sk-ant-abc123456"
	for _, tc := range []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"one character", []string{key}, `{"k":"sk-\u0061nt-abc123456"}`, `{"k":"********"}`},
		{"upper-case hex", []string{key}, `{"k":"\u0073K-ant-abc123456"}`, `{"k":"\u0073K-ant-abc123456"}`},
		{"upper-case hex digits", []string{"SK-ANT-ABC12345"}, `"\u0053\u004B-ANT-ABC12345"`, `"********"`},
		{"every character", []string{"hunter22x"}, `"\u0068\u0075\u006e\u0074\u0065\u0072\u0032\u0032\u0078"`, `"********"`},
		{"escaped slash", []string{"p@ss/w0rd:xyz"}, `{"pw":"p@ss\/w0rd:xyz"}`, `{"pw":"********"}`},
		{"escaped slash and a \\u", []string{"a/b/c/d/e/f"}, `"a\/b\u002fc\/d/e\/f"`, `"********"`},
		{"surrogate pair", []string{"key\U0001F511-0123456"}, `"key\ud83d\udd11-0123456"`, `"********"`},
		{"surrogate pair, upper case", []string{"key\U0001F511-0123456"}, `"key\uD83D\uDD11-0123456"`, `"********"`},
		{"Go \\x", []string{key}, `msg="sk-\x61nt-abc123456"`, `msg="********"`},
		{"Go \\U", []string{key}, `msg="sk-\U00000061nt-abc123456"`, `msg="********"`},
		{"escaped twice", []string{key}, `"{\"k\":\"sk-\\u0061nt-abc123456\"}"`, `"{\"k\":\"********\"}"`},
		{"escaped three times", []string{key}, `"sk-\\\\u0061nt-abc123456"`, `"********"`},
		{"a quote in the secret, escaped twice", []string{`pa"ss-word1`}, `"{\"p\":\"pa\\\"ss-word1\"}"`, `"{\"p\":\"********\"}"`},
		{"the text around kept as written", []string{key}, `a\nb sk-\u0061nt-abc123456 c\td \u00e9`, `a\nb ******** c\td \u00e9`},
		{"two secrets, one escaped", []string{key, "hunter22x"}, `hunter22x \u0073k-ant-abc123456 hunter22x`, `******** ******** ********`},
		{"overlapping secrets", []string{"abcdefgh12", "gh12345678"}, `\u0061bcdefgh12345678`, `********`},
		{"no secret in escaped text", []string{key}, `"line\nnext \u00e9 \/ \\"`, `"line\nnext \u00e9 \/ \\"`},
		{"an escaped backslash, then an escape of the next level", []string{key}, `sk-\\u0061nt-abc123456`, `********`},
		{"broken escapes kept", []string{key}, `\q \u12 \x4 \U0011 \`, `\q \u12 \x4 \U0011 \`},
		{"lone surrogate", []string{key}, `\ud83d sk-\u0061nt-abc123456 \udd11`, `\ud83d ******** \udd11`},
		{"a secret beyond the levels", []string{key}, `sk-\\\\\\\\u0061nt-abc123456`, `sk-\\\\\\\\u0061nt-abc123456`},
		{"an escaped form of a percent-encoded secret", []string{"p@ss:w/rd"}, `postgres://u:p\u002540ss%3Aw%2Frd@h`, `postgres://u:********@h`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := secret.New(tc.secrets...)
			if got := m.String(tc.in); got != tc.want {
				t.Errorf("String(%s) with %q =\n%s\nwant\n%s", tc.in, tc.secrets, got, tc.want)
			}
			err := m.Error(fmt.Errorf("tool failed: %s", tc.in))
			if want := "tool failed: " + tc.want; err.Error() != want {
				t.Errorf("Error = %s, want %s", err, want)
			}
		})
	}
}

// escapeJSON writes s as JSON string content, escaping the characters
// JSON requires and, by the bits of pattern (cycled), others: as \uXXXX
// (upper-case hex on the next bit), a rune beyond the BMP as a surrogate
// pair, "/" as \/.
func escapeJSON(s string, pattern uint64) string {
	var b strings.Builder
	bit := 0
	next := func() bool {
		v := pattern>>(bit%64)&1 == 1
		bit++
		return v
	}
	u := func(r rune, upper bool) {
		if upper {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	for _, r := range s {
		esc, upper := next(), next()
		switch {
		case r == '/' && esc && upper:
			b.WriteString(`\/`)
		case r > 0xFFFF && esc:
			r1, r2 := utf16.EncodeRune(r)
			u(r1, upper)
			u(r2, upper)
		case esc || r < 0x20 || r == '"' || r == '\\':
			u(r, upper)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzMaskerEscaped: a secret escaped any way JSON allows (some of its
// characters as \uXXXX, surrogate pairs, \/), between any JSON string
// content, escaped again as a JSON string levels-1 times (up to three
// levels), is masked: decoded by encoding/json as many times, the masked
// text is still a valid JSON string and does not hold the secret.
func FuzzMaskerEscaped(f *testing.F) {
	f.Add("sk-ant-abc123456", "key: ", " rest", uint64(0b10), uint8(1))
	f.Add("p@ss/w0rd:xyz", `{"a":`, `}`, uint64(0xffff), uint8(2))
	f.Add("key\U0001F511-0123456", "", "", uint64(0xaaaa), uint8(3))
	f.Add("hunter22x", `\`, `\u00`, uint64(1), uint8(1))
	f.Fuzz(func(t *testing.T, sec, before, after string, pattern uint64, levels uint8) {
		if len(sec) < secret.MinLen || !utf8.ValidString(sec) || !utf8.ValidString(before) || !utf8.ValidString(after) || strings.ContainsRune(sec, '*') || strings.ContainsRune(sec, utf8.RuneError) {
			return
		}
		levels = 1 + levels%3
		text := escapeJSON(before, pattern) + escapeJSON(sec, pattern>>1|pattern<<63) + escapeJSON(after, pattern)
		for range levels - 1 {
			b, _ := json.Marshal(text)
			text = string(b[1 : len(b)-1])
		}
		got := secret.New(sec).String(text)
		dec := got
		for l := range levels {
			var s string
			if err := json.Unmarshal([]byte(`"`+dec+`"`), &s); err != nil {
				t.Fatalf("masked text %q (of %q) is not a JSON string at level %d: %v", got, text, l+1, err)
			}
			dec = s
			if strings.Contains(dec, sec) {
				t.Fatalf("String(%q) with secret %q = %q: decoded %d times, %q holds the secret", text, sec, got, l+1, dec)
			}
		}
	})
}

// TestMaskerTrimCutEscaped: at a cut, the part of a secret left there
// escaped (one level), the escape at the cut perhaps cut short itself, is
// dropped, and no more; escaped text that begins or ends no secret is
// kept.
func TestMaskerTrimCutEscaped(t *testing.T) {
	const sec = "sk-ant-abc123456"
	for _, tc := range []struct {
		name       string
		in         string
		end, start string // what TrimCutEnd and TrimCutStart keep
	}{
		{"an escaped start at the end", `{"k":"sk-\u0061nt`, `{"k":"`, `{"k":"sk-\u0061nt`},
		{"an escape cut short at the end", `{"k":"sk-\u00`, `{"k":"`, `{"k":"sk-\u00`},
		{"the first character escaped, cut short", `{"k":"\u007`, `{"k":"`, `{"k":"\u007`},
		{"a backslash alone at the end", `{"k":"sk-\`, `{"k":"`, `{"k":"sk-\`},
		{"an escaped end at the start", `\u0063123456"} more`, `\u0063123456"} more`, `"} more`},
		{"the rest of an escape at the start", `0063123456"} more`, `0063123456"} more`, `"} more`},
		{"the rest of an upper-case escape at the start", `2D\u0061bc123456", x`, `2D\u0061bc123456", x`, `", x`},
		{"an escaped slash", `"a\/b\/`, `"`, `"a\/b\/`},
		{"an escape of no secret at the end", `text \u00e9\u01`, `text \u00e9\u01`, `text \u00e9\u01`},
		{"an escape cut short that may begin a secret", `text \u00`, `text `, `text \u00`},
		{"an escaped backslash before the cut", `x \\`, `x \\`, `x \\`},
		{"the rest of an escape of another character", `0064123456"`, `0064123456"`, `0064123456"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := secret.New(sec, "a/b/c/d/e/f")
			if got, _ := m.TrimCutEnd(tc.in); got != tc.end {
				t.Errorf("TrimCutEnd(%s) = %s, want %s", tc.in, got, tc.end)
			}
			if got, _ := m.TrimCutStart(tc.in); got != tc.start {
				t.Errorf("TrimCutStart(%s) = %s, want %s", tc.in, got, tc.start)
			}
		})
	}
}

// FuzzMaskerTrimCutEscaped: text holding a secret escaped any way JSON
// allows, cut anywhere inside the secret's escaped text, loses at the cut
// at least the part of that text it kept.
func FuzzMaskerTrimCutEscaped(f *testing.F) {
	f.Add("sk-ant-abc123456", "key: ", " rest", uint64(0b10), 10)
	f.Add("p@ss/w0rd:xyz", `{"a":`, `}`, uint64(0xffff), 3)
	f.Add("key\U0001F511-0123456", "", "", uint64(0xaaaa), 7)
	f.Fuzz(func(t *testing.T, sec, before, after string, pattern uint64, at int) {
		if len(sec) < secret.MinLen || !utf8.ValidString(sec) || !utf8.ValidString(before) || !utf8.ValidString(after) {
			return
		}
		m := secret.New(sec)
		b, esc, a := escapeJSON(before, pattern), escapeJSON(sec, pattern>>1|pattern<<63), escapeJSON(after, pattern)
		text := b + esc + a
		in := 1 + abs(at)%(len(esc)-1) // bytes of the escaped secret before the cut
		at = len(b) + in
		if _, n := m.TrimCutEnd(text[:at]); n < in {
			t.Errorf("cut %q at %d: TrimCutEnd dropped %d bytes, want at least %d", text, at, n, in)
		}
		if _, n := m.TrimCutStart(text[at:]); n < len(esc)-in {
			t.Errorf("cut %q at %d: TrimCutStart dropped %d bytes, want at least %d", text, at, n, len(esc)-in)
		}
	})
}
