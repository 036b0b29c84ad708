package thread

import (
	"context"
	"errors"
	"sync"
	"time"
)

// SlotHold is the concurrency slot a thread's run holds under its
// workflow's maxRunning ([Engine.SetMaxRunning]), as a worker runs it
// ([RunOptions.Slot]). A call gives it back while its branches run, so a
// parent waiting on its children holds no slot and cannot starve them
// (a branch of a workflow with a cap takes a slot of its own), and takes
// one again, waiting for it if need be, before its join moves the parent
// on.
type SlotHold struct {
	mu     sync.Mutex
	wf     string
	thread string
	worker string
	grace  time.Duration
	slot   *Slot // nil while given back
}

// HoldSlot takes one of workflow wf's slots for thread id on worker, as
// [Engine.TakeSlot] does, and returns it as a hold; nil, nil when wf has
// no cap.
func (e *Engine) HoldSlot(ctx context.Context, wf, id, worker string, grace time.Duration) (*SlotHold, error) {
	s, err := e.TakeSlot(ctx, wf, id, worker, grace)
	if err != nil || s == nil {
		return nil, err
	}
	return &SlotHold{wf: wf, thread: id, worker: worker, grace: grace, slot: s}, nil
}

// Slot returns the slot h holds; nil while given back (or for a nil h).
func (h *SlotHold) Slot() *Slot {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.slot
}

// GiveHold gives back the slot h holds, if it holds one.
func (e *Engine) GiveHold(ctx context.Context, h *SlotHold) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	s := h.slot
	h.slot = nil
	h.mu.Unlock()
	return e.GiveSlot(ctx, s)
}

// retakeHold takes a slot again for a hold given back, waiting while
// every slot is held.
func (e *Engine) retakeHold(ctx context.Context, h *SlotHold) error {
	if h == nil || h.Slot() != nil {
		return nil
	}
	s, err := e.waitSlot(ctx, h.wf, h.thread, h.worker, h.grace)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.slot = s
	h.mu.Unlock()
	return nil
}

// slotWait bounds the wait between two looks for a free slot.
const slotWait = 2 * time.Second

// waitSlot takes a slot of wf for thread id as worker, looking again
// while every slot is held (after 50 ms, doubling up to [slotWait]);
// nil, nil when wf has no cap.
func (e *Engine) waitSlot(ctx context.Context, wf, id, worker string, grace time.Duration) (*Slot, error) {
	wait := 50 * time.Millisecond
	for {
		s, err := e.TakeSlot(ctx, wf, id, worker, grace)
		if !errors.Is(err, ErrNoSlot) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, slotWait)
	}
}
