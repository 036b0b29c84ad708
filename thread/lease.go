package thread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
)

// Lease defaults.
const (
	DefaultLeaseLength = 30 * time.Second
	// DefaultMaxTakeovers is how many times a run may be taken over
	// before a claim fails it (see [LeaseOptions.MaxTakeovers]).
	DefaultMaxTakeovers = 10
)

// ErrTakeoverLimit is wrapped by the error of a claim that failed a run
// taken over more than [LeaseOptions.MaxTakeovers] times (a poison pill:
// its agent kills or freezes every worker that runs it). It wraps
// [ErrRunFailed].
var ErrTakeoverLimit = fmt.Errorf("%w: taken over too many times", ErrRunFailed)

// ErrLeaseLost is wrapped by every *[LeaseLostError].
var ErrLeaseLost = errors.New("lease lost")

// LeaseLostError says why a holder lost its lease. It wraps [ErrLeaseLost]
// and, when another holder took the run, [cas.ErrConflict].
type LeaseLostError struct {
	Thread string
	Worker string // the holder that lost it
	Why    string // "expired by this process's clock", "taken by worker X", "run record dropped", ...
}

// Error says which worker lost the lease on which thread, and why.
func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("thread %s: worker %s lost its lease: %s", e.Thread, e.Worker, e.Why)
}

// Unwrap returns [ErrLeaseLost].
func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// LeaseOptions configure a lease; nil means defaults.
type LeaseOptions struct {
	// Length is how long a lease lasts without renewal, by the store's
	// clock; 0 means [DefaultLeaseLength]. It is renewed every third of
	// it.
	Length time.Duration
	// Margin is how long before the stored expiry the holder's own
	// monotonic clock deems the lease gone (it ends its agent and commits
	// nothing from then on); 0 means a sixth of Length. It covers a commit
	// in flight and the drift between this machine's clock and the
	// store's.
	Margin time.Duration
	// Build names the holder's build (a version), for the commit messages.
	Build string
	// MaxTakeovers caps the takeovers of a run: a claim that would take
	// over a run whose lease already ran out more than this many times
	// since it was queued (its attempt less its recorded failures: the
	// claims that ended without one, which also counts a draining
	// worker's hand-offs) fails the run instead, with an error saying how
	// many times it was taken over; `uwf thread queue` queues it again
	// with the count reset. 0 means [DefaultMaxTakeovers], negative no
	// cap.
	MaxTakeovers int
	// Agent, for [Engine.Acquire] creating a record, is the agent asked
	// for ([EnqueueOptions.Agent]).
	Agent string
	// Logger receives the renewals' failures; nil discards them.
	Logger interface {
		Warn(msg string, args ...any)
	}
}

func (o *LeaseOptions) withDefaults() LeaseOptions {
	var v LeaseOptions
	if o != nil {
		v = *o
	}
	if v.Length <= 0 {
		v.Length = DefaultLeaseLength
	}
	if v.Margin <= 0 || v.Margin >= v.Length {
		v.Margin = v.Length / 6
	}
	if v.MaxTakeovers == 0 {
		v.MaxTakeovers = DefaultMaxTakeovers
	}
	return v
}

// Lease is a held lease on one thread's run: see "Runs and leases" in the
// package documentation for its life (get, keep, work under it, give it
// back). It is safe for concurrent use.
type Lease struct {
	e      *Engine
	id     string
	worker string
	opts   LeaseOptions

	mu    sync.Mutex
	run   *Run      // the record this holder wrote last
	valid time.Time // by the monotonic clock: the lease may be gone after it
	// unanswered is when the earliest renewal not yet known applied or
	// refused began (zero if none): one applied whose answer was lost
	// counts from it.
	unanswered time.Time

	lostOnce sync.Once
	lost     chan struct{}
	lostErr  error
}

// Thread returns the leased thread's ID.
func (l *Lease) Thread() string { return l.id }

// Worker returns the holder's name.
func (l *Lease) Worker() string { return l.worker }

