package thread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
)

// RunPrefix is the ref-name prefix of run records: runs/<thread> points at
// the thread's run node while it is queued, running, retrying or failed.
const RunPrefix = "runs/"

// A thread's run: what the work queue is doing with it. It is a word apart
// from the thread's status (its head's: active, done, killed, suspended).
const (
	RunQueued   = "queued"   // waiting for a worker
	RunRunning  = "running"  // leased: a worker (or another lease holder) runs it
	RunRetrying = "retrying" // a step failed; claimable again once its backoff ends
	RunFailed   = "failed"   // out of retries: left the queue, visibly, until queued again
	RunNone     = "none"     // no run record: nothing queued (what a thread's run shows)
)

// Run is a thread's run record: the payload of the node a ref
// runs/<thread> points at (a built-in kind of format version 2, docs/FORMAT.md
// "Format version 2"). Every transition is one compare-and-swap of that ref.
// Times are Unix milliseconds by the store's clock ([cas.Store.Now]: the
// database server's on PostgreSQL), never a worker's.
type Run struct {
	Hash     cas.Hash `json:"hash"`     // the run node (not stored in it)
	Thread   string   `json:"thread"`   // the thread, by ID: a string, not an edge, so a run keeps nothing alive
	Workflow string   `json:"workflow"` // the thread's workflow name, for workers that take only some
	State    string   `json:"state"`    // queued, running, retrying or failed
	Worker   string   `json:"worker"`   // the lease holder, while running ("" otherwise)
	// Expiry is when the lease ends, while running; when the backoff ends,
	// while retrying; 0 otherwise.
	Expiry   int64  `json:"expiry"`
	Attempt  int    `json:"attempt"`  // how many times the run was claimed (1 for the first claim)
	Failures int    `json:"failures"` // failed steps since it was queued
	Agent    string `json:"agent"`    // the agent asked for at queue time ("" for the config's)
	Cwd      string `json:"cwd"`      // the working folder the thread needs (its start's)
	// WhyNotClaimed says why a worker left the run queued ("worker <id>:
	// <reason>"), e.g. a missing working folder or an agent it cannot
	// build; "" once claimed.
	WhyNotClaimed string `json:"whyNotClaimed"`
	Error         string `json:"error"` // the last failure, for retrying and failed
	At            int64  `json:"at"`    // when this record was written
}

// Payload returns the run node's payload.
func (r *Run) Payload() map[string]any {
	return map[string]any{
		"thread": r.Thread, "workflow": r.Workflow, "state": r.State, "worker": r.Worker,
		"expiry": float64(r.Expiry), "attempt": float64(r.Attempt), "failures": float64(r.Failures),
		"agent": r.Agent, "cwd": r.Cwd, "whyNotClaimed": r.WhyNotClaimed, "error": r.Error, "at": float64(r.At),
	}
}

// DecodeRun reads a run node. The error wraps [cas.ErrInvalid] for a node
// of another kind.
func DecodeRun(h cas.Hash, n cas.Node) (*Run, error) {
	if n.Type != cas.RunSchema {
		return nil, fmt.Errorf("%w: %s is not a run node (type %s)", cas.ErrInvalid, h, n.Type)
	}
	f := newFields(n.Payload)
	r := &Run{Hash: h, Thread: f.str("thread"), Workflow: f.str("workflow"), State: f.str("state"),
		Worker: f.str("worker"), Expiry: f.int("expiry"), Attempt: int(f.int("attempt")),
		Failures: int(f.int("failures")), Agent: f.str("agent"), Cwd: f.str("cwd"),
		WhyNotClaimed: f.str("whyNotClaimed"), Error: f.str("error"), At: f.int("at")}
	return r, f.err
}

// ExpiryTime returns Expiry as a time (zero for none).
func (r *Run) ExpiryTime() time.Time {
	if r.Expiry == 0 {
		return time.Time{}
	}
	return time.UnixMilli(r.Expiry).UTC()
}

func runRef(id string) string { return RunPrefix + id }

// storeNow reads the store's clock, the one run expiries and ref-log times
// use.
func (e *Engine) storeNow(ctx context.Context) (int64, error) {
	t, err := e.repo.Store().Now(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the store's clock: %w", err)
	}
	return t.UnixMilli(), nil
}

// ReadRun reads the run node at h.
func (e *Engine) ReadRun(ctx context.Context, h cas.Hash) (*Run, error) {
	n, err := e.repo.Get(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", h, err)
	}
	return DecodeRun(h, n)
}

// RunOf returns thread id's run record, or nil (and no error) if it has
// none: its run is [RunNone]. It never writes.
func (e *Engine) RunOf(ctx context.Context, id string) (*Run, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	h, err := e.refs.Get(ctx, runRef(id))
	if errors.Is(err, cas.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("thread %s: run: %w", id, err)
	}
	return e.ReadRun(ctx, h)
}

