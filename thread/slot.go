package thread

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

// SlotPrefix is the ref-name prefix of concurrency slots: a workflow's
// maxRunning N is N refs slots/<workflow>/<i>, i = 0..N-1, each at a slot
// node.
const SlotPrefix = "slots/"

// MaxMaxRunning bounds maxRunning (the number of slot refs).
const MaxMaxRunning = 1000

// Slot is one of a workflow's concurrency slots: the payload of the node a
// ref slots/<workflow>/<index> points at (a built-in kind of format
// version 2). Free when Thread and Worker are "" and Expiry 0.
type Slot struct {
	Hash     cas.Hash `json:"hash"`
	Workflow string   `json:"workflow"`
	Index    int      `json:"index"`
	Thread   string   `json:"thread"`
	Worker   string   `json:"worker"`
	// Expiry is the hold's grace by the store's clock: the slot is held
	// until then whatever the thread's run says, and after it while the
	// thread's run is running under Worker's unexpired lease.
	Expiry int64 `json:"expiry"`
	At     int64 `json:"at"`
}

// Payload returns the slot node's payload.
func (s *Slot) Payload() map[string]any {
	return map[string]any{"workflow": s.Workflow, "index": float64(s.Index), "thread": s.Thread,
		"worker": s.Worker, "expiry": float64(s.Expiry), "at": float64(s.At)}
}

// DecodeSlot reads a slot node.
func DecodeSlot(h cas.Hash, n cas.Node) (*Slot, error) {
	if n.Type != cas.SlotSchema {
		return nil, fmt.Errorf("%w: %s is not a slot node (type %s)", cas.ErrInvalid, h, n.Type)
	}
	f := newFields(n.Payload)
	s := &Slot{Hash: h, Workflow: f.str("workflow"), Index: int(f.int("index")), Thread: f.str("thread"),
		Worker: f.str("worker"), Expiry: f.int("expiry"), At: f.int("at")}
	return s, f.err
}

func slotRef(wf string, i int) string { return SlotPrefix + wf + "/" + strconv.Itoa(i) }