// Run returns a copy of the run record the holder wrote last.
func (l *Lease) Run() Run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.run
}

// Attempt returns the claim number of this lease (1 for the first claim).
func (l *Lease) Attempt() int { return l.Run().Attempt }

// Lost returns a channel closed when the lease is known to be lost;
// [Lease.Err] then says why.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err returns why the lease was lost (a *[LeaseLostError]), or nil.
func (l *Lease) Err() error {
	select {
	case <-l.lost:
		return l.lostErr
	default:
		return nil
	}
}

// ValidUntil returns when, by this process's monotonic clock, the lease may
// have expired: the holder must commit nothing after it.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.valid
}

// Check returns nil while the lease is held and valid by this process's
// monotonic clock, else a *[LeaseLostError] (and marks the lease lost).
// Commits under [Lease.Keep]'s context call it right before moving the
// thread's head.
func (l *Lease) Check() error {
	if err := l.Err(); err != nil {
		return err
	}
	if !time.Now().Before(l.ValidUntil()) {
		l.markLost("its expiry (less the margin) passed by this process's clock before it was renewed")
		return l.Err()
	}
	return nil
}

// label is what a commit under the lease adds to the thread's log message.
func (l *Lease) label() string {
	s := "worker " + l.worker
	if l.opts.Build != "" {
		s += " build " + l.opts.Build
	}
	return fmt.Sprintf("%s attempt %d", s, l.Attempt())
}

func (l *Lease) markLost(why string) {
	l.lostOnce.Do(func() {
		l.lostErr = &LeaseLostError{Thread: l.id, Worker: l.worker, Why: why}
		close(l.lost)
	})
}

// Claim takes thread id's run for worker: a queued run, a retrying one
// whose backoff ended, or a running one whose lease expired by the store's
// clock (a takeover), each with one compare-and-swap of runs/<id> to a
// running record (attempt + 1, expiry = the store's now + the length),
// logged "claim by <worker> attempt <n>" (or "takeover by <worker> attempt
// <n> from <old worker>"). A takeover past [LeaseOptions.MaxTakeovers]
// instead moves the record to failed (logged "fail by <worker>: taken over
// <n> times") and returns an error wrapping [ErrTakeoverLimit]. A lease
// still held fails with a
// *[LeaseHeldError], a retrying run still in its backoff with an error
// wrapping [cas.ErrConflict], a failed run with one wrapping
// [ErrRunFailed], no record with one wrapping [ErrNotQueued], and a record
// that changed under the claim with a *[cas.ConflictError].
func (e *Engine) Claim(ctx context.Context, id, worker string, opts *LeaseOptions) (*Lease, error) {
	return e.claim(ctx, id, worker, opts, false)
}

// Acquire is [Engine.Claim] for a process that runs a thread without the
// queue (the HTTP server, a parallel branch's runner): when the thread has
// no run record it creates one, already running under worker's lease
// (logged "acquire by <worker>"), with one compare-and-swap; otherwise it
// claims as Claim does. Either way the store moves to format version 2
// with its first run node.
func (e *Engine) Acquire(ctx context.Context, id, worker string, opts *LeaseOptions) (*Lease, error) {
	return e.claim(ctx, id, worker, opts, true)
}