// Runs lists every run record, by thread ID. A record that cannot be read
// is left out and reported in the joined error, the others returned.
func (e *Engine) Runs(ctx context.Context) ([]*Run, error) {
	var out []*Run
	var bad []error
	for r, err := range e.refs.List(ctx, RunPrefix) {
		if errors.Is(err, cas.ErrBadRef) {
			bad = append(bad, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		run, err := e.ReadRun(ctx, r.Hash)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			bad = append(bad, fmt.Errorf("%s: %w", r.Name, err))
			continue
		}
		out = append(out, run)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("list runs: %d left out:\n%w", len(bad), errors.Join(bad...))
	}
	return out, nil
}

// RunState returns what a thread's run shows: its record's state, or
// [RunNone] for nil.
func RunState(r *Run) string {
	if r == nil {
		return RunNone
	}
	return r.State
}

// EnqueueOptions say what is asked of a queued thread's run.
type EnqueueOptions struct {
	// Agent names the agent for every role, as --agent does; "" for the
	// config's choice on the worker.
	Agent string
}

// ErrRunFailed is wrapped by the error of a claim of a failed run: it left
// the queue and is claimed again only once queued again ([Engine.Enqueue]).
var ErrRunFailed = errors.New("the thread's run failed")

// ErrNotQueued is wrapped by the error of a claim of a thread that has no
// run record. It wraps [cas.ErrNotFound].
var ErrNotQueued = fmt.Errorf("%w: the thread is not queued", cas.ErrNotFound)

// Enqueue records that thread id wants running: one compare-and-swap
// creating runs/<id> (logged "enqueue") at a queued run node holding the
// thread, its workflow's name, its working folder and opts.Agent. The
// first run node written moves the store to format version 2
// ([cas.Repo.RequireVersion]). The thread must be active. A thread already
// queued or retrying is left as it is and its record returned, unless
// opts.Agent names another agent than the record's: then the record
// takes that agent, and forgets why a worker did not claim it (logged
// "requeue with agent <a>"); a failed run is queued again with its failure
// and attempt counts reset, so the takeover cap ([LeaseOptions.MaxTakeovers])
// counts afresh, and its agent kept unless opts.Agent names one (logged
// "requeue"); a running one whose lease expired is
// queued again with its counts kept; a running one fails with a
// *[LeaseHeldError].
func (e *Engine) Enqueue(ctx context.Context, id string, opts EnqueueOptions) (*Run, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	hn, err := e.headNode(ctx, id)
	if err != nil {
		return nil, err
	}
	if st := hn.Status(); st != StatusActive {
		return nil, fmt.Errorf("queue thread %s: %w: it is %s", id, ErrNotActive, st)
	}
	sn := hn
	if hn.Kind != KindStart {
		if sn, err = e.Node(ctx, hn.StartHash()); err != nil {
			return nil, fmt.Errorf("queue thread %s: start: %w", id, err)
		}
	}
	wfName := e.workflowName(ctx, sn.Start.Workflow)
	for range 8 {
		cur, err := e.RunOf(ctx, id)
		if err != nil {
			return nil, err
		}
		now, err := e.storeNow(ctx)
		if err != nil {
			return nil, err
		}
		run := &Run{Thread: id, Workflow: wfName, State: RunQueued, Agent: opts.Agent, Cwd: sn.Start.Cwd, At: now}
		old, msg := cas.Hash(0), "enqueue"
		if cur != nil {
			switch cur.State {
			case RunQueued, RunRetrying:
				if opts.Agent == "" || opts.Agent == cur.Agent {
					return cur, nil
				}
				next := *cur
				next.Agent, next.WhyNotClaimed, next.At = opts.Agent, "", now
				h, err := e.swapRun(ctx, id, cur.Hash, &next, "requeue with agent "+opts.Agent)
				if errors.Is(err, cas.ErrConflict) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("queue thread %s: %w", id, err)
				}
				next.Hash = h
				return &next, nil
			case RunRunning:
				if now < cur.Expiry {
					return nil, &LeaseHeldError{Thread: id, Worker: cur.Worker, Expiry: cur.ExpiryTime()}
				}
			}
			if cur.State != RunFailed {
				run.Attempt, run.Failures = cur.Attempt, cur.Failures
			}
			if run.Agent == "" {
				run.Agent = cur.Agent // queued again as it was asked, unless told otherwise
			}
			old, msg = cur.Hash, "requeue"
		}
		h, err := e.swapRun(ctx, id, old, run, msg)
		if errors.Is(err, cas.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("queue thread %s: %w", id, err)
		}
		run.Hash = h
		return run, nil
	}
	return nil, fmt.Errorf("queue thread %s: %w: its run record keeps changing", id, cas.ErrConflict)
}

