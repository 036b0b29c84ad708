package disk

import (
	"reflect"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"old":"0000000000000","new":"2DHW2FP49YVD3","time":1,"message":"m","name":"a/B"}`+"\n"), uint64(0))
	f.Add([]byte(`{"old":"2DHW2FP49YVD3","new":"0000000000000","time":2,"message":"","name":"a","import":true}`+"\n{\"old"), uint64(0x1234))
	f.Add([]byte("\n\n"), uint64(1))
	f.Add([]byte("not json\n"), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, h uint64) {
		// The ref file holds "a" at h (none if h is zero).
		cur := refState{exists: h != 0, name: "a", hash: cas.Hash(h)}
		lines, _, err := parseLog(data, cur, "log")
		if err != nil {
			return
		}
		// What parses re-encodes to lines that parse the same (less, at
		// most, a last line that is now an intent).
		again, _, err := parseLog(encodeLog(lines), cur, "log")
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if len(again) < len(lines)-1 || len(again) > len(lines) {
			t.Fatalf("re-parse: %d lines, then %d", len(lines), len(again))
		}
		for i := range again {
			if !reflect.DeepEqual(again[i], lines[i]) {
				t.Fatalf("re-parse changed line %d: %+v -> %+v", i, lines[i], again[i])
			}
		}
	})
}

func FuzzParseRef(f *testing.F) {
	f.Add([]byte("2DHW2FP49YVD3 threads/A\n"), "threads/a")
	f.Add([]byte("0000000000000 a\n"), "a")
	f.Add([]byte("2DHW2FP49YVD3 ../x\n"), "../x")
	f.Fuzz(func(t *testing.T, b []byte, lower string) {
		name, h, err := parseRef(b, lower)
		if err != nil {
			return
		}
		if h.IsZero() || cas.ValidateRefName(name) != nil || strings.ToLower(name) != lower {
			t.Fatalf("parseRef(%q) accepted %q %s", b, name, h)
		}
		if got := refFile(name, h); string(got) != string(b) {
			t.Fatalf("refFile = %q, want %q", got, b)
		}
	})
}

func FuzzParseFormat(f *testing.F) {
	f.Add(formatText(1))
	f.Add(formatText(2))
	f.Add([]byte("uwf store 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseFormat(b) // must not panic
	})
}
