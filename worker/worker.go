// Package worker is uwf's claim loop: a long-running process that takes
// queued threads from a shared store under leases and steps them until
// they are done, suspended or failed (`uwf worker`, docs/CLI.md). Any
// number of workers, on any number of machines sharing a store (disk for
// one machine, PostgreSQL for many), cooperate through run records and
// the lease primitive of package thread: every transition is one
// compare-and-swap, expiries are read from the store's clock, and a
// worker that lost its lease ends its agent's process group and commits
// nothing.
//
// A worker learns of new work through the store's watch (runs/ and
// slots/ changes) and re-checks the queue on a timer of half the lease
// length, since an expiry sends no event. It claims only threads it can
// run: their working folder exists on its machine and it can build the
// agents they need; otherwise it records why on the run
// ([thread.Engine.NotClaimed]) and leaves it. A workflow's maxRunning
// (slots in the store, [thread.Engine.SetMaxRunning]) caps its running
// threads across all workers.
//
// A step that fails is retried with exponential backoff up to
// [Options.Retries] times, then the run is failed and leaves the queue;
// so is a run taken over more than [Options.MaxTakeovers] times (each
// worker running it died or froze: a poison pill). A thread's failure is
// logged in the user's words (internal/usermsg), the raw text at debug.
// Cancelling [Worker.Run]'s context drains: no new claims, running steps
// finish up to [Options.Drain], then whatever is still running is ended
// and handed back to the queue. A give-back waits for the store a lease
// length at most (the record has expired by then, and another worker
// takes the thread over), so a store that stopped answering cannot hold a
// draining worker.
package worker

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/usermsg"
	"github.com/uncaged/uwf/thread"
)

// Defaults of [Options].
const (
	DefaultRetries = 3
	DefaultBackoff = time.Second
	MaxBackoff     = 5 * time.Minute
	DefaultDrain   = 30 * time.Second
)

// WhyAgents begins the reason a worker records on a run it leaves because
// it cannot build the agents its thread needs ([thread.Run.WhyNotClaimed]
// reads "worker <id>: cannot run its agents: <why>"); `uwf thread show`
// suggests queueing the thread again with another agent.
const WhyAgents = "cannot run its agents: "

// Options configure a [Worker].
type Options struct {
	// ID names the worker in leases and logs; "" makes one from the host
	// name, the process id and a random suffix.
	ID string
	// Build names the worker's build (a version), recorded with each
	// commit it makes.
	Build string
	// Concurrency is how many threads it runs at once; 0 means 1.
	Concurrency int
	// Workflows, if not empty, are the only workflows (by name) it takes.
	Workflows []string
	// Lease is the lease length; 0 means [thread.DefaultLeaseLength].
	Lease time.Duration
	// Retries is how many times a failed step is retried before the run
	// fails; 0 means [DefaultRetries], negative none.
	Retries int
	// MaxTakeovers is how many times a run may be taken over (its lease
	// ran out: the worker running it died or froze) before a claim fails
	// it instead ([thread.LeaseOptions.MaxTakeovers]); 0 means
	// [thread.DefaultMaxTakeovers], negative no cap.
	MaxTakeovers int
	// Backoff is the first retry's delay, doubled at each failure up to
	// [MaxBackoff]; 0 means [DefaultBackoff].
	Backoff time.Duration
	// Drain is how long running steps may go on after Run's context is
	// cancelled; 0 means [DefaultDrain].
	Drain time.Duration
	// Run is the step options of every run (config, home, store URL,
	// secrets); its Agent is the default of runs queued without one.
	Run thread.RunOptions
	// Logger receives the structured log; nil discards it.
	Logger *slog.Logger
	// cwdExists reports whether a working folder exists (tests replace
	// it); nil uses os.Stat.
	cwdExists func(string) bool
}

// Worker claims and runs queued threads; see the package doc.
type Worker struct {
	eng  *thread.Engine
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	running map[string]bool // threads this worker runs now
	cache   map[string]*thread.Run
	checked map[string]string // "workflow hash|agent|cwd" -> why it cannot run ("" it can)
	wake    chan struct{}
	timer   *time.Timer // the next expiry's wake-up
	timerAt time.Time
}