// swapRun stores run and moves runs/<id> from old to it (zero old: create).
func (e *Engine) swapRun(ctx context.Context, id string, old cas.Hash, run *Run, message string) (cas.Hash, error) {
	h, err := e.repo.Put(ctx, cas.RunSchema, run.Payload())
	if err != nil {
		return 0, fmt.Errorf("store the run record: %w", err)
	}
	if err := e.refs.CompareAndSwap(ctx, runRef(id), old, h, message); err != nil {
		return 0, err
	}
	return h, nil
}

// DropRun deletes thread id's run record, whatever its state (logged
// "drop: <why>"), so it leaves the queue and a lease holder learns it lost
// its lease (through the watch, or at its next renewal) and ends its run.
// [Engine.Kill] and [Engine.Remove] call it. A thread with no run record
// is left alone: nothing is written. It returns the record dropped (nil
// if none).
func (e *Engine) DropRun(ctx context.Context, id, why string) (*Run, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	for range 8 {
		cur, err := e.RunOf(ctx, id)
		if err != nil || cur == nil {
			return nil, err
		}
		err = e.refs.CompareAndSwap(ctx, runRef(id), cur.Hash, 0, "drop: "+why)
		if errors.Is(err, cas.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("thread %s: drop its run: %w", id, err)
		}
		return cur, nil
	}
	return nil, fmt.Errorf("thread %s: drop its run: %w: its run record keeps changing", id, cas.ErrConflict)
}

// NotClaimed records on a queued run why worker could not take it (a
// working folder it does not have, an agent it cannot build), so
// `uwf thread show` says why no worker took the thread. To keep workers
// that cannot run a thread from rewriting the record in turn (each write
// is an event the others see), it writes only when the record says
// nothing yet, or when it holds this worker's own older reason; it
// returns whether it wrote. A run that is not queued or retrying is left
// alone.
func (e *Engine) NotClaimed(ctx context.Context, run *Run, worker, why string) (bool, error) {
	if run.State != RunQueued && run.State != RunRetrying {
		return false, nil
	}
	text := "worker " + worker + ": " + why
	if run.WhyNotClaimed == text || run.WhyNotClaimed != "" && !strings.HasPrefix(run.WhyNotClaimed, "worker "+worker+": ") {
		return false, nil
	}
	now, err := e.storeNow(ctx)
	if err != nil {
		return false, err
	}
	next := *run
	next.WhyNotClaimed, next.At = text, now
	_, err = e.swapRun(ctx, run.Thread, run.Hash, &next, "not claimed by "+worker)
	if errors.Is(err, cas.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("thread %s: record why it was not claimed: %w", run.Thread, err)
	}
	return true, nil
}

// LeaseHeldError is the error of a claim, a queueing or a manual step of a
// thread whose run another holder leases and whose lease has not expired
// by the store's clock. It wraps [cas.ErrConflict] (exit status 4).
type LeaseHeldError struct {
	Thread string
	Worker string
	Expiry time.Time // by the store's clock
}

// Error says who holds the lease and until when.
func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("thread %s is leased by worker %s until %s (store clock): it is being run",
		e.Thread, e.Worker, e.Expiry.Format(time.RFC3339))
}

// Unwrap returns [cas.ErrConflict].
func (e *LeaseHeldError) Unwrap() error { return cas.ErrConflict }

// CheckUnleased returns a *[LeaseHeldError] if thread id's run is leased
// and the lease has not expired by the store's clock: a manual step would
// race its holder. It reads only; a thread with no run returns nil.
func (e *Engine) CheckUnleased(ctx context.Context, id string) error {
	run, err := e.RunOf(ctx, id)
	if err != nil || run == nil || run.State != RunRunning {
		return err
	}
	now, err := e.storeNow(ctx)
	if err != nil {
		return err
	}
	if now < run.Expiry {
		return &LeaseHeldError{Thread: run.Thread, Worker: run.Worker, Expiry: run.ExpiryTime()}
	}
	return nil
}

// ListStatuses are the words [ListOptions.Status] takes: a thread's status
// or its run.
var ListStatuses = []string{StatusActive, StatusDone, StatusKilled, StatusSuspended,
	RunQueued, RunRunning, RunRetrying, RunFailed, RunNone}

// CheckListStatus returns an error naming the words allowed unless s is ""
// or one of [ListStatuses].
func CheckListStatus(s string) error {
	if s == "" || slices.Contains(ListStatuses, s) {
		return nil
	}
	return fmt.Errorf("want a status (active, done, killed, suspended) or a run (queued, running, retrying, failed, none)")
}