func (e *Engine) claim(ctx context.Context, id, worker string, o *LeaseOptions, create bool) (*Lease, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	if worker == "" {
		return nil, fmt.Errorf("claim thread %s: %w: no worker name", id, cas.ErrInvalid)
	}
	opts := o.withDefaults()
	cur, err := e.RunOf(ctx, id)
	if err != nil {
		return nil, err
	}
	t0 := time.Now() // before the store's clock is read: local validity ends first
	now, err := e.storeNow(ctx)
	if err != nil {
		return nil, err
	}
	var next Run
	var msg string
	switch {
	case cur == nil && !create:
		return nil, fmt.Errorf("claim thread %s: %w", id, ErrNotQueued)
	case cur == nil:
		hn, err := e.headNode(ctx, id)
		if err != nil {
			return nil, err
		}
		sn := hn
		if hn.Kind != KindStart {
			if sn, err = e.Node(ctx, hn.StartHash()); err != nil {
				return nil, fmt.Errorf("claim thread %s: start: %w", id, err)
			}
		}
		next = Run{Thread: id, Workflow: e.workflowName(ctx, sn.Start.Workflow), Agent: opts.Agent, Cwd: sn.Start.Cwd}
		msg = "acquire by " + worker
	case cur.State == RunQueued:
		next, msg = *cur, "claim by "+worker
	case cur.State == RunRetrying:
		if now < cur.Expiry {
			return nil, fmt.Errorf("claim thread %s: %w: it is retrying after a failure, not before %s (store clock)",
				id, cas.ErrConflict, cur.ExpiryTime().Format(time.RFC3339Nano))
		}
		next, msg = *cur, "claim by "+worker
	case cur.State == RunRunning:
		if now < cur.Expiry {
			return nil, &LeaseHeldError{Thread: id, Worker: cur.Worker, Expiry: cur.ExpiryTime()}
		}
		if n := cur.Attempt - cur.Failures; opts.MaxTakeovers > 0 && n > opts.MaxTakeovers {
			return nil, e.failTakenOver(ctx, cur, worker, n, opts.MaxTakeovers, now)
		}
		next, msg = *cur, "takeover by "+worker
	case cur.State == RunFailed:
		return nil, fmt.Errorf("claim thread %s: %w (%s): queue it again first", id, ErrRunFailed, cur.Error)
	default:
		return nil, fmt.Errorf("claim thread %s: %w: run state %q", id, cas.ErrInvalid, cur.State)
	}
	next.Hash = 0
	next.State, next.Worker, next.Expiry = RunRunning, worker, now+opts.Length.Milliseconds()
	next.Attempt++
	next.WhyNotClaimed, next.At = "", now
	msg += fmt.Sprintf(" attempt %d", next.Attempt)
	if cur != nil && cur.State == RunRunning {
		msg += " from " + cur.Worker
	}
	var old cas.Hash
	if cur != nil {
		old = cur.Hash
	}
	h, err := e.swapRun(ctx, id, old, &next, msg)
	if err != nil {
		return nil, fmt.Errorf("claim thread %s: %w", id, err)
	}
	next.Hash = h
	l := &Lease{e: e, id: id, worker: worker, opts: opts, run: &next,
		valid: t0.Add(opts.Length - opts.Margin), lost: make(chan struct{})}
	return l, nil
}

// failTakenOver moves cur, a running record whose lease ran out for the
// n-th time, to failed: more than max takeovers.
func (e *Engine) failTakenOver(ctx context.Context, cur *Run, worker string, n, max int, now int64) error {
	next := *cur
	next.Hash, next.State, next.Worker, next.Expiry, next.WhyNotClaimed, next.At = 0, RunFailed, "", 0, "", now
	next.Error = fmt.Sprintf("taken over %d times (more than the limit of %d): every worker that ran it died, froze "+
		"or lost the store before its lease ended (does its agent kill or hang its worker?); "+
		"uwf thread queue %s queues it again", n, max, cur.Thread)
	if _, err := e.swapRun(ctx, cur.Thread, cur.Hash, &next, fmt.Sprintf("fail by %s: taken over %d times", worker, n)); err != nil {
		return fmt.Errorf("claim thread %s: %w", cur.Thread, err)
	}
	return fmt.Errorf("claim thread %s: %w: %s", cur.Thread, ErrTakeoverLimit, next.Error)
}

