package progress

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		p    cas.Progress
		want string
	}{
		{cas.Progress{Op: "gc", Phase: "sweep", Unit: "objects", Total: 10000},
			"gc sweep [------------------------]   0%  0/10,000 objects"},
		{cas.Progress{Op: "gc", Phase: "sweep", Unit: "objects", Done: 5000, Total: 10000, Elapsed: 2 * time.Second},
			"gc sweep [############------------]  50%  5,000/10,000 objects  2,500/s  ETA 2.0s"},
		{cas.Progress{Op: "gc", Phase: "sweep", Unit: "objects", Done: 10000, Total: 10000, Elapsed: 4 * time.Second, Final: true},
			"gc sweep [########################] 100%  10,000/10,000 objects  2,500/s  in 4.0s"},
		{cas.Progress{Op: "walk", Phase: "nodes", Unit: "nodes", Done: 15230, Elapsed: 1900 * time.Millisecond},
			"walk nodes  15,230 nodes  8,015/s  1.9s"},
		{cas.Progress{Op: "walk", Phase: "nodes", Unit: "nodes", Done: 1234567, Elapsed: 3*time.Minute + 4*time.Second, Final: true},
			"walk nodes  1,234,567 nodes  6,709/s  in 3m04s"},
		{cas.Progress{Op: "import", Phase: "objects", Unit: "objects"}, "import objects  0 objects"},
		{cas.Progress{Op: "fsck", Phase: "objects", Unit: "objects", Done: 1, Total: 3, Elapsed: 2 * time.Hour},
			"fsck objects [########----------------]  33%  1/3 objects  0/s  ETA 4h00m"},
	} {
		if got := Line(tc.p); got != tc.want {
			t.Errorf("Line(%+v) =\n\t%q\nwant\n\t%q", tc.p, got, tc.want)
		}
	}
}

// fakeClock steps by step at each reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// TestWriterBar: the bar is redrawn in place, reports closer than
// Interval are dropped (never the first or the final one), and the final
// report ends the line.
func TestWriterBar(t *testing.T) {
	var buf bytes.Buffer
	pw := New(&buf, Bar)
	clk := &fakeClock{t: time.Unix(0, 0), step: 30 * time.Millisecond}
	pw.now = clk.now
	p := cas.Progress{Op: "gc", Phase: "sweep", Unit: "objects", Total: 8}
	for i := range 9 {
		p.Done = int64(i)
		p.Final = i == 8
		pw.Report(p)
	}
	pw.Close() // nothing open: writes nothing
	out := buf.String()
	draws := strings.Count(out, "\r")
	if draws < 3 || draws > 5 {
		t.Errorf("drew %d times for 9 reports 30 ms apart, want 3-5 (first, final, one per 100 ms):\n%q", draws, out)
	}
	if !strings.HasPrefix(out, "\rgc sweep [") || !strings.HasSuffix(out, "100%  8/8 objects  in 0.0s\x1b[K\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("bar output %q: want redraws ending at 100%% and one newline", out)
	}
	// A phase that never ended is closed by Close.
	buf.Reset()
	pw.Report(cas.Progress{Op: "walk", Phase: "nodes", Unit: "nodes"})
	pw.Close()
	if got := buf.String(); got != "\rwalk nodes  0 nodes\x1b[K\n" {
		t.Errorf("Close after an open line: %q", got)
	}
}

func TestWriterJSON(t *testing.T) {
	var buf bytes.Buffer
	pw := New(&buf, JSON)
	pw.Report(cas.Progress{Op: "walk", Phase: "nodes", Unit: "nodes"})
	pw.Report(cas.Progress{Op: "fsck", Phase: "objects", Unit: "objects", Done: 3, Total: 4, Elapsed: 3 * time.Second})
	pw.Report(cas.Progress{Op: "fsck", Phase: "objects", Unit: "objects", Done: 4, Total: 4, Elapsed: 4 * time.Second, Final: true})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		`{"event":"progress","op":"walk","phase":"nodes","unit":"nodes","done":0,"total":null,"elapsedMs":0,"rate":0,"etaMs":null,"final":false,"percent":null}`,
		`{"event":"progress","op":"fsck","phase":"objects","unit":"objects","done":3,"total":4,"elapsedMs":3000,"rate":1,"etaMs":1000,"final":false,"percent":75}`,
		`{"event":"progress","op":"fsck","phase":"objects","unit":"objects","done":4,"total":4,"elapsedMs":4000,"rate":1,"etaMs":0,"final":true,"percent":100}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(lines), len(want), buf.String())
	}
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Errorf("line %d does not parse: %v", i, err)
		}
		if l != want[i] {
			t.Errorf("line %d =\n\t%s\nwant\n\t%s", i, l, want[i])
		}
	}
}

func TestWriterLines(t *testing.T) {
	var buf bytes.Buffer
	pw := New(&buf, Lines)
	pw.Report(cas.Progress{Op: "import", Phase: "objects", Unit: "objects"})
	pw.Report(cas.Progress{Op: "import", Phase: "objects", Unit: "objects", Done: 2, Elapsed: time.Second, Final: true})
	if got, want := buf.String(), "import objects  0 objects\nimport objects  2 objects  2/s  in 1.0s\n"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

func TestIsTerminal(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]any{"/dev/null": devnull, "a file": f, "a buffer": &bytes.Buffer{}} {
		if IsTerminal(w.(interface{ Write([]byte) (int, error) })) {
			t.Errorf("%s taken for a terminal", name)
		}
	}
}

// TestWriterBarNarrow: on a narrow terminal the bar is cut to fit, so it
// never wraps (a wrapped line cannot be redrawn with "\r").
func TestWriterBarNarrow(t *testing.T) {
	var buf bytes.Buffer
	pw := New(&buf, Bar)
	pw.width = func() int { return 30 }
	pw.Report(cas.Progress{Op: "gc", Phase: "sweep", Unit: "objects", Done: 1, Total: 2, Elapsed: time.Second, Final: true})
	if got, want := buf.String(), "\rgc sweep [############-------\x1b[K\n"; got != want {
		t.Errorf("narrow bar = %q, want %q", got, want)
	}
}
