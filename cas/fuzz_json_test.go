package cas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// checkSyntaxError fails unless err is a *SyntaxError wrapping ErrInvalid
// (with a position when needPos).
func checkSyntaxError(t *testing.T, err error, needPos bool) {
	t.Helper()
	var se *cas.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not a *SyntaxError", err, err)
	}
	if !errors.Is(err, cas.ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	if se.Msg == "" || needPos && (se.Line < 1 || se.Column < 1) {
		t.Fatalf("error %#v lacks a message or position", se)
	}
}

func FuzzParseJSON(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "jcs", "input", "*.json"))
	for _, in := range inputs {
		if data, err := os.ReadFile(in); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		``, `null`, `true`, `-0`, `1e400`, `1e-400`, `-1.5e-7`, `9007199254740993`, `0.1`,
		`"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\u0000\u001f\u007f\u2028"`, "\"\xff\"", "\xef\xbb\xbf[]",
		`{"a":1,"\u0061":2}`, `{"a":{"b":[1,2,{"c":null}]}}`, `[1,2,]`, `{"a" 1}`, `01`, `[NaN]`, `/* */1`,
		`{"` + "\U0001F600" + `":1,"` + "\uE000" + `":2}`, string(benchJSON),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := cas.ParseJSON(data)
		if err != nil {
			checkSyntaxError(t, err, true)
			return
		}
		// encoding/json, which is laxer, reads the same values.
		var std any
		if err := json.Unmarshal(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), &std); err != nil {
			t.Fatalf("ParseJSON accepted %q, encoding/json says %v", data, err)
		}
		if !reflect.DeepEqual(v, std) {
			t.Fatalf("ParseJSON(%q) = %#v, encoding/json reads %#v", data, v, std)
		}
		c1, err := cas.Canonical(v)
		if err != nil {
			t.Fatalf("Canonical(ParseJSON(%q)): %v", data, err)
		}
		v2, err := cas.ParseJSON(c1)
		if err != nil {
			t.Fatalf("ParseJSON(Canonical(x)) = %v for %q", err, c1)
		}
		c2, err := cas.Canonical(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not a fixed point:\n%q\n%q (%v)", c1, c2, err)
		}
		if tv, err := cas.ToValue(v); err != nil || !reflect.DeepEqual(tv, v) {
			t.Fatalf("ToValue(ParseJSON(%q)) = %#v, %v", data, tv, err)
		}
	})
}

func FuzzParseYAML(f *testing.F) {
	for _, s := range []string{
		"", "# c\n", "---\n", "a: 1\n---\nb: 2\n", "a: 1", "a: 0o17\nb: -0b101\nc: 0x1F\nd: 017\n",
		"a: 1.10\nb: \"1.10\"\nc: ~\nd: 2001-12-14t21:59:43.10-05:00\ne: 2002-12-14\n",
		"a: .inf\n", "a: 1e400\n", "1: a\n", "? [a, b]\n: 1\n", "a: !foo x\n", "a: !!binary aGk=\n",
		"base: &b {a: 1}\nm:\n  <<: *b\n  b: 2\n", "m: {<<: [{a: 1}, {a: 2, b: 3}]}\n", "a: &a [*a]\n",
		billionLaughs(4, 4), "a: |\n  x\n  y\n", "- \"\\u00e9\\t\"\n- 'q'\n", "a: b: c\n", "\ufeffa: 1\n",
		"a: 1_000\nb: +.5\nc: -0x1_0\n", "x: &x 1\ny: {*x : 2}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := cas.ParseYAML(data)
		if err != nil {
			checkSyntaxError(t, err, false)
			return
		}
		c1, err := cas.Canonical(v)
		if err != nil {
			t.Fatalf("Canonical(ParseYAML(%q)): %v", data, err)
		}
		v2, err := cas.ParseJSON(c1)
		if err != nil {
			t.Fatalf("ParseJSON(Canonical(ParseYAML(%q))) = %v for %q", data, err, c1)
		}
		c2, err := cas.Canonical(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("round trip through JSON changed the value:\n%q\n%q (%v)", c1, c2, err)
		}
	})
}

// FuzzCanonicalNumber checks the ECMAScript number layout against
// encoding/json (which follows the same rules, except for -0) and that it
// reads back as the same double.
func FuzzCanonicalNumber(f *testing.F) {
	for _, bits := range []uint64{0, 1, 0x4340000000000001, 0x444b1ae4d6e2ef50, 0x3eb0c6f7a0b5ed8c, 0x7fefffffffffffff, 0x3ff0000000000000, 0x8000000000000001} {
		f.Add(bits)
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		got, err := cas.Canonical(x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if err == nil || !errors.Is(err, cas.ErrInvalid) {
				t.Fatalf("Canonical(%v) = %s, %v; want an ErrInvalid", x, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Canonical(%v): %v", x, err)
		}
		if x != 0 {
			want, _ := json.Marshal(x)
			if !bytes.Equal(got, want) {
				t.Fatalf("Canonical(%#x) = %s, encoding/json says %s", bits, got, want)
			}
		}
		back, err := cas.ParseJSON(got)
		if err != nil || back != x {
			t.Fatalf("ParseJSON(%s) = %v, %v; want %v", got, back, err, x)
		}
	})
}