// Renew extends the lease to the store's now plus its length: one
// compare-and-swap of runs/<thread> from the holder's record (logged
// "renew by <worker>"). The new validity counts from the moment before the
// store's clock was read (a slow answer shortens it, never lengthens it
// past the stored expiry). A lease already invalid by this process's clock
// is not renewed (someone may hold it now); that, and a record that
// changed hands, fail with a *[LeaseLostError] and mark the lease lost.
// Other errors (the store unreachable, ctx ended) leave the lease as it
// was: the caller may try again while it is valid. A renewal whose answer
// was lost but which was applied is recognised by the next one (the record
// is still this holder's running record of this attempt) and adopted,
// with its validity counted from the earliest renewal still unanswered.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Check(); err != nil {
		return err
	}
	t0 := time.Now()
	l.mu.Lock()
	if l.unanswered.IsZero() {
		l.unanswered = t0
	}
	l.mu.Unlock()
	now, err := l.e.storeNow(ctx)
	if err != nil {
		return err
	}
	cur := l.Run()
	next := cur
	next.Hash, next.Expiry, next.At = 0, now+l.opts.Length.Milliseconds(), now
	h, err := l.e.swapRun(ctx, l.id, cur.Hash, &next, "renew by "+l.worker)
	if errors.Is(err, cas.ErrConflict) {
		return l.adopt(ctx)
	}
	if err != nil {
		return fmt.Errorf("thread %s: renew the lease: %w", l.id, err)
	}
	next.Hash = h
	l.renewed(&next, t0)
	return nil
}

// renewed records a renewal to run, sent after t0 (by the monotonic
// clock): the lease is valid until t0 plus its length less the margin,
// unless it was lost meanwhile (a lost lease stays lost).
func (l *Lease) renewed(run *Run, t0 time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Err() != nil {
		return
	}
	l.run, l.unanswered = run, time.Time{}
	if v := t0.Add(l.opts.Length - l.opts.Margin); v.After(l.valid) {
		l.valid = v
	}
}

// adopt is Renew's answer to a record that is no longer the one the
// holder wrote last: if it is still this holder's running record of this
// attempt, a renewal whose answer was lost wrote it, sent after the
// earliest unanswered renewal began; else the lease is lost.
func (l *Lease) adopt(ctx context.Context) error {
	h, err := l.e.refs.Get(ctx, runRef(l.id))
	if err != nil && !errors.Is(err, cas.ErrNotFound) {
		return fmt.Errorf("thread %s: renew the lease: read the run record: %w", l.id, err)
	}
	if h.IsZero() {
		l.markLost("its run record was dropped (the thread was killed or removed)")
		return l.Err()
	}
	r, err := l.e.ReadRun(ctx, h)
	if err != nil {
		return fmt.Errorf("thread %s: renew the lease: %w", l.id, err)
	}
	cur := l.Run()
	l.mu.Lock()
	t0 := l.unanswered
	l.mu.Unlock()
	if r.State != RunRunning || r.Worker != l.worker || r.Attempt != cur.Attempt || t0.IsZero() {
		l.markLost("its run record changed hands (taken over, or dropped by kill or rm)")
		return l.Err()
	}
	if err := l.Check(); err != nil {
		return err
	}
	l.renewed(r, t0)
	return nil
}

