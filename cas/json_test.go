package cas_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

func TestParseJSONAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"null", `null`, nil},
		{"true", `true`, true},
		{"false", `false`, false},
		{"integer", `42`, 42.0},
		{"negative", `-17`, -17.0},
		{"zero", `0`, 0.0},
		{"negative zero", `-0`, math.Copysign(0, -1)},
		{"fraction", `0.5`, 0.5},
		{"exponent", `1E3`, 1000.0},
		{"signed exponent", `25e-1`, 2.5},
		{"plus exponent", `1e+2`, 100.0},
		{"big integer rounds", `9007199254740993`, 9007199254740992.0},
		{"many digits", `3.141592653589793238462643383279`, math.Pi},
		{"underflow is zero", `1e-400`, 0.0},
		{"negative underflow", `-1e-400`, math.Copysign(0, -1)},
		{"smallest subnormal", `5e-324`, 5e-324},
		{"largest double", `1.7976931348623157e308`, math.MaxFloat64},
		{"string", `"hi"`, "hi"},
		{"empty string", `""`, ""},
		{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"unicode escape", `"\u00e9\u20AC"`, "é€"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"surrogate pair upper case", `"\uD834\uDD1E"`, "𝄞"},
		{"escaped NUL", `"\u0000"`, "\x00"},
		{"raw non-ASCII", `"é😀"`, "é😀"},
		{"raw DEL and U+2028", "\"\x7f\u2028\"", "\x7f\u2028"},
		{"noncharacter", `"\uffff"`, "\uffff"},
		{"escape then raw text", `"a\nbé"`, "a\nbé"},
		{"empty array", `[]`, []any{}},
		{"empty object", `{}`, map[string]any{}},
		{"nested", `{"a":[1,{"b":null}],"c":{}}`, map[string]any{"a": []any{1.0, map[string]any{"b": nil}}, "c": map[string]any{}}},
		{"whitespace everywhere", " \t\r\n{ \"a\" :\n[ 1 ,\t2 ] , \"b\" : true } \r\n", map[string]any{"a": []any{1.0, 2.0}, "b": true}},
		{"BOM prefix", "\xef\xbb\xbf{\"a\":1}", map[string]any{"a": 1.0}},
		{"BOM then whitespace", "\xef\xbb\xbf \n1", 1.0},
		{"keys differing in case", `{"a":1,"A":2}`, map[string]any{"a": 1.0, "A": 2.0}},
		{"empty key", `{"":1}`, map[string]any{"": 1.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.ParseJSON([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseJSON(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseJSON(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
			if f, ok := tc.want.(float64); ok && math.Signbit(f) != math.Signbit(got.(float64)) {
				t.Errorf("ParseJSON(%q) = %v, want sign of %v", tc.in, got, f)
			}
		})
	}
}

func nested(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

func TestParseJSONRejects(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int
		msg       string
	}{
		{"empty input", ``, 1, 1, "empty input"},
		{"only whitespace", " \n ", 2, 2, "empty input"},
		{"only BOM", "\xef\xbb\xbf", 1, 1, "empty input"},
		{"duplicate key", `{"a":1,"a":2}`, 1, 8, `duplicate key "a"`},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`, 1, 8, `duplicate key "a"`},
		{"duplicate key nested", "{\"x\": {\n  \"b\": 1,\n  \"b\": 2}}", 3, 3, `duplicate key "b"`},
		{"duplicate non-ASCII key", `{"é":1, "\u00e9":2}`, 1, 9, `duplicate key "é"`},
		{"invalid UTF-8 in string", "[\"ab\xffc\"]", 1, 5, "invalid UTF-8 byte 0xff in string"},
		{"invalid UTF-8 after escape", "\"\\n\xc3\"", 1, 4, "invalid UTF-8 byte 0xc3 in string"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", 1, 2, "invalid UTF-8 byte 0xed in string"},
		{"overlong UTF-8", "\"\xc0\xaf\"", 1, 2, "invalid UTF-8 byte 0xc0 in string"},
		{"invalid UTF-8 outside string", "[1,\xff]", 1, 4, "expected a value, found invalid UTF-8 byte 0xff"},
		{"invalid UTF-8 at top level", "\xff", 1, 1, "expected a value, found invalid UTF-8 byte 0xff"},
		{"lone high surrogate", `"a\ud800"`, 1, 3, `lone surrogate \ud800`},
		{"lone high surrogate then text", `"\ud800abc"`, 1, 2, `lone surrogate \ud800`},
		{"lone low surrogate", `"\udc00"`, 1, 2, `lone surrogate \udc00`},
		{"high then non-surrogate escape", `"\ud800\u0041"`, 1, 2, `lone surrogate \ud800`},
		{"high then high", `"\ud800\ud800"`, 1, 2, `lone surrogate \ud800`},
		{"high then other escape", `"\uD83D\n"`, 1, 2, `lone surrogate \ud83d`},
		{"overflow", `1e400`, 1, 1, "number 1e400 overflows a double"},
		{"negative overflow", `[-1e400]`, 1, 2, "number -1e400 overflows a double"},
		{"long overflow", `1` + strings.Repeat("0", 400), 1, 1, `number 1000000000000000000000000000000000000000... overflows a double`},
		{"trailing comma in array", `[1,2,]`, 1, 5, "trailing comma before ']'"},
		{"trailing comma in object", "{\"a\":1,\n}", 1, 7, "trailing comma before '}'"},
		{"leading zero", `01`, 1, 1, `invalid number "01" (leading zero)`},
		{"negative leading zero", `[-012]`, 1, 2, `invalid number "-012" (leading zero)`},
		{"plus sign", `+1`, 1, 1, `invalid number "+1"`},
		{"leading dot", `.5`, 1, 1, `invalid number ".5"`},
		{"trailing dot", `1.`, 1, 1, `invalid number "1."`},
		{"empty exponent", `1e`, 1, 1, `invalid number "1e"`},
		{"lone minus", `-`, 1, 1, `invalid number "-"`},
		{"hex", `0x10`, 1, 1, `invalid number "0x10"`},
		{"two dots", `1.2.3`, 1, 1, `invalid number "1.2.3"`},
		{"NaN", `NaN`, 1, 1, `invalid literal "NaN"`},
		{"Infinity", `[Infinity]`, 1, 2, `invalid literal "Infinity"`},
		{"minus Infinity", `-Infinity`, 1, 1, `invalid number "-Infinity"`},
		{"True", `True`, 1, 1, `invalid literal "True"`},
		{"truncated literal", `nul`, 1, 1, `invalid literal "nul"`},
		{"literal with suffix", `[truex]`, 1, 2, `invalid literal "truex"`},
		{"line comment", "{\"a\":1 // c\n}", 1, 8, "comments are not allowed"},
		{"block comment", "/* c */ 1", 1, 1, "comments are not allowed"},
		{"unterminated string", `["abc`, 1, 2, "unterminated string"},
		{"unterminated after escape", `"a\"`, 1, 1, "unterminated string"},
		{"unterminated in escape", `"a\`, 1, 1, "unterminated string"},
		{"raw newline in string", "\"a\nb\"", 1, 3, "control character U+000A in string"},
		{"raw tab in string", "\"a\tb\"", 1, 3, "control character U+0009 in string"},
		{"raw NUL in string", "\"\\n\x00\"", 1, 4, "control character U+0000 in string"},
		{"invalid escape", `"\x41"`, 1, 2, `invalid escape \x`},
		{"short unicode escape", `"\u12"`, 1, 2, `invalid escape \u12`},
		{"escaped non-ASCII", `"\é"`, 1, 2, `invalid escape \é`},
		{"escaped newline", "\"\\\n\"", 1, 2, `invalid escape: backslash before control character U+000A`},
		{"escaped invalid UTF-8", "\"\\\xff\"", 1, 2, `invalid escape: backslash before invalid UTF-8 byte 0xff`},
		{"bad hex digit", `"\u12g4"`, 1, 2, `invalid escape \u12g4`},
		{"trailing garbage", `{} x`, 1, 4, "expected end of input after the value, found 'x'"},
		{"two values", "1\n2", 2, 1, "expected end of input after the value, found '2'"},
		{"trailing comma at top", `1,`, 1, 2, "expected end of input after the value, found ','"},
		{"unquoted key", `{a:1}`, 1, 2, "expected a string key, found 'a'"},
		{"single quotes", `{'a':1}`, 1, 2, `expected a string key, found '\''`},
		{"missing colon", `{"a" 1}`, 1, 6, "expected ':' after object key, found '1'"},
		{"missing comma in array", `[1 2]`, 1, 4, "expected ',' or ']' after array element, found '2'"},
		{"missing comma in object", `{"a":1 "b":2}`, 1, 8, "expected ',' or '}' after object member, found '\"'"},
		{"unclosed array", `[1`, 1, 3, "expected ',' or ']' after array element, found end of input"},
		{"unclosed object", `{"a":1`, 1, 7, "expected ',' or '}' after object member, found end of input"},
		{"missing value", `{"a":}`, 1, 6, "expected a value, found '}'"},
		{"leading comma", `[,1]`, 1, 2, "expected a value, found ','"},
		{"non-ASCII outside string", `[é]`, 1, 2, "expected a value, found 'é'"},
		{"column counts characters", "{\"é😀\":1,\"é😀\":2}", 1, 9, `duplicate key "é😀"`},
		{"BOM not counted", "\xef\xbb\xbf[1,]", 1, 3, "trailing comma before ']'"},
		{"BOM in the middle", "[\xef\xbb\xbf1]", 1, 2, "expected a value, found '\\ufeff'"},
		{"too deep array", nested("[", "]", cas.MaxDepth+1), 1, cas.MaxDepth + 1, "nesting deeper than 1000 levels"},
		{"too deep object", strings.Repeat(`{"a":`, cas.MaxDepth+1) + "1" + strings.Repeat("}", cas.MaxDepth+1), 1, 5*cas.MaxDepth + 1, "nesting deeper than 1000 levels"},
		{"very deep", strings.Repeat("[", 1<<20), 1, cas.MaxDepth + 1, "nesting deeper than 1000 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := cas.ParseJSON([]byte(tc.in))
			if err == nil {
				t.Fatalf("ParseJSON(%q) = %#v, want an error", tc.in, v)
			}
			var se *cas.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseJSON(%q) error %T %v, want *SyntaxError", tc.in, err, err)
			}
			if !errors.Is(err, cas.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid")
			}
			if se.Line != tc.line || se.Column != tc.col || se.Msg != tc.msg {
				t.Errorf("ParseJSON(%.60q) error = %d:%d %q, want %d:%d %q", tc.in, se.Line, se.Column, se.Msg, tc.line, tc.col, tc.msg)
			}
		})
	}
}

func TestParseJSONDepthLimit(t *testing.T) {
	for _, in := range []string{nested("[", "]", cas.MaxDepth), strings.Repeat(`{"a":`, cas.MaxDepth) + "1" + strings.Repeat("}", cas.MaxDepth)} {
		v, err := cas.ParseJSON([]byte(in))
		if err != nil {
			t.Fatalf("ParseJSON at MaxDepth: %v", err)
		}
		if _, err := cas.Canonical(v); err != nil {
			t.Errorf("Canonical at MaxDepth: %v", err)
		}
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	tests := []struct {
		err  cas.SyntaxError
		want string
	}{
		{cas.SyntaxError{Line: 3, Column: 7, Msg: `duplicate key "a"`}, `line 3, column 7: duplicate key "a"`},
		{cas.SyntaxError{Line: 3, Msg: "found a tab"}, `line 3: found a tab`},
		{cas.SyntaxError{Msg: "empty document"}, `empty document`},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(&tc.err, cas.ErrInvalid) {
			t.Errorf("%v does not wrap ErrInvalid", &tc.err)
		}
	}
}

// TestParseJSONReusesNoState parses after failures to check that pooled
// parser state does not leak between calls.
func TestParseJSONReusesNoState(t *testing.T) {
	bad := []string{`[1,2,{"a":[3,4`, `{"a":1,"b":[1,2,"\ud800"]}`, `{"x":{"y":1,"y":2}}`}
	for range 10 {
		for _, in := range bad {
			if _, err := cas.ParseJSON([]byte(in)); err == nil {
				t.Fatalf("ParseJSON(%q) succeeded", in)
			}
		}
		got, err := cas.ParseJSON([]byte(`{"k":[1,"s\n",{"z":null}]}`))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"k": []any{1.0, "s\n", map[string]any{"z": nil}}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseJSON = %#v, want %#v", got, want)
		}
	}
}
