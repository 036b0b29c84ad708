package cas

import (
	"context"
	"time"
)

// Progress says how far one phase of a long operation ([Repo.GC],
// [Repo.Fsck], [Import], [Export], [Repo.Walk]) has got, as reported to
// the [ProgressFunc] of [WithProgress].
type Progress struct {
	// Op is the operation: "gc", "fsck", "import", "export" or "walk".
	Op string `json:"op"`
	// Phase is the step of Op: gc "list", "mark", "order", "sweep", "cache"; fsck
	// "objects", "refs"; export "order", "write"; import "objects"; walk
	// "nodes".
	Phase string `json:"phase"`
	// Unit is what Done counts: "objects", "nodes", "refs", "entries".
	Unit string `json:"unit"`
	// Done is how many items the phase has done.
	Done int64 `json:"done"`
	// Total is how many it will do in all, or 0 if that is not known up
	// front (a listing, a walk, a tar read as a stream).
	Total int64 `json:"total"`
	// Elapsed is the time since the phase began.
	Elapsed time.Duration `json:"-"`
	// Final is set on the phase's last report, made when it ends
	// (whether it finished or stopped early).
	Final bool `json:"final"`
}

// Rate is items per second so far (0 before any time has passed).
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Done) / p.Elapsed.Seconds()
}

// ETA estimates the time left from the rate so far; ok is false when it
// cannot be known: no Total, or nothing done yet.
func (p Progress) ETA() (d time.Duration, ok bool) {
	r := p.Rate()
	if p.Total <= 0 || r <= 0 {
		return 0, false
	}
	left := max(p.Total-p.Done, 0)
	return time.Duration(float64(left) / r * float64(time.Second)), true
}

// ProgressFunc receives [Progress] reports. Reports of one operation come
// from the goroutine that runs it, in order; the function should return
// quickly (it runs inside the operation, possibly under the store's lock).
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress returns a context that makes the long operations run with
// it report their progress to fn: each phase at its start, then at most
// every [ProgressInterval] while it runs, then once more, Final, when it
// ends. Without it they report nothing and pay nothing for it.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressInterval is the least time between two reports of one phase
// (its first and Final reports apart).
const ProgressInterval = 100 * time.Millisecond

// progressCheckEvery is how many items a phase counts between two reads
// of the clock: reading it for every item would cost more than small
// items do.
const progressCheckEvery = 16

// progress reports one phase. A nil *progress (no ProgressFunc in the
// context) does nothing.
type progress struct {
	fn    ProgressFunc
	p     Progress
	began time.Time
	next  time.Time
	since int // items since the clock was last read
	ended bool
}

// startProgress begins a phase and reports it, if ctx has a ProgressFunc;
// else it returns nil.
func startProgress(ctx context.Context, op, phase, unit string, total int) *progress {
	fn, _ := ctx.Value(progressKey{}).(ProgressFunc)
	if fn == nil {
		return nil
	}
	now := time.Now()
	pr := &progress{fn: fn, p: Progress{Op: op, Phase: phase, Unit: unit, Total: int64(total)}, began: now, next: now.Add(ProgressInterval)}
	fn(pr.p)
	return pr
}

// add counts n items done, reporting if ProgressInterval has passed since
// the last report.
func (pr *progress) add(n int) {
	if pr == nil {
		return
	}
	pr.p.Done += int64(n)
	if pr.since += n; pr.since < progressCheckEvery {
		return
	}
	pr.since = 0
	if now := time.Now(); !now.Before(pr.next) {
		pr.next = now.Add(ProgressInterval)
		pr.p.Elapsed = now.Sub(pr.began)
		pr.fn(pr.p)
	}
}

// end makes the phase's Final report, once.
func (pr *progress) end() {
	if pr == nil || pr.ended {
		return
	}
	pr.ended = true
	pr.p.Final = true
	pr.p.Elapsed = time.Since(pr.began)
	pr.fn(pr.p)
}
