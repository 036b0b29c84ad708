package disk

import (
	"errors"
	"os"
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

// FuzzParseCursor: a cursor parses only in its one canonical form, which
// it prints back unchanged.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "d.1.0", "d.12.345", "d.0.0", "d.1.-1", "d.01.0", "x", "d..", "d.1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseCursor(cas.Cursor(s))
		if err != nil {
			if !errors.Is(err, cas.ErrInvalidCursor) {
				t.Fatalf("parseCursor(%q): %v, not ErrInvalidCursor", s, err)
			}
			return
		}
		if s == "" {
			if p != (jpos{}) {
				t.Fatalf("parseCursor(\"\") = %+v", p)
			}
			return
		}
		if got := string(p.cursor()); got != s {
			t.Fatalf("parseCursor(%q) = %+v, printed back as %q", s, p, got)
		}
	})
}

// FuzzReadJournal: whatever a segment holds (torn, garbled or foreign
// bytes), reading it from the start yields only records that parse, at
// increasing offsets that are valid cursors, and resuming from any of them
// yields exactly the records after it.
func FuzzReadJournal(f *testing.F) {
	rec := string(journalRecord(logLine{Old: 0, New: 5, Time: 1, Message: "m", Name: "a/b"}))
	f.Add([]byte(rec + rec))
	f.Add([]byte("\n{\"old\":\"00" + rec))
	f.Add([]byte("garbage\n\n\n" + rec + "{"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		s, err := Create(dir, &Options{Durability: DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r := s.Refs()
		if err := os.MkdirAll(r.journalPath(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.segPath(1), data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, _, _, err := r.readJournal(jpos{}, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		for i, rc := range recs {
			if cas.ValidateRefName(rc.line.Name) != nil {
				t.Fatalf("record %d has a bad name %q", i, rc.line.Name)
			}
			if i > 0 && rc.end.off <= recs[i-1].end.off {
				t.Fatalf("record %d ends at %d, not after %d", i, rc.end.off, recs[i-1].end.off)
			}
			rest, _, _, err := r.readJournal(rc.end, 1<<20, true)
			if err != nil {
				t.Fatalf("resume from record %d's cursor %s: %v", i, rc.end.cursor(), err)
			}
			if len(rest) != len(recs)-i-1 {
				t.Fatalf("resume from record %d: %d records, want %d", i, len(rest), len(recs)-i-1)
			}
		}
	})
}

// FuzzAttrEntry: an attribute's value is an entry only when it is exactly
// "<gen>\n<key>\n<entry>" for the cache's generation and the key asked
// for; anything else (torn, foreign, of an old generation) is no entry.
func FuzzAttrEntry(f *testing.F) {
	f.Add([]byte("0123456789abcdef\nchain/AAAAAAAAAAAAA\n{}"), "0123456789abcdef", "chain/AAAAAAAAAAAAA")
	f.Add([]byte("0123456789abcdef\nchain/AAAAAAAAAAAAA"), "0123456789abcdef", "chain/AAAAAAAAAAAAA")
	f.Add([]byte("\n\n"), "", "")
	f.Fuzz(func(t *testing.T, data []byte, gen, key string) {
		v, ok := attrEntry(data, gen, key)
		want := ok
		if gen != "" && !strings.Contains(gen, "\n") && !strings.Contains(key, "\n") {
			prefix := gen + "\n" + key + "\n"
			want = strings.HasPrefix(string(data), prefix)
			if want && string(v) != string(data[len(prefix):]) {
				t.Fatalf("attrEntry(%q, %q, %q) = %q, want %q", data, gen, key, v, data[len(prefix):])
			}
		}
		if ok != want || gen == "" && ok {
			t.Fatalf("attrEntry(%q, %q, %q) ok = %v, want %v", data, gen, key, ok, want)
		}
	})
}