// slots reads a workflow's slots, by index.
func (e *Engine) slots(ctx context.Context, wf string) ([]*Slot, error) {
	var out []*Slot
	for r, err := range e.refs.List(ctx, SlotPrefix+wf+"/") {
		if err != nil {
			return nil, fmt.Errorf("workflow %s: slots: %w", wf, err)
		}
		n, err := e.repo.Get(ctx, r.Hash)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		s, err := DecodeSlot(r.Hash, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// MaxRunning returns a workflow's cap on running threads, as the store
// holds it: the number of its slots; 0 means no cap.
func (e *Engine) MaxRunning(ctx context.Context, wf string) (int, error) {
	n := 0
	for _, err := range e.refs.List(ctx, SlotPrefix+wf+"/") {
		if err != nil {
			return 0, fmt.Errorf("workflow %s: slots: %w", wf, err)
		}
		n++
	}
	return n, nil
}

// SetMaxRunning sets a workflow's cap on running threads across every
// worker sharing the store: n slot refs slots/<wf>/0..n-1 (created free,
// logged "maxRunning <n>"); slots past n are deleted, held or not (their
// holders finish what they run; they just give nothing back). 0 removes
// the cap. The first slot written moves the store to format version 2.
func (e *Engine) SetMaxRunning(ctx context.Context, wf string, n int) error {
	if !registry.ValidName(wf) {
		return fmt.Errorf("%w: invalid workflow name %q", cas.ErrInvalid, wf)
	}
	if n < 0 || n > MaxMaxRunning {
		return fmt.Errorf("%w: maxRunning %d: want 0 to %d", cas.ErrInvalid, n, MaxMaxRunning)
	}
	msg := fmt.Sprintf("maxRunning %d", n)
	have := map[int]cas.Hash{}
	for r, err := range e.refs.List(ctx, SlotPrefix+wf+"/") {
		if err != nil {
			return fmt.Errorf("workflow %s: slots: %w", wf, err)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(r.Name, SlotPrefix+wf+"/"))
		if err != nil {
			continue
		}
		have[i] = r.Hash
	}
	now, err := e.storeNow(ctx)
	if err != nil {
		return err
	}
	for i := range n {
		if _, ok := have[i]; ok {
			continue
		}
		s := &Slot{Workflow: wf, Index: i, At: now}
		h, err := e.repo.Put(ctx, cas.SlotSchema, s.Payload())
		if err != nil {
			return fmt.Errorf("workflow %s: slot %d: %w", wf, i, err)
		}
		err = e.refs.CompareAndSwap(ctx, slotRef(wf, i), 0, h, msg)
		if err != nil && !errors.Is(err, cas.ErrConflict) {
			return fmt.Errorf("workflow %s: slot %d: %w", wf, i, err)
		}
	}
	for i, h := range have {
		if i < n {
			continue
		}
		err := e.refs.CompareAndSwap(ctx, slotRef(wf, i), h, 0, msg)
		if err != nil && !errors.Is(err, cas.ErrConflict) {
			return fmt.Errorf("workflow %s: slot %d: %w", wf, i, err)
		}
	}
	return nil
}

// ErrNoSlot is wrapped by [Engine.TakeSlot]'s error when every slot of the
// workflow is held. It wraps [cas.ErrConflict].
var ErrNoSlot = fmt.Errorf("%w: every slot of the workflow is held", cas.ErrConflict)

// TakeSlot takes one of workflow wf's slots for thread id on worker, before
// the worker claims the thread's run: one compare-and-swap of a free slot
// (or a stale one: its grace passed and its thread's run is not running
// under its worker's unexpired lease, both by the store's clock) to a held
// record whose grace is grace from now. It returns nil, nil when the
// workflow has no cap, and an error wrapping [ErrNoSlot] when every slot
// is held. Give it back with [Engine.GiveSlot] once the run's lease is
// given back (or the claim failed).
func (e *Engine) TakeSlot(ctx context.Context, wf, id, worker string, grace time.Duration) (*Slot, error) {
	ss, err := e.slots(ctx, wf)
	if err != nil || len(ss) == 0 {
		return nil, err
	}
	now, err := e.storeNow(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		if s.Thread != "" && now < s.Expiry {
			continue
		}
		if s.Thread != "" {
			r, err := e.RunOf(ctx, s.Thread)
			if err != nil && !errors.Is(err, ErrInvalidID) {
				return nil, err
			}
			if r != nil && r.State == RunRunning && r.Worker == s.Worker && now < r.Expiry {
				continue // held by a live lease
			}
		}
		next := &Slot{Workflow: wf, Index: s.Index, Thread: id, Worker: worker, Expiry: now + grace.Milliseconds(), At: now}
		h, err := e.repo.Put(ctx, cas.SlotSchema, next.Payload())
		if err != nil {
			return nil, err
		}
		err = e.refs.CompareAndSwap(ctx, slotRef(wf, s.Index), s.Hash, h, fmt.Sprintf("take by %s for %s", worker, id))
		if errors.Is(err, cas.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("workflow %s: take slot %d: %w", wf, s.Index, err)
		}
		next.Hash = h
		return next, nil
	}
	return nil, fmt.Errorf("workflow %s: %w (%d)", wf, ErrNoSlot, len(ss))
}

// GiveSlot frees a slot TakeSlot returned: one compare-and-swap from the
// held record to a free one. A slot that changed meanwhile (taken as
// stale, or removed by a lower maxRunning) is left alone.
func (e *Engine) GiveSlot(ctx context.Context, s *Slot) error {
	if s == nil {
		return nil
	}
	now, err := e.storeNow(ctx)
	if err != nil {
		return err
	}
	free := &Slot{Workflow: s.Workflow, Index: s.Index, At: now}
	h, err := e.repo.Put(ctx, cas.SlotSchema, free.Payload())
	if err != nil {
		return err
	}
	err = e.refs.CompareAndSwap(ctx, slotRef(s.Workflow, s.Index), s.Hash, h, "give back by "+s.Worker)
	if err != nil && !errors.Is(err, cas.ErrConflict) {
		return fmt.Errorf("workflow %s: give back slot %d: %w", s.Workflow, s.Index, err)
	}
	return nil
}
