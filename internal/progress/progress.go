// Package progress shows the progress of uwf's long operations
// ([cas.Progress] reports) on stderr: a bar redrawn in place on a
// terminal, or one JSON object per report (docs/CLI.md, "Progress"), or one
// text line per report.
//
// It is a small renderer of its own rather than a progress-bar module: the
// reports come rate-limited from the library already, unknown totals must
// show counts and rate without a made-up ETA, --json needs events rather
// than a bar, and the output must be byte-predictable for tests.
package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
)

// Mode is how a [Writer] shows reports.
type Mode int

const (
	// Bar redraws one line in place ("\r", then clear to the end of the
	// line), a bar with a percentage and an ETA where the total is known;
	// each phase's final report ends its line.
	Bar Mode = iota
	// Lines writes each report on its own line, as Bar draws it.
	Lines
	// JSON writes each report as one JSON object on its own line.
	JSON
)

// Interval is the least time between two drawn reports of a phase (its
// first and final ones apart): reports coming faster are dropped.
const Interval = 100 * time.Millisecond

// barWidth is the number of cells of the bar.
const barWidth = 24

// Writer shows reports on w. Its methods are safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	mode  Mode
	now   func() time.Time
	width func() int // Bar: the terminal's columns (0: unknown), read at each draw
	last  time.Time  // when the last report was drawn
	open  bool       // Bar: a line is drawn and not yet ended
	phase string     // op and phase of the open line
}

// New returns a Writer showing reports on w in mode.
func New(w io.Writer, mode Mode) *Writer {
	return &Writer{w: w, mode: mode, now: time.Now, width: func() int { return width(w) }}
}

// Report shows p, unless it is neither the first nor the final report of
// its phase and the last one was drawn less than [Interval] ago. On a nil
// Writer it does nothing.
func (pw *Writer) Report(p cas.Progress) {
	if pw == nil {
		return
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	now := pw.now()
	key := p.Op + " " + p.Phase
	if !p.Final && p.Done > 0 && key == pw.phase && now.Sub(pw.last) < Interval {
		return
	}
	pw.last = now
	switch pw.mode {
	case JSON:
		b, _ := json.Marshal(event(p))
		pw.w.Write(append(b, '\n'))
	case Lines:
		io.WriteString(pw.w, Line(p)+"\n")
	default:
		var b strings.Builder
		if pw.open && pw.phase != key {
			b.WriteString("\n") // a phase that never ended: keep its line
		}
		line := Line(p)
		// A line longer than the terminal would wrap, and "\r" would then
		// redraw only its last row: cut it to fit (it is ASCII).
		if cols := pw.width(); cols > 1 && len(line) > cols-1 {
			line = line[:cols-1]
		}
		b.WriteString("\r" + line + "\x1b[K")
		pw.open = !p.Final
		if p.Final {
			b.WriteString("\n")
		}
		io.WriteString(pw.w, b.String())
	}
	pw.phase = key
	if p.Final {
		pw.phase = ""
	}
}

// Close ends a bar line left open (an operation that stopped without its
// final report), so what is printed next starts on a line of its own. On
// a nil Writer it does nothing.
func (pw *Writer) Close() {
	if pw == nil {
		return
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.open {
		io.WriteString(pw.w, "\n")
		pw.open = false
	}
}

// Event is the JSON form of a report (docs/CLI.md, "Progress").
type Event struct {
	Event     string   `json:"event"` // "progress"
	Op        string   `json:"op"`
	Phase     string   `json:"phase"`
	Unit      string   `json:"unit"`
	Done      int64    `json:"done"`
	Total     *int64   `json:"total"` // null when not known up front
	ElapsedMs int64    `json:"elapsedMs"`
	Rate      float64  `json:"rate"`  // units per second
	EtaMs     *int64   `json:"etaMs"` // null without a total or a rate
	Final     bool     `json:"final"`
	Percent   *float64 `json:"percent"` // null without a total
}

func event(p cas.Progress) Event {
	e := Event{Event: "progress", Op: p.Op, Phase: p.Phase, Unit: p.Unit, Done: p.Done,
		ElapsedMs: p.Elapsed.Milliseconds(), Rate: float64(int64(p.Rate()*10)) / 10, Final: p.Final}
	if p.Total > 0 {
		total := p.Total
		pct := float64(int64(float64(p.Done)*1000/float64(p.Total))) / 10
		e.Total, e.Percent = &total, &pct
	}
	if eta, ok := p.ETA(); ok {
		ms := eta.Milliseconds()
		e.EtaMs = &ms
	}
	return e
}

// Line formats a report as the bar shows it:
//
//	gc sweep [############------------]  50%  5,000/10,000 objects  2,500/s  ETA 2s
//	walk nodes  15,230 nodes  8,120/s  1.9s
//
// A phase with a total shows a bar, its percentage and an ETA (on its
// final report, the time it took); one without shows the count, the rate
// and the time so far, and no ETA.
func Line(p cas.Progress) string {
	var b strings.Builder
	b.WriteString(p.Op)
	if p.Phase != "" {
		b.WriteString(" " + p.Phase)
	}
	rate := ""
	if p.Elapsed > 0 {
		rate = "  " + count(int64(p.Rate())) + "/s"
	}
	if p.Total > 0 {
		frac := min(float64(p.Done)/float64(p.Total), 1)
		fill := int(frac * barWidth)
		fmt.Fprintf(&b, " [%s%s] %3d%%  %s/%s %s%s", strings.Repeat("#", fill), strings.Repeat("-", barWidth-fill),
			int(frac*100), count(p.Done), count(p.Total), p.Unit, rate)
		switch eta, ok := p.ETA(); {
		case p.Final:
			b.WriteString("  in " + duration(p.Elapsed))
		case ok:
			b.WriteString("  ETA " + duration(eta))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "  %s %s%s", count(p.Done), p.Unit, rate)
	switch {
	case p.Final:
		b.WriteString("  in " + duration(p.Elapsed))
	case p.Elapsed > 0:
		b.WriteString("  " + duration(p.Elapsed))
	}
	return b.String()
}

// count formats n with thousands separators: 12,345.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// duration formats d for people: 0.4s, 12s, 3m04s, 1h02m.
func duration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// Counter reports a loop of the caller's own (not a library operation's)
// to a Writer, as one phase: Add after each item, End when the loop ends.
// A nil Counter (from a nil Writer) does nothing.
type Counter struct {
	pw    *Writer
	p     cas.Progress
	began time.Time
	ended bool
}

// Start begins a phase of op counting unit, total items in all (0 if not
// known), and reports it.
func (pw *Writer) Start(op, phase, unit string, total int) *Counter {
	if pw == nil {
		return nil
	}
	c := &Counter{pw: pw, p: cas.Progress{Op: op, Phase: phase, Unit: unit, Total: int64(total)}, began: pw.now()}
	pw.Report(c.p)
	return c
}

// Add counts n more items done.
func (c *Counter) Add(n int) {
	if c == nil {
		return
	}
	c.p.Done += int64(n)
	c.p.Elapsed = c.pw.now().Sub(c.began)
	c.pw.Report(c.p)
}

// End makes the phase's final report, once.
func (c *Counter) End() {
	if c == nil || c.ended {
		return
	}
	c.ended = true
	c.p.Final = true
	c.p.Elapsed = c.pw.now().Sub(c.began)
	c.pw.Report(c.p)
}

// Width returns the number of columns of the terminal w, or 0 if w is not
// a terminal or its width is unknown.
func Width(w io.Writer) int { return width(w) }