// New returns a worker over eng's store.
func New(eng *thread.Engine, opts Options) *Worker {
	if opts.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "host"
		}
		var b [3]byte
		_, _ = crand.Read(b[:])
		opts.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Lease <= 0 {
		opts.Lease = thread.DefaultLeaseLength
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	if opts.cwdExists == nil {
		opts.cwdExists = func(dir string) bool {
			fi, err := os.Stat(dir)
			return err == nil && fi.IsDir()
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{eng: eng, opts: opts, log: log.With("worker", opts.ID),
		running: map[string]bool{}, cache: map[string]*thread.Run{}, checked: map[string]string{},
		wake: make(chan struct{}, 1)}
}

// ID returns the worker's name.
func (w *Worker) ID() string { return w.opts.ID }

// Run claims and runs threads until ctx is cancelled, then drains (see
// the package doc) and returns nil; it returns an error only if the store
// cannot be watched or read at the start.
func (w *Worker) Run(ctx context.Context) error {
	// The engine's shared watches of runs/ and slots/: the leases this
	// worker keeps use the first too.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var changed []<-chan struct{}
	for _, prefix := range []string{thread.RunPrefix, thread.SlotPrefix} {
		ch, stop, err := w.eng.Changes(watchCtx, prefix)
		if errors.Is(err, cas.ErrWatchUnsupported) {
			break
		}
		if err != nil {
			return fmt.Errorf("worker: watch the store: %w", err)
		}
		defer stop()
		changed = append(changed, ch)
	}
	w.log.Info("worker started", "build", w.opts.Build, "concurrency", w.opts.Concurrency,
		"workflows", w.opts.Workflows, "lease", w.opts.Lease)
	// hard outlives ctx by the drain: steps run under it.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	var jobs sync.WaitGroup
	for _, ch := range changed {
		go w.follow(watchCtx, ch)
	}
	tick := time.NewTicker(w.opts.Lease / 2)
	defer tick.Stop()
	w.poke()
	for {
		select {
		case <-ctx.Done():
			w.log.Info("draining", "running", w.runningCount(), "deadline", w.opts.Drain)
			done := make(chan struct{})
			go func() { jobs.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(w.opts.Drain):
				w.log.Warn("drain deadline reached: ending the running agents", "running", w.runningCount())
				hardCancel()
				<-done
			}
			w.log.Info("worker stopped")
			return nil
		case <-w.wake:
		case <-tick.C:
		}
		w.claimSome(ctx, hard, &jobs)
	}
}

func (w *Worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wakeAt pokes the claim loop after d, unless an earlier wake-up is set.
func (w *Worker) wakeAt(d time.Duration) {
	at := time.Now().Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.timerAt.IsZero() && w.timerAt.Before(at) && time.Now().Before(w.timerAt) {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timerAt = at
	w.timer = time.AfterFunc(d, w.poke)
}

func (w *Worker) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// follow wakes the claim loop at each signal of changed (runs/ or
// slots/ changes).
func (w *Worker) follow(ctx context.Context, changed <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			w.poke()
		}
	}
}

// scan lists the run records, reading only those that changed since the
// last scan.
func (w *Worker) scan(ctx context.Context) ([]*thread.Run, error) {
	var out []*thread.Run
	seen := map[string]bool{}
	var refs []cas.Ref
	var changed []cas.Hash
	for r, err := range w.eng.Repo().Refs().List(ctx, thread.RunPrefix) {
		if err != nil {
			if errors.Is(err, cas.ErrBadRef) {
				continue
			}
			return nil, err
		}
		refs = append(refs, r)
		w.mu.Lock()
		cur := w.cache[r.Name]
		w.mu.Unlock()
		if cur == nil || cur.Hash != r.Hash {
			changed = append(changed, r.Hash)
		}
	}
	// The changed records in one batch where the store has batch reads
	// (one statement on PostgreSQL), not one round trip each.
	ctx = cas.WithReadMemo(ctx)
	w.eng.Repo().Prefetch(ctx, changed)
	for _, r := range refs {
		seen[r.Name] = true
		w.mu.Lock()
		cur := w.cache[r.Name]
		w.mu.Unlock()
		if cur == nil || cur.Hash != r.Hash {
			run, err := w.eng.ReadRun(ctx, r.Hash)
			if err != nil {
				w.log.Warn("unreadable run record", "ref", r.Name, "err", err)
				continue
			}
			cur = run
			w.mu.Lock()
			w.cache[r.Name] = cur
			w.mu.Unlock()
		}
		out = append(out, cur)
	}
	w.mu.Lock()
	for name := range w.cache {
		if !seen[name] {
			delete(w.cache, name)
		}
	}
	w.mu.Unlock()
	return out, nil
}

// claimSome claims what it can while it has room.
func (w *Worker) claimSome(ctx, hard context.Context, jobs *sync.WaitGroup) {
	if w.runningCount() >= w.opts.Concurrency || ctx.Err() != nil {
		return
	}
	runs, err := w.scan(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("list the queue", "err", err)
		}
		return
	}
	now, err := w.eng.Repo().Store().Now(ctx)
	if err != nil {
		w.log.Warn("read the store's clock", "err", err)
		return
	}
	nowMs := now.UnixMilli()
	// Wake when the next backoff or lease ends (an expiry sends no
	// event); the timer of half the lease length is the backstop.
	next := int64(0)
	for _, r := range runs {
		if (r.State == thread.RunRetrying || r.State == thread.RunRunning) && r.Expiry > nowMs && (next == 0 || r.Expiry < next) {
			next = r.Expiry
		}
	}
	if next != 0 {
		w.wakeAt(time.Duration(next-nowMs)*time.Millisecond + 10*time.Millisecond)
	}
	// Oldest first, but from a random place among the claimable: workers
	// woken by one change would otherwise all race for the same run.
	slices.SortFunc(runs, func(a, b *thread.Run) int { return compareStrings(a.Thread, b.Thread) })
	var cands []*thread.Run
	for _, r := range runs {
		if claimable(r, nowMs) {
			cands = append(cands, r)
		}
	}
	if len(cands) > 1 {
		k := rand.IntN(min(len(cands), 4*w.opts.Concurrency*2))
		cands = append(cands[k:], cands[:k]...)
	}
	for _, r := range cands {
		if w.runningCount() >= w.opts.Concurrency || ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		mine := w.running[r.Thread]
		w.mu.Unlock()
		if mine || !claimable(r, nowMs) {
			continue
		}
		if len(w.opts.Workflows) > 0 && !slices.Contains(w.opts.Workflows, r.Workflow) {
			continue
		}
		if why := w.cannotRun(ctx, r); why != "" {
			if wrote, err := w.eng.NotClaimed(ctx, r, w.opts.ID, why); err != nil {
				w.log.Warn("record why a thread was not claimed", "thread", r.Thread, "err", err)
			} else if wrote {
				w.log.Info("not claimed", "thread", r.Thread, "why", usermsg.Message(why))
			}
			continue
		}
		w.tryClaim(ctx, hard, jobs, r)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// claimable reports whether r can be claimed now by the store's clock.
func claimable(r *thread.Run, now int64) bool {
	switch r.State {
	case thread.RunQueued:
		return true
	case thread.RunRetrying, thread.RunRunning:
		return now >= r.Expiry
	}
	return false
}

// cannotRun says why this worker cannot run r's thread ("" if it can): its
// working folder is missing here, or an agent it needs cannot be built.
func (w *Worker) cannotRun(ctx context.Context, r *thread.Run) string {
	if !w.opts.cwdExists(r.Cwd) {
		return fmt.Sprintf("the working folder %s does not exist on this machine", r.Cwd)
	}
	start, err := w.startOf(ctx, r.Thread)
	if err != nil {
		return "" // the claim and the step will say what is wrong
	}
	key := start.Workflow.String() + "|" + r.Agent + "|" + r.Cwd
	w.mu.Lock()
	why, ok := w.checked[key]
	w.mu.Unlock()
	if ok {
		return why
	}
	opts := w.opts.Run
	if r.Agent != "" {
		opts.Agent = r.Agent
	}
	if err := w.eng.CheckRun(ctx, start.Workflow, r.Cwd, &opts); err != nil {
		if ctx.Err() != nil {
			return ""
		}
		why = WhyAgents + opts.Mask(err.Error())
	}
	w.mu.Lock()
	w.checked[key] = why
	w.mu.Unlock()
	return why
}

// startOf reads a thread's start node.
func (w *Worker) startOf(ctx context.Context, id string) (*thread.Start, error) {
	head, err := w.eng.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	n, err := w.eng.Node(ctx, head)
	if err != nil {
		return nil, err
	}
	if n.Kind != thread.KindStart {
		if n, err = w.eng.Node(ctx, n.StartHash()); err != nil {
			return nil, err
		}
	}
	if n.Start == nil {
		return nil, fmt.Errorf("thread %s: no start node", id)
	}
	return n.Start, nil
}

// tryClaim takes a slot (if the workflow has a cap) and the run's lease,
// and starts running the thread.
func (w *Worker) tryClaim(ctx, hard context.Context, jobs *sync.WaitGroup, r *thread.Run) {
	slot, err := w.eng.HoldSlot(ctx, r.Workflow, r.Thread, w.opts.ID, w.opts.Lease)
	if err != nil {
		if !errors.Is(err, thread.ErrNoSlot) {
			w.log.Warn("take a slot", "thread", r.Thread, "workflow", r.Workflow, "err", err)
		}
		return
	}
	l, err := w.eng.Claim(ctx, r.Thread, w.opts.ID, &thread.LeaseOptions{Length: w.opts.Lease, Build: w.opts.Build,
		MaxTakeovers: w.opts.MaxTakeovers, Logger: w.log})
	if err != nil {
		if slot != nil {
			if gerr := w.eng.GiveHold(context.WithoutCancel(ctx), slot); gerr != nil {
				w.log.Warn("give back a slot", "workflow", r.Workflow, "err", gerr)
			}
		}
		switch {
		case errors.Is(err, thread.ErrTakeoverLimit):
			logFailure(w.log.With("thread", r.Thread), slog.LevelError, "run failed: taken over too many times", err,
				"workflow", r.Workflow, "attempt", r.Attempt)
		case !errors.Is(err, cas.ErrConflict) && !errors.Is(err, cas.ErrNotFound) && !errors.Is(err, thread.ErrRunFailed):
			logFailure(w.log.With("thread", r.Thread), slog.LevelWarn, "claim", err)
		}
		return
	}
	run := l.Run()
	attrs := []any{"thread", r.Thread, "workflow", r.Workflow, "attempt", run.Attempt}
	if slot != nil {
		attrs = append(attrs, "slot", slot.Slot().Index)
	}
	if r.State == thread.RunRunning {
		w.log.Info("took over", append(attrs, "from", r.Worker)...)
	} else {
		w.log.Info("claimed", attrs...)
	}
	w.mu.Lock()
	w.running[r.Thread] = true
	w.mu.Unlock()
	jobs.Add(1)
	go func() {
		defer jobs.Done()
		w.runThread(ctx, hard, l, slot)
		if slot != nil {
			g := giveBack{ctx: context.WithoutCancel(hard), d: w.opts.Lease}
			if err := g.with(func(ctx context.Context) error { return w.eng.GiveHold(ctx, slot) }); err != nil {
				w.log.Warn("give back a slot", "workflow", r.Workflow, "err", err)
			}
		}
		w.mu.Lock()
		delete(w.running, r.Thread)
		w.mu.Unlock()
		w.poke()
	}()
}

// runThread steps a leased thread until it stops, fails, the lease is
// lost, or the worker drains; then it gives the lease back as fits. slot
// is the slot its run holds (nil: its workflow has no cap): a call gives
// it back while its branches run, and the branches obey their own
// workflows' caps.
func (w *Worker) runThread(ctx, hard context.Context, l *thread.Lease, slot *thread.SlotHold) {
	id := l.Thread()
	run := l.Run()
	lctx, stop := l.Keep(hard)
	opts := w.opts.Run
	opts.ObeySlots, opts.Slot = true, slot
	if run.Agent != "" {
		opts.Agent = run.Agent
	}
	bg := giveBack{ctx: context.WithoutCancel(hard), d: w.opts.Lease}
	steps := 0
	log := w.log.With("thread", id, "attempt", run.Attempt)
	for {
		if ctx.Err() != nil {
			stop()
			w.handBack(bg, l, log, "the worker is draining")
			return
		}
		res, err := w.eng.Step(lctx, id, &opts)
		if lost := l.Err(); lost != nil || errors.Is(context.Cause(lctx), thread.ErrLeaseLost) {
			stop()
			if lost == nil {
				lost = context.Cause(lctx)
			}
			logFailure(log, slog.LevelWarn, "lease lost: the agent was ended and nothing more is committed", lost)
			return
		}
		var ce *thread.ConflictError
		var se *thread.StepError
		switch {
		case err == nil && res.Kind == thread.EventStep:
			steps++
			log.Info("step", "depth", res.Depth, "role", res.Role, "agent", res.Agent, "status", res.Status)
			continue
		case err == nil:
			stop()
			log.Info("thread stopped", "kind", res.Kind, "depth", res.Depth, "steps", steps)
			w.release(bg, l, log, res.Kind)
			return
		case errors.Is(err, thread.ErrNotActive):
			stop()
			logFailure(log, slog.LevelInfo, "thread not active", err)
			w.release(bg, l, log, "not active")
			return
		case errors.As(err, &ce):
			// Another writer moved the head (a forced manual step, a
			// former holder's last commit): go on from the new head.
			log.Info("the head moved; going on from it", "head", ce.Current)
			if ce.Current.IsZero() {
				stop()
				w.release(bg, l, log, "removed")
				return
			}
			continue
		case hard.Err() != nil || errors.Is(err, context.Canceled) && ctx.Err() != nil:
			stop()
			w.handBack(bg, l, log, "the worker stopped at its drain deadline")
			return
		case errors.As(err, &se), err != nil:
			stop()
			w.failed(bg, l, log, err)
			return
		}
	}
}

// giveBack is the context of a lease's give-back, made at each use: it
// outlives the worker's cancellation but not a lease length (the record
// has expired by then, and another worker takes the thread over), so a
// store that stopped answering cannot hold a draining worker forever.
type giveBack struct {
	ctx context.Context
	d   time.Duration
}

func (g giveBack) with(f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(g.ctx, g.d)
	defer cancel()
	return f(ctx)
}

func (w *Worker) release(g giveBack, l *thread.Lease, log *slog.Logger, why string) {
	if err := g.with(func(ctx context.Context) error { return l.Release(ctx, why) }); err != nil {
		log.Warn("release the lease", "err", err)
	}
}

func (w *Worker) handBack(g giveBack, l *thread.Lease, log *slog.Logger, why string) {
	if err := g.with(func(ctx context.Context) error { return l.Requeue(ctx, why) }); err != nil {
		log.Warn("hand the thread back", "err", err)
		return
	}
	log.Info("handed back to the queue", "why", why)
}

// failed retries a failed step with backoff, or fails the run when it is
// out of retries.
func (w *Worker) failed(g giveBack, l *thread.Lease, log *slog.Logger, cause error) {
	// A step masks what it records; an error from before the agent ran
	// (building it, say) may still name a secret.
	cause = w.opts.Run.MaskError(cause)
	failures := l.Run().Failures + 1
	retries := max(w.opts.Retries, 0)
	if failures > retries {
		if err := g.with(func(ctx context.Context) error { return l.Fail(ctx, cause) }); err != nil {
			log.Warn("fail the run", "err", err)
			return
		}
		logFailure(log, slog.LevelError, "run failed: out of retries", cause, "failures", failures)
		return
	}
	delay := w.opts.Backoff << (failures - 1)
	if delay > MaxBackoff || delay <= 0 {
		delay = MaxBackoff
	}
	if err := g.with(func(ctx context.Context) error { return l.Retry(ctx, cause, delay) }); err != nil {
		log.Warn("schedule a retry", "err", err)
		return
	}
	logFailure(log, slog.LevelWarn, "step failed: will retry", cause, "failure", failures, "of", retries+1, "backoff", delay)
}

// logFailure logs msg at level with attrs and cause, a thread's failure,
// in the user's words ("err": what `uwf thread show` says, without the
// library's internal words such as "moderator:" or "cas: not found");
// when those differ from the raw text, a debug line "raw error" carries
// the raw one for whoever debugs uwf itself.
func logFailure(log *slog.Logger, level slog.Level, msg string, cause error, attrs ...any) {
	raw := cause.Error()
	plain := usermsg.Message(raw)
	log.Log(context.Background(), level, msg, append(attrs, "err", plain)...)
	if plain != raw {
		log.Debug("raw error", "of", msg, "err", raw)
	}
}
