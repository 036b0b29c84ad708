package cas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// TestCanonicalRFC8785 checks the reference data of RFC 8785's
// implementation (testdata/jcs/README.md): each input canonicalises to
// exactly its output.
func TestCanonicalRFC8785(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "jcs", "input", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 7 {
		t.Fatalf("found %d reference inputs, want at least 7", len(inputs))
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "jcs", "output", name))
			if err != nil {
				t.Fatal(err)
			}
			v, err := cas.ParseJSON(data)
			if err != nil {
				t.Fatalf("ParseJSON: %v", err)
			}
			got, err := cas.Canonical(v)
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Canonical(ParseJSON(%s)) =\n%s\nwant\n%s", name, got, want)
			}
			// The output is a fixed point.
			v2, err := cas.ParseJSON(want)
			if err != nil {
				t.Fatalf("ParseJSON(output): %v", err)
			}
			if again, _ := cas.Canonical(v2); !bytes.Equal(again, want) {
				t.Errorf("output is not a fixed point: %s", again)
			}
		})
	}
}

func sum(a, b float64) float64 { return a + b }

func TestCanonicalNumbers(t *testing.T) {
	bits := func(h uint64) float64 { return math.Float64frombits(h) }
	tests := []struct {
		name string
		in   float64
		want string
	}{
		// The ES6 samples of testdata/jcs/README.md (IEEE-754 hex).
		{"4340000000000001", bits(0x4340000000000001), "9007199254740994"},
		{"4340000000000002", bits(0x4340000000000002), "9007199254740996"},
		{"444b1ae4d6e2ef50", bits(0x444b1ae4d6e2ef50), "1e+21"},
		{"3eb0c6f7a0b5ed8d", bits(0x3eb0c6f7a0b5ed8d), "0.000001"},
		{"3eb0c6f7a0b5ed8c", bits(0x3eb0c6f7a0b5ed8c), "9.999999999999997e-7"},
		{"8000000000000000", bits(0x8000000000000000), "0"},
		{"0000000000000000", bits(0), "0"},
		// More.
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"one", 1, "1"},
		{"minus one", -1, "-1"},
		{"0.1", 0.1, "0.1"},
		{"0.1+0.2", sum(0.1, 0.2), "0.30000000000000004"},
		{"1e21", 1e21, "1e+21"},
		{"-1e21", -1e21, "-1e+21"},
		{"1e20", 1e20, "100000000000000000000"},
		{"123456789012345680000", 123456789012345680000, "123456789012345680000"},
		{"2^60", 1 << 60, "1152921504606847000"},
		{"123e-20", 123e-20, "1.23e-18"},
		{"5e-324", 5e-324, "5e-324"},
		{"-5e-324", -5e-324, "-5e-324"},
		{"max double", math.MaxFloat64, "1.7976931348623157e+308"},
		{"max safe integer", 1<<53 - 1, "9007199254740991"},
		{"2^53", 1 << 53, "9007199254740992"},
		{"9007199254740993", 9007199254740993, "9007199254740992"},
		{"-2^53", -(1 << 53), "-9007199254740992"},
		{"0.000001", 0.000001, "0.000001"},
		{"1e-7", 1e-7, "1e-7"},
		{"-1.5e-7", -1.5e-7, "-1.5e-7"},
		{"1e-6 boundary above", 1.2345e-6, "0.0000012345"},
		{"333333333.33333329", 333333333.33333329, "333333333.3333333"},
		{"1e30", 1e30, "1e+30"},
		{"4.5", 4.50, "4.5"},
		{"0.002", 2e-3, "0.002"},
		{"1e-27", 0.000000000000000000000000001, "1e-27"},
		{"1.5e300", 1.5e300, "1.5e+300"},
		{"100", 100, "100"},
		{"1e16", 1e16, "10000000000000000"},
		{"12.5", 12.5, "12.5"},
		{"-0.5", -0.5, "-0.5"},
		{"1.2e21 digits", 1.2345678e21, "1.2345678e+21"},
		{"999999999999999900000", 999999999999999900000, "999999999999999900000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.Canonical(tc.in)
			if err != nil {
				t.Fatalf("Canonical(%v): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestCanonicalNumbersMatchEncodingJSON compares the number layout with
// encoding/json, which follows ECMAScript's rules too (except -0) and is
// an independent implementation, over random bit patterns.
func TestCanonicalNumbersMatchEncodingJSON(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cas.Canonical(f)
		if err != nil {
			t.Fatalf("Canonical(%x): %v", math.Float64bits(f), err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%#x) = %s, encoding/json says %s", math.Float64bits(f), got, want)
		}
	}
	// float32 is written as encoding/json writes it.
	for range n / 10 {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || f == 0 {
			continue
		}
		want, _ := json.Marshal(f)
		if got, err := cas.Canonical(f); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Canonical(float32 %#x) = %s, %v; encoding/json says %s", math.Float32bits(f), got, err, want)
		}
	}
	// Integers and short decimals, where the layout switches forms.
	for e := -30; e <= 30; e++ {
		for _, m := range []float64{1, 1.5, 9.999999999999999, 123456789} {
			f := m * math.Pow(10, float64(e))
			want, _ := json.Marshal(f)
			if got, _ := cas.Canonical(f); !bytes.Equal(got, want) {
				t.Errorf("Canonical(%v) = %s, encoding/json says %s", f, got, want)
			}
		}
	}
}

func TestCanonicalKeyOrder(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want string
	}{
		{
			// U+1F600 is D83D DE00 in UTF-16, below U+E000 and U+FB33,
			// though its UTF-8 bytes (F0 ..) sort after theirs (EE, EF).
			name: "astral before private use and presentation forms",
			in:   map[string]any{"\U0001F600": 1, "\uE000": 2, "\uFB33": 3, "\uFFFF": 4},
			want: `{"😀":1,"` + "\uE000" + `":2,"` + "\uFB33" + `":3,"` + "\uFFFF" + `":4}`,
		},
		{
			name: "after a common prefix",
			in:   map[string]any{"a\uFFFD": 1, "a\U00010000": 2, "a": 3, "ab": 4},
			want: `{"a":3,"ab":4,"a` + "\U00010000" + `":2,"a` + "\uFFFD" + `":1}`,
		},
		{
			name: "BMP below the surrogates keeps code point order",
			in:   map[string]any{"\u00e9": 1, "e": 2, "\u20ac": 3, "\uD7FF": 4, "\U0001F600": 5},
			want: `{"e":2,"é":1,"€":3,"` + "\uD7FF" + `":4,"😀":5}`,
		},
		{
			name: "ascii, case and empty",
			in:   map[string]any{"b": 1, "B": 2, "": 3, "10": 4, "1": 5, "a": 6},
			want: `{"":3,"1":5,"10":4,"B":2,"a":6,"b":1}`,
		},
		{
			name: "two astral characters",
			in:   map[string]any{"\U0001F601": 1, "\U0001F600": 2, "\U00010400": 3},
			want: `{"` + "\U00010400" + `":3,"😀":2,"😁":1}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.Canonical(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCanonicalStrings(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", `"hello"`},
		{"empty", "", `""`},
		{"quote", `a"b`, `"a\"b"`},
		{"backslash", `a\b`, `"a\\b"`},
		{"slash not escaped", "a/b</script>", `"a/b</script>"`},
		{"named controls", "\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"NUL", "\x00", `"\u0000"`},
		{"other controls", "\x01\x0b\x0e\x1f", `"\u0001\u000b\u000e\u001f"`},
		{"DEL raw", "\x7f", "\"\x7f\""},
		{"U+2028 raw", "\u2028", "\"\u2028\""},
		{"U+2029 raw", "\u2029", "\"\u2029\""},
		{"non-ASCII raw", "é€😀", `"é€😀"`},
		{"C1 control raw", "\u0085\u009f", "\"\u0085\u009f\""},
		{"html raw", "<>&", `"<>&"`},
		{"U+FFFD raw", "\uFFFD", "\"\uFFFD\""},
		{"noncharacter raw", "\uFFFF", "\"\uFFFF\""},
		{"mixed", "a\tb\"c\u0001d", `"a\tb\"c\u0001d"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.Canonical(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical(%q) = %s, want %s", tc.in, got, tc.want)
			}
			// It reads back as the same string.
			back, err := cas.ParseJSON(got)
			if err != nil || back != tc.in {
				t.Errorf("ParseJSON(%s) = %q, %v; want %q", got, back, err, tc.in)
			}
		})
	}
}

type textID string

func (id textID) MarshalText() ([]byte, error) { return []byte("id-" + string(id)), nil }

type ptrText struct{ n int }

func (p *ptrText) MarshalText() ([]byte, error) { return []byte(strconv.Itoa(p.n)), nil }

type status string

type payload struct {
	Name   string          `json:"name"`
	Parent cas.Hash        `json:"parent"`
	Skip   []cas.Hash      `json:"skip"`
	Depth  int64           `json:"depth"`
	Ratio  float32         `json:"ratio"`
	Note   string          `json:"note,omitempty"`
	Hidden func()          `json:"-"`
	Raw    json.RawMessage `json:"raw"`
	Status status          `json:"status"`
}

func TestCanonicalConvenienceTypes(t *testing.T) {
	h := cas.Sum([]byte("hello")) // 2DHW2FP49YVD3
	var nilPtr *payload
	var nilText *ptrText
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `null`},
		{"bools", []any{true, false}, `[true,false]`},
		{"hash", h, `"2DHW2FP49YVD3"`},
		{"zero hash", cas.Hash(0), `"0000000000000"`},
		{"hash pointer", &h, `"2DHW2FP49YVD3"`},
		{"hash slice", []cas.Hash{h, 0}, `["2DHW2FP49YVD3","0000000000000"]`},
		{"ints", []any{int(-1), int8(-8), int16(16), int32(32), int64(1 << 53), uint(1), uint8(8), uint16(16), uint32(32), uint64(1 << 60), uintptr(7)},
			`[-1,-8,16,32,9007199254740992,1,8,16,32,1152921504606847000,7]`},
		{"int64 rounds like a JSON number", int64(9007199254740993), `9007199254740992`},
		{"uint64 max", uint64(math.MaxUint64), `18446744073709552000`},
		{"float32 as encoding/json writes it", float32(0.1), `0.1`},
		{"float32 3.4e38", float32(math.MaxFloat32), `3.4028235e+38`},
		{"string slice", []string{"b", "a"}, `["b","a"]`},
		{"string map", map[string]string{"b": "1", "a": "2"}, `{"a":"2","b":"1"}`},
		{"raw message", json.RawMessage(` { "b" : [1, 2.50], "a" : "x" } `), `{"a":"x","b":[1,2.5]}`},
		{"number", json.Number("1.50e2"), `150`},
		{"empty number is 0, as in encoding/json", json.Number(""), `0`},
		{"text marshaler", textID("7"), `"id-7"`},
		{"pointer text marshaler", &ptrText{n: 42}, `"42"`},
		{"netip", netip.MustParseAddr("::1"), `"::1"`},
		{"time (json.Marshaler)", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), `"2024-01-02T03:04:05Z"`},
		{"named string", status("done"), `"done"`},
		{"named int", time.Duration(1500), `1500`},
		{"struct", payload{Name: "n<&>", Parent: h, Skip: []cas.Hash{h}, Depth: 3, Ratio: 0.1, Raw: json.RawMessage(`{"z":1,"y":2}`), Status: "ok"},
			`{"depth":3,"name":"n<&>","parent":"2DHW2FP49YVD3","ratio":0.1,"raw":{"y":2,"z":1},"skip":["2DHW2FP49YVD3"],"status":"ok"}`},
		{"nil struct pointer", nilPtr, `null`},
		{"nil text marshaler pointer", nilText, `null`},
		{"nil slices and maps", []any{[]any(nil), map[string]any(nil), []string(nil), []cas.Hash(nil), map[string]string(nil), json.RawMessage(nil)},
			`[null,null,null,null,null,null]`},
		{"empty containers", []any{[]any{}, map[string]any{}, []string{}, map[string]string{}}, `[[],{},[],{}]`},
		{"int slice via encoding/json", []int{3, 1, 2}, `[3,1,2]`},
		{"int map via encoding/json", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{"byte slice as base64", []byte("hi"), `"aGk="`},
		{"real U+FFFD through encoding/json", map[string]status{"a": "\uFFFD"}, "{\"a\":\"\uFFFD\"}"},
		{"hash-keyed map", map[cas.Hash]bool{1: true}, `{"0000000000001":true}`},
		{"nested convenience values", map[string]any{"type": h, "payload": map[string]any{"n": 1, "list": []string{"x"}}},
			`{"payload":{"list":["x"],"n":1},"type":"2DHW2FP49YVD3"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.Canonical(tc.in)
			if err != nil {
				t.Fatalf("Canonical(%#v): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical(%#v) = %s, want %s", tc.in, got, tc.want)
			}
			// ToValue gives plain values that encode the same.
			v, err := cas.ToValue(tc.in)
			if err != nil {
				t.Fatalf("ToValue: %v", err)
			}
			assertPlain(t, v)
			if again, err := cas.Canonical(v); err != nil || !bytes.Equal(again, got) {
				t.Errorf("Canonical(ToValue(v)) = %s, %v; want %s", again, err, got)
			}
		})
	}
}

// assertPlain fails unless v holds only the types ParseJSON returns.
func assertPlain(t *testing.T, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil, bool, float64, string:
	case []any:
		if x == nil {
			t.Errorf("nil []any in a plain value")
		}
		for _, e := range x {
			assertPlain(t, e)
		}
	case map[string]any:
		if x == nil {
			t.Errorf("nil map in a plain value")
		}
		for _, e := range x {
			assertPlain(t, e)
		}
	default:
		t.Errorf("%T in a plain value", v)
	}
}

func deepSlice(n int) any {
	var v any = "leaf"
	for range n {
		v = []any{v}
	}
	return v
}

func TestCanonicalErrors(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	type withFunc struct{ F func() }
	type withIntMap struct{ M map[int]string }
	type withBadString struct{ S string }
	tests := []struct {
		name string
		in   any
		want string // the error message
	}{
		{"NaN", math.NaN(), "invalid JSON value: NaN is not a JSON number"},
		{"+Inf", math.Inf(1), "invalid JSON value: infinity is not a JSON number"},
		{"-Inf in array", []any{1.0, math.Inf(-1)}, "invalid JSON value at /1: infinity is not a JSON number"},
		{"NaN float32", float32(math.NaN()), "invalid JSON value: NaN is not a JSON number"},
		{"invalid UTF-8 string", map[string]any{"a/b": []any{"ok", "x\xffy"}}, "invalid JSON value at /a~1b/1: string is not valid UTF-8 (byte 0xff at offset 1)"},
		{"invalid UTF-8 key", map[string]any{"k\xc3": 1}, "invalid JSON value at /k\uFFFD: string is not valid UTF-8 (byte 0xc3 at offset 1)"},
		{"invalid UTF-8 in string slice", []string{"\xed\xa0\x80"}, "invalid JSON value at /0: string is not valid UTF-8 (byte 0xed at offset 0)"},
		{"invalid UTF-8 in string map", map[string]string{"a": "\x80"}, "invalid JSON value at /a: string is not valid UTF-8 (byte 0x80 at offset 0)"},
		{"too deep", deepSlice(cas.MaxDepth + 1), "nesting deeper than 1000 levels"},
		{"cycle", cyclic, "nesting deeper than 1000 levels"},
		{"func", func() {}, "invalid JSON value: unsupported type func()"},
		{"chan in map", map[string]any{"c": make(chan int)}, "invalid JSON value at /c: unsupported type chan int"},
		{"complex", complex(1, 2), "invalid JSON value: unsupported type complex128"},
		{"int-keyed map", map[int]string{1: "a"}, "invalid JSON value: unsupported map key type int in map[int]string (keys must be strings)"},
		{"int-keyed map in array", []any{1.0, map[int]string{1: "a"}}, "invalid JSON value at /1: unsupported map key type int in map[int]string (keys must be strings)"},
		{"any-keyed map", map[any]any{"a": 1}, "invalid JSON value: unsupported map key type interface {} in map[interface {}]interface {} (keys must be strings)"},
		{"struct with func", withFunc{}, "invalid JSON value: unsupported type func()"},
		{"struct with int map", &withIntMap{}, "unsupported map key type int"},
		{"struct with invalid UTF-8", withBadString{S: "\xff"}, "invalid JSON value: cas_test.withBadString holds a string that is not valid UTF-8"},
		{"raw message with duplicate keys", json.RawMessage(`{"a":1,"a":2}`), `invalid JSON value: json.RawMessage: line 1, column 8: duplicate key "a"`},
		{"raw message not JSON", []any{json.RawMessage(`{`)}, "invalid JSON value at /0: json.RawMessage: line 1, column 2: expected a string key, found end of input"},
		{"number not a number", json.Number("abc"), `invalid JSON value: json.Number "abc" is not a JSON number`},
		{"number with spaces", json.Number(" 1"), `invalid JSON value: json.Number " 1" is not a JSON number`},
		{"number overflow", json.Number("1e400"), `invalid JSON value: json.Number "1e400" is not a JSON number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.Canonical(tc.in)
			if err == nil {
				t.Fatalf("Canonical = %s, want error %q", got, tc.want)
			}
			if !errors.Is(err, cas.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want %q", err, tc.want)
			}
			// AppendCanonical leaves dst as it was.
			dst := []byte("prefix")
			out, err := cas.AppendCanonical(dst, tc.in)
			if err == nil || string(out) != "prefix" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("AppendCanonical = %q, %v; want \"prefix\" and error %q", out, err, tc.want)
			}
			if _, err := cas.ToValue(tc.in); err == nil || !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ToValue error = %v, want %q wrapping ErrInvalid", err, tc.want)
			}
		})
	}
}