// Keep renews the lease in the background every third of its length and
// returns a context derived from ctx that is cancelled, with a
// *[LeaseLostError] as its cause ([context.Cause]), as soon as the lease
// is lost: a renewal found the record changed, the store's watch showed
// it taken or dropped, or the local validity ran out (renewals failing or
// slow, the process frozen). A renewal runs apart from the validity's
// deadline, which fires on time however long the store takes to answer;
// one that fails is tried again soon (an eighth of the validity left,
// between 10 ms and a fifteenth of the length), each try bounded by the
// validity. Steps run under that context commit only while the lease is
// valid (see [Lease.Check]) and end their agent when it is cancelled.
// Call stop, which waits for the background work to end, before
// releasing; it does not cancel the context's parent.
func (l *Lease) Keep(ctx context.Context) (lctx context.Context, stop func()) {
	lctx, cancel := context.WithCancelCause(withFence(ctx, l))
	bg, bgStop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // renewals and the validity deadline
		defer wg.Done()
		interval := l.opts.Length / 3
		// Every third of the length, or sooner if the claim took long
		// enough that less than two thirds of its validity are left.
		renewAt := time.NewTimer(min(interval, time.Until(l.ValidUntil())/2))
		defer renewAt.Stop()
		var renewing chan error // the renewal under way, or nil
		for {
			deadline := time.NewTimer(time.Until(l.ValidUntil()))
			select {
			case <-bg.Done():
				deadline.Stop()
				return
			case <-l.lost:
				deadline.Stop()
				cancel(l.Err())
				return
			case <-deadline.C:
				if l.Check() != nil {
					cancel(l.Err())
					return
				}
			case <-renewAt.C:
				ch := make(chan error, 1)
				renewing = ch
				wg.Add(1)
				go func() {
					defer wg.Done()
					// A try ends with the validity (a later answer could
					// not be used) or after half a renewal interval.
					rctx, rcancel := context.WithDeadline(bg, minTime(l.ValidUntil(), time.Now().Add(interval/2)))
					defer rcancel()
					ch <- l.Renew(rctx)
				}()
			case err := <-renewing:
				renewing = nil
				switch {
				case errors.Is(err, ErrLeaseLost):
					deadline.Stop()
					cancel(err)
					return
				case err != nil && bg.Err() == nil:
					if l.opts.Logger != nil {
						l.opts.Logger.Warn("lease renewal failed; retrying", "thread", l.id, "worker", l.worker, "err", err)
					}
					renewAt.Reset(min(max(time.Until(l.ValidUntil())/8, 10*time.Millisecond), l.opts.Length/15))
				default:
					renewAt.Reset(min(interval, time.Until(l.ValidUntil())/2))
				}
			}
			deadline.Stop()
		}
	}()
	go func() { // the record dropped or taken, seen at once through the watch
		defer wg.Done()
		l.watch(bg, cancel)
	}()
	return lctx, func() {
		bgStop()
		wg.Wait()
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// watch follows runs/<thread> (through the Engine's shared watch of
// runs/) and marks the lease lost when the record is deleted or is no
// longer this holder's running record.
func (l *Lease) watch(ctx context.Context, cancel context.CancelCauseFunc) {
	name := runRef(l.id)
	changed, stop, err := l.e.Changes(ctx, name)
	for err != nil {
		if errors.Is(err, cas.ErrWatchUnsupported) {
			return // unwatchable refs: the renewals find out
		}
		// The store did not answer: try again each second meanwhile.
		select {
		case <-ctx.Done():
			return
		case <-l.lost:
			return
		case <-time.After(time.Second):
		}
		changed, stop, err = l.e.Changes(ctx, name)
	}
	defer stop()
	// A change between the claim and the subscription: read once, and
	// again at each signal.
	for {
		if h, err := l.e.refs.Get(ctx, name); err == nil || errors.Is(err, cas.ErrNotFound) {
			if l.notMine(ctx, h) {
				cancel(l.Err())
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-l.lost:
			return
		case <-changed:
		}
	}
}

// notMine reports (and marks the lease lost) whether the record at h is
// not this holder's running record of this attempt.
func (l *Lease) notMine(ctx context.Context, h cas.Hash) bool {
	if h.IsZero() {
		l.markLost("its run record was dropped (the thread was killed or removed)")
		return true
	}
	cur := l.Run()
	if h == cur.Hash {
		return false
	}
	r, err := l.e.ReadRun(ctx, h)
	if err != nil {
		return false // unreadable now: the renewal decides
	}
	if r.State == RunRunning && r.Worker == l.worker && r.Attempt == cur.Attempt {
		return false // a renewal of ours
	}
	why := "its run record moved to " + r.State
	if r.State == RunRunning {
		why = fmt.Sprintf("worker %s took it over (attempt %d)", r.Worker, r.Attempt)
	}
	l.markLost(why)
	return true
}

// finish moves the holder's record to next (zero: delete) with message.
func (l *Lease) finish(ctx context.Context, next *Run, message string) error {
	cur := l.Run()
	var err error
	if next == nil {
		err = l.e.refs.CompareAndSwap(ctx, runRef(l.id), cur.Hash, 0, message)
	} else {
		_, err = l.e.swapRun(ctx, l.id, cur.Hash, next, message)
	}
	if errors.Is(err, cas.ErrConflict) {
		l.markLost("its run record changed hands before it was given back")
		return l.Err()
	}
	if err != nil {
		return fmt.Errorf("thread %s: give back the lease: %w", l.id, err)
	}
	l.markLost("given back")
	return nil
}

// Release gives the lease back because the thread needs no more running
// (done, suspended, killed): runs/<thread> is deleted, logged "release by
// <worker>: <why>".
func (l *Lease) Release(ctx context.Context, why string) error {
	msg := "release by " + l.worker
	if why != "" {
		msg += ": " + why
	}
	return l.finish(ctx, nil, msg)
}

// Requeue gives the lease back with the run queued again, for another
// worker (a draining worker's hand-off), logged "requeue by <worker>:
// <why>". The attempt count is kept.
func (l *Lease) Requeue(ctx context.Context, why string) error {
	now, err := l.e.storeNow(ctx)
	if err != nil {
		return err
	}
	next := l.Run()
	next.Hash, next.State, next.Worker, next.Expiry, next.At = 0, RunQueued, "", 0, now
	return l.finish(ctx, &next, "requeue by "+l.worker+": "+why)
}

// Retry gives the lease back after a failed step: the run is retrying,
// its failure count one more and its error cause, claimable again once
// delay has passed by the store's clock. Logged "retry by <worker>".
func (l *Lease) Retry(ctx context.Context, cause error, delay time.Duration) error {
	now, err := l.e.storeNow(ctx)
	if err != nil {
		return err
	}
	next := l.Run()
	next.Hash, next.State, next.Worker, next.Expiry, next.At = 0, RunRetrying, "", now+delay.Milliseconds(), now
	next.Failures++
	next.Error = errText(cause)
	return l.finish(ctx, &next, fmt.Sprintf("retry by %s after failure %d", l.worker, next.Failures))
}

// Fail gives the lease back with the run failed: it leaves the queue,
// visibly, and is not claimed again until queued again. Logged "fail by
// <worker>".
func (l *Lease) Fail(ctx context.Context, cause error) error {
	now, err := l.e.storeNow(ctx)
	if err != nil {
		return err
	}
	next := l.Run()
	next.Hash, next.State, next.Worker, next.Expiry, next.At = 0, RunFailed, "", 0, now
	next.Failures++
	next.Error = errText(cause)
	return l.finish(ctx, &next, fmt.Sprintf("fail by %s after failure %d", l.worker, next.Failures))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	s := []rune(strings.ToValidUTF8(err.Error(), "\uFFFD"))
	if len(s) > 2000 {
		return string(s[:2000]) + "…"
	}
	return string(s)
}

// fenceKey carries the leases a context's work runs under: commits to a
// leased thread check its lease.
type fenceKey struct{}

// fence is one lease in a context, and the ones of the contexts it was
// derived from (a parent thread's lease around a branch's, say).
type fence struct {
	l      *Lease
	parent *fence
}

func withFence(ctx context.Context, l *Lease) context.Context {
	f, _ := ctx.Value(fenceKey{}).(*fence)
	return context.WithValue(ctx, fenceKey{}, &fence{l: l, parent: f})
}

// fenceOf returns the lease on thread id that ctx's work runs under, or
// nil.
func fenceOf(ctx context.Context, id string) *Lease {
	f, _ := ctx.Value(fenceKey{}).(*fence)
	for ; f != nil; f = f.parent {
		if f.l.id == id {
			return f.l
		}
	}
	return nil
}