func TestCanonicalDepthLimit(t *testing.T) {
	if _, err := cas.Canonical(deepSlice(cas.MaxDepth)); err != nil {
		t.Errorf("Canonical at MaxDepth: %v", err)
	}
	deepMap := any(1.0)
	for range cas.MaxDepth {
		deepMap = map[string]any{"a": deepMap}
	}
	if _, err := cas.Canonical(deepMap); err != nil {
		t.Errorf("Canonical of maps at MaxDepth: %v", err)
	}
	if _, err := cas.Canonical(map[string]any{"a": deepMap}); err == nil {
		t.Errorf("Canonical of maps at MaxDepth+1 succeeded")
	}
	// A struct encoded through encoding/json counts from where it is.
	type box struct{ V any }
	if _, err := cas.Canonical([]any{box{V: deepSlice(cas.MaxDepth - 1)}}); err == nil {
		t.Errorf("Canonical of a struct nested past MaxDepth succeeded")
	}
}

func TestAppendCanonical(t *testing.T) {
	out, err := cas.AppendCanonical([]byte("x="), map[string]any{"b": 1.0, "a": "s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `x={"a":"s","b":1}`; string(out) != want {
		t.Errorf("AppendCanonical = %s, want %s", out, want)
	}
}

func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

func TestAppendCanonicalDoesNotAllocate(t *testing.T) {
	if raceEnabled() {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	v, err := cas.ParseJSON(benchJSON)
	if err != nil {
		t.Fatal(err)
	}
	v.(map[string]any)["hash"] = cas.Hash(42)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := cas.AppendCanonical(buf[:0], v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendCanonical allocates %v times per call, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := cas.Canonical(v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("Canonical allocates %v times per call, want 1 (the result)", allocs)
	}
}

func TestToValuePlainIsUnchanged(t *testing.T) {
	v, err := cas.ParseJSON(benchJSON)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cas.ToValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%p", got) != fmt.Sprintf("%p", v) {
		t.Errorf("ToValue copied a plain map")
	}
	if !raceEnabled() {
		allocs := testing.AllocsPerRun(100, func() { _, _ = cas.ToValue(v) })
		if allocs != 0 {
			t.Errorf("ToValue of a plain value allocates %v times, want 0", allocs)
		}
	}
}

func TestToValueSharesPlainParts(t *testing.T) {
	plainList := []any{"a", 1.0}
	plainMap := map[string]any{"k": "v"}
	in := map[string]any{"list": plainList, "map": plainMap, "hash": cas.Hash(1), "n": 2}
	got, err := cas.ToValue(in)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if fmt.Sprintf("%p", m) == fmt.Sprintf("%p", in) {
		t.Fatalf("ToValue changed its input in place")
	}
	if _, isHash := in["hash"].(cas.Hash); !isHash {
		t.Errorf("ToValue modified its input: %#v", in)
	}
	if m["hash"] != "0000000000001" || m["n"] != 2.0 {
		t.Errorf("ToValue = %#v", m)
	}
	if fmt.Sprintf("%p", m["list"]) != fmt.Sprintf("%p", plainList) || fmt.Sprintf("%p", m["map"]) != fmt.Sprintf("%p", plainMap) {
		t.Errorf("ToValue copied plain sub-trees")
	}
	// An array with one converted element is copied, not modified.
	arr := []any{"x", cas.Hash(2)}
	got, err = cas.ToValue(arr)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.([]any); a[0] != "x" || a[1] != "0000000000002" || arr[1] != cas.Hash(2) {
		t.Errorf("ToValue(%#v) = %#v", arr, got)
	}
}

// TestConcurrentUse runs the pooled parser and encoder from several
// goroutines (meaningful under -race).
func TestConcurrentUse(t *testing.T) {
	want, err := cas.Canonical(mustParse(t, benchJSON))
	if err != nil {
		t.Fatal(err)
	}
	shared := mustParse(t, benchJSON)
	type struct1 struct{ M map[int]int }
	errc := make(chan error, 8)
	for range 8 {
		go func() {
			for range 200 {
				v, err := cas.ParseJSON(benchJSON)
				if err != nil {
					errc <- err
					return
				}
				for _, x := range []any{v, shared} {
					if got, err := cas.Canonical(x); err != nil || !bytes.Equal(got, want) {
						errc <- fmt.Errorf("Canonical = %s, %v", got, err)
						return
					}
				}
				if _, err := cas.Canonical([]any{struct1{}}); err == nil {
					errc <- errors.New("Canonical accepted map[int]int")
					return
				}
			}
			errc <- nil
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func mustParse(t *testing.T, data []byte) any {
	t.Helper()
	v, err := cas.ParseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ExampleCanonical() {
	v, err := cas.ParseJSON([]byte(`{
		"type": "EYHPV6X8XHTCS",
		"payload": {"b": [1.0, 2.50, 1e21, 1e-7], "a": "\u00e9\n"}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := cas.Canonical(v)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))
	fmt.Println(cas.Sum(b))
	// Output:
	// {"payload":{"a":"é\n","b":[1,2.5,1e+21,1e-7]},"type":"EYHPV6X8XHTCS"}
	// 8B68Y0ATYTHJR
}

// benchJSON is a ~1 KiB object shaped like a step node.
var benchJSON = []byte(`{
  "type": "EYHPV6X8XHTCS",
  "payload": {
    "start": "D4KP4Y6MRRVJV",
    "prev": "49F1CYPPQE2CS",
    "skip": ["2DHW2FP49YVD3", "FZZZZZZZZZZZZ", "DXBDYXZ5FXENY", "0000000000000"],
    "depth": 17,
    "role": "reviewer",
    "output": "EYHPV6X8XHTCS",
    "detail": "D4KP4Y6MRRVJV",
    "agent": "llm",
    "startedAt": 1732300000123,
    "completedAt": 1732300004567,
    "ratio": 0.625,
    "tags": ["review", "loop", "approved", "fast"],
    "summary": "Implemented the plan: added canonical JSON (RFC 8785), strict parsing, YAML conversion with bounded aliases; the reviewer approved with minor comments \"looks good\" \u2014 ship it.",
    "comments": "Line 42: consider renaming; line 77: add a test for the lone surrogate \\ud800 case; otherwise fine.",
    "metrics": {"tokensIn": 1234, "tokensOut": 567, "latencyMs": 4321.5, "cost": 0.0123},
    "flags": {"retried": false, "cached": true, "note": null},
    "env": {"UWF_THREAD": "01J0000000000000000000000", "UWF_ROLE": "reviewer", "LANG": "en_US.UTF-8"}
  }
}`)

func benchValue(b *testing.B) any {
	v, err := cas.ParseJSON(benchJSON)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkCanonical(b *testing.B) {
	v := benchValue(b)
	canon, _ := cas.Canonical(v)
	b.Run("cas.Canonical", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(canon)))
		for b.Loop() {
			if _, err := cas.Canonical(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cas.AppendCanonical", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(canon)))
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			if _, err := cas.AppendCanonical(buf[:0], v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(canon)))
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkParseJSON(b *testing.B) {
	b.Run("cas.ParseJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchJSON)))
		for b.Loop() {
			if _, err := cas.ParseJSON(benchJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchJSON)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(benchJSON, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRoundTrip is the path user input takes: parse, then encode.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("cas.ParseJSON+Canonical", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchJSON)))
		for b.Loop() {
			v, err := cas.ParseJSON(benchJSON)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cas.Canonical(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal+Marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchJSON)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(benchJSON, &v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
