package thread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
)

// Composition (docs/WORKFLOWS.md, "Composition"; docs/FORMAT.md, "Format
// version 2"). Stepping a role that runs a workflow, or a parallel or race
// stage, is two nodes on the thread's chain: a call, committed by
// compare-and-swap before any branch starts (so a crash never loses which
// branches exist, and two processes stepping the thread make one call),
// and a join, committed when the call is settled, with an edge to every
// branch's final head. Each branch is a thread of its own, threads/<id>,
// whose id is derived from (thread, call, key) and whose start names the
// call and the key; its own ref keeps it alive until the join, and the
// join's edges after (the join removes the branch refs).

// MaxNesting bounds how deep branch threads nest: a thread whose start is
// a branch of a branch of ... MaxNesting levels deep cannot make a call.
const MaxNesting = 8

// ErrNesting is wrapped by the error of a call past [MaxNesting].
var ErrNesting = errors.New("child threads nest too deep")

// ChildID returns the id of the branch thread of (parent, call, key): a
// ULID whose time is the call's time (at, Unix ms) and whose entropy is
// derived from the three, so every process finds the same branch, and a
// fork of the parent (another id) gets branches of its own.
func ChildID(parent string, call cas.Hash, at int64, key string) string {
	seed := parent + "\x00" + call.String() + "\x00" + key
	var ent [16]byte
	binary.BigEndian.PutUint64(ent[:8], uint64(cas.Sum([]byte(seed))))
	binary.BigEndian.PutUint64(ent[8:], uint64(cas.Sum([]byte("branch\x00"+seed))))
	var u ulid.ULID
	if at < 0 || uint64(at) > ulid.MaxTime() {
		at = 0
	}
	_ = u.SetTime(uint64(at))
	_ = u.SetEntropy(ent[:10])
	return u.String()
}

// childMessage is the creation log entry of a branch thread.
func childMessage(parent string, call cas.Hash, key string) string {
	return "child of " + parent + "@" + call.String() + "/" + key
}

// ParseChildMessage reads a branch thread's creation log entry ("child of
// P@C/K"); ok is false for any other message.
func ParseChildMessage(msg string) (parent string, call cas.Hash, key string, ok bool) {
	rest, found := strings.CutPrefix(msg, "child of ")
	if !found {
		return "", 0, "", false
	}
	p, rest, found := strings.Cut(rest, "@")
	if !found {
		return "", 0, "", false
	}
	c, k, found := strings.Cut(rest, "/")
	if !found {
		return "", 0, "", false
	}
	h, err := cas.ParseCanonicalHash(c)
	if err != nil {
		return "", 0, "", false
	}
	return p, h, k, true
}

// pendingCall returns the call the chain ending at head is in (a call not
// yet joined: the newest call, step or join back from head is a call), or
// nil. It reads the marks after the call, usually none or one.
func (e *Engine) pendingCall(ctx context.Context, head *Node) (*Node, error) {
	for n, err := range e.NewestFirst(ctx, head.Hash) {
		if err != nil {
			return nil, err
		}
		switch n.Kind {
		case KindCall:
			return n, nil
		case KindMark:
			continue
		}
		return nil, nil
	}
	return nil, nil
}

// Children returns the ids of the branch threads of the call head is in
// (see [Engine.pendingCall]), with their keys, in the call's order; none
// when head is not in a call.
func (e *Engine) pendingChildren(ctx context.Context, id string, head *Node) ([]string, *Node, error) {
	cn, err := e.pendingCall(ctx, head)
	if err != nil || cn == nil {
		return nil, nil, err
	}
	ids := make([]string, len(cn.Call.Branches))
	for i, b := range cn.Call.Branches {
		ids[i] = ChildID(id, cn.Hash, cn.Call.At, b.Key)
	}
	return ids, cn, nil
}

// nesting returns how many calls up the thread whose start is sn is: 0 for
// a thread of its own.
func (e *Engine) nesting(ctx context.Context, sn *Node) (int, error) {
	n := 0
	for s := sn; s.Start.IsChild(); n++ {
		if n > MaxNesting {
			break
		}
		cn, err := e.Node(ctx, s.Start.Call)
		if err != nil {
			return n, fmt.Errorf("the call %s of branch %s: %w", s.Start.Call, s.Hash, err)
		}
		if s, err = e.Node(ctx, cn.StartHash()); err != nil {
			return n, err
		}
	}
	return n, nil
}

// call makes the call of decision d (a role that runs a workflow, or a
// stage) after head, then runs its branches.
func (e *Engine) call(ctx context.Context, id string, head *Node, pos *position, lw *loadedWorkflow, d moderator.Decision, opts *RunOptions) (*StepResult, error) {
	role := lw.wf.Roles[d.Role]
	if depth, err := e.nesting(ctx, pos.start); err != nil {
		return nil, fmt.Errorf("thread %s: role %s: %w", id, d.Role, err)
	} else if depth >= MaxNesting {
		return nil, fmt.Errorf("thread %s: role %s: %w: this thread is a branch %d calls deep, the limit is %d (does a workflow run itself?)", id, d.Role, ErrNesting, depth, MaxNesting)
	}
	c, err := e.next(ctx, head)
	if err != nil {
		return nil, err
	}
	call := &Call{Chain: c, Role: d.Role, Mode: role.Mode(), At: e.nowMs()}
	switch call.Mode {
	case registry.ModeChild:
		if call.Workflow, err = e.reg.ChildWorkflow(ctx, role); err != nil {
			return nil, fmt.Errorf("thread %s: role %s: %w", id, d.Role, err)
		}
		call.Branches = []Branch{{Key: d.Role, Prompt: d.Prompt}}
	default:
		if role.Each != nil {
			items, err := e.eachItems(ctx, pos, role.Each)
			if err != nil {
				return nil, fmt.Errorf("thread %s: stage %s: %w", id, d.Role, err)
			}
			for i, item := range items {
				prompt := fmt.Sprintf("%s\n\nItem %d of %d:\n%s", d.Prompt, i+1, len(items), moderator.Text(item))
				call.Branches = append(call.Branches, Branch{Key: strconv.Itoa(i), Role: role.Each.Role, Prompt: strings.TrimLeft(prompt, "\n")})
			}
		} else {
			for _, m := range role.Members() {
				call.Branches = append(call.Branches, Branch{Key: m, Role: m, Prompt: d.Prompt})
			}
		}
		call.TimeoutMs = role.Timeout.Milliseconds()
		call.Concurrency = role.Concurrency
	}
	h, err := e.repo.Put(ctx, cas.CallSchema, call.Payload())
	if err != nil {
		return nil, fmt.Errorf("thread %s: call %s: %w", id, d.Role, err)
	}
	cn := &Node{Hash: h, Kind: KindCall, Call: call}
	if he, err := e.entry(ctx, head); err == nil {
		e.followEntry(ctx, he, cn, nil)
	}
	// Only the process whose call commit wins starts the branches.
	if err := e.commit(ctx, id, h, &call.Chain, "call "+d.Role); err != nil {
		return nil, err
	}
	e.progress(opts, Event{Type: EventCall, Thread: id, Depth: call.Depth, Role: d.Role, Agent: call.Mode, Head: h})
	pos.call = cn
	return e.runCall(ctx, id, cn, pos, lw, opts)
}

// ErrNothingToFanOut is wrapped by the error of an each stage whose list
// is empty or missing: a call needs at least one branch.
var ErrNothingToFanOut = errors.New("nothing to fan out over")

// eachItems returns the list an each stage fans out over: the field
// each.Over (a dotted path) of the output the thread routed from.
func (e *Engine) eachItems(ctx context.Context, pos *position, each *registry.Each) ([]any, error) {
	if pos.lastStep == nil {
		return nil, fmt.Errorf("%w: each over %q needs an output to read it from (the stage follows $START)", ErrNothingToFanOut, each.Over)
	}
	_, output, _ := pos.lastStep.routed()
	on, err := e.repo.Get(ctx, output)
	if err != nil {
		return nil, fmt.Errorf("output of %s: %w", pos.lastStep.Hash, err)
	}
	v := on.Payload
	for _, seg := range strings.Split(each.Over, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: the output has no field %q", ErrNothingToFanOut, each.Over)
		}
		if v, ok = m[seg]; !ok {
			return nil, fmt.Errorf("%w: the output has no field %q", ErrNothingToFanOut, each.Over)
		}
	}
	items, ok := v.([]any)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: field %q of the output is not a list", ErrNothingToFanOut, each.Over)
	case len(items) == 0:
		return nil, fmt.Errorf("%w: the list %q is empty", ErrNothingToFanOut, each.Over)
	}
	return items, nil
}

// branchResult is how one branch of a call ended, in this run.
type branchResult struct {
	id     string
	head   *Node
	status string // done, cancelled, suspended, failed, or "" (interrupted)
	err    error  // why it failed
	reason string // a suspension's
}

// runCall runs the branches of the call head is in (pos.call) that have
// not finished, and settles the call: a join when every branch is done (a
// race: when one is), a suspension of the thread when a branch suspended,
// a failure (the head stays on the call) when a branch failed.
func (e *Engine) runCall(ctx context.Context, id string, head *Node, pos *position, lw *loadedWorkflow, opts *RunOptions) (*StepResult, error) {
	cn := pos.call
	call := cn.Call
	started := e.now()
	// Cancel the branches if the thread leaves the call (killed, suspended
	// or removed, by this process or another) while they run.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go e.watchThread(runCtx, id, head.Hash, stop)
	stageCtx := runCtx
	if call.TimeoutMs > 0 {
		var cancel context.CancelFunc
		stageCtx, cancel = context.WithTimeout(runCtx, time.Duration(call.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	wfHash := call.Workflow
	if wfHash.IsZero() {
		wfHash = lw.hash // a stage's branches run roles of this workflow
	}
	n := len(call.Branches)
	limit := call.Concurrency
	if limit <= 0 || limit > n {
		limit = n
	}
	// A parent waiting on its branches holds no slot: it gives its own
	// back now and takes one again before it joins.
	if err := e.GiveHold(ctx, opts.Slot); err != nil {
		e.log.Info("slot not given back during the call", "thread", id, "error", err)
	}
	sem := make(chan struct{}, limit)
	results := make([]branchResult, n)
	cancels := make([]context.CancelFunc, n)
	bctxs := make([]context.Context, n)
	for i := range call.Branches {
		bctxs[i], cancels[i] = context.WithCancel(stageCtx)
	}
	var (
		mu     sync.Mutex
		winner = -1
		wg     sync.WaitGroup
	)
	// Branches start in the call's order, at most limit at once.
	for i, b := range call.Branches {
		results[i] = branchResult{id: ChildID(id, cn.Hash, call.At, b.Key)}
		select {
		case sem <- struct{}{}:
		case <-bctxs[i].Done():
			continue
		}
		if bctxs[i].Err() != nil { // cancelled (a race won) while waiting for a slot
			<-sem
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := e.runBranch(bctxs[i], ctx, id, cn, b, wfHash, pos.start.Start.Cwd, opts)
			results[i] = r
			if call.Mode == registry.ModeRace && r.status == StatusDone {
				mu.Lock()
				if winner < 0 {
					winner = i
					for j, c := range cancels {
						if j != i {
							c()
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, c := range cancels {
		c()
	}
	if err := ctx.Err(); err != nil {
		return nil, err // interrupted: the branches stay as they are; step or resume goes on
	}
	// A branch this process gave up on (its run failed) may have been
	// carried on by another runner of the call since: what its head says
	// now counts, so a race won elsewhere is not settled here as lost.
	for i := range results {
		r := &results[i]
		if r.status == StatusDone || r.status == StatusCancelled || r.status == StatusSuspended {
			continue
		}
		hn, err := e.headNode(ctx, r.id)
		if err != nil {
			continue
		}
		if st := hn.Status(); st == StatusDone || st == StatusCancelled {
			r.head, r.status, r.err = hn, st, nil
			if st == StatusDone && call.Mode == registry.ModeRace && winner < 0 {
				winner = i
			}
		}
	}
	// Branches cancelled by the call (race losers, the timeout) get a
	// cancelled mark; those cut short because the thread left the call
	// are left as the kill or suspension found them.
	if runCtx.Err() == nil {
		why := "the stage timed out"
		if winner >= 0 {
			why = "lost the race to " + call.Branches[winner].Key
		}
		for i := range results {
			r := &results[i]
			switch {
			case r.status == "", r.status == StatusCancelled:
			case winner >= 0 && r.status != StatusDone:
				// A race is won: its failed or suspended losers end too.
			default:
				continue
			}
			// A branch the concurrency limit never started gets its
			// thread, cancelled, so the join has a head for every branch.
			if err := e.ensureChild(ctx, id, r.id, cn, call.Branches[i], wfHash, pos.start.Start.Cwd); err != nil {
				r.status, r.err = "failed", err
				continue
			}
			hn, err := e.cancelBranch(ctx, r.id, why)
			if err != nil {
				r.status, r.err = "failed", err
				continue
			}
			r.head = hn
			if st := hn.Status(); st == StatusCancelled || st == StatusDone {
				r.status, r.err = st, nil
			}
		}
	}
	if err := e.retakeHold(ctx, opts.Slot); err != nil {
		return nil, fmt.Errorf("thread %s: a slot to join %s: %w", id, call.Role, err)
	}
	return e.settle(ctx, id, cn, pos, lw, results, winner, opts, e.now().Sub(started))
}

// runBranch steps branch b of call cn until it is no longer active, under
// a lease on the branch thread (the lease primitive, see [Lease]): a
// branch leased by another process (another runner of the same call) is
// left to it and watched until it finishes or its lease expires, then
// taken over. ctx cancels its agent runs; wctx (not cancelled with it)
// writes.
func (e *Engine) runBranch(ctx, wctx context.Context, parent string, cn *Node, b Branch, wf cas.Hash, cwd string, opts *RunOptions) branchResult {
	cid := ChildID(parent, cn.Hash, cn.Call.At, b.Key)
	res := branchResult{id: cid}
	if err := e.ensureChild(wctx, parent, cid, cn, b, wf, cwd); err != nil {
		res.status, res.err = "failed", err
		return res
	}
	opts = e.branchReplay(wctx, cn, b, opts)
	// The branch's steps hold its own slot (if any), never the parent's.
	own := *opts
	own.Slot = nil
	opts = &own
	if progress := opts.Progress; progress != nil {
		o := *opts
		o.Progress = func(ev Event) {
			if ev.Branch == "" {
				ev.Branch = b.Key
			} else {
				ev.Branch = b.Key + "/" + ev.Branch
			}
			progress(ev)
		}
		opts = &o
	}
	var lease *Lease
	defer func() {
		if opts.Slot != nil {
			if err := e.GiveHold(wctx, opts.Slot); err != nil {
				e.log.Info("branch slot not given back", "thread", cid, "error", err)
			}
		}
		if lease != nil {
			// Released whatever happened: a later step or resume of the
			// parent carries the branch on at once (a finished branch is
			// never run again: its head says so).
			_ = lease.Release(wctx, "branch "+b.Key+" "+res.status)
		}
	}()
	for {
		hn, err := e.headNode(wctx, cid)
		if err != nil {
			res.status, res.err = "failed", err
			return res
		}
		res.head = hn
		switch st := hn.Status(); st {
		case StatusDone, StatusCancelled:
			res.status = st
			return res
		case StatusSuspended:
			res.status, res.reason = st, hn.Mark.Reason
			return res
		case StatusKilled:
			res.status, res.err = "failed", fmt.Errorf("it was killed: %s", hn.Mark.Reason)
			return res
		}
		if ctx.Err() != nil {
			res.status = ""
			return res
		}
		if lease == nil {
			l, err := e.Acquire(wctx, cid, branchWorker(parent, b.Key), opts.BranchLease)
			var held *LeaseHeldError
			switch {
			case errors.As(err, &held), errors.Is(err, cas.ErrConflict):
				// Another process runs it: look again in a while.
				select {
				case <-ctx.Done():
				case <-time.After(branchPoll):
				}
				continue
			case err != nil:
				res.status, res.err = "failed", err
				return res
			}
			lease = l
		}
		if opts.ObeySlots && opts.Slot == nil {
			// The branch's own workflow's cap: a slot, waited for.
			if err := e.branchSlot(ctx, parent, cid, b, wf, opts); err != nil {
				if ctx.Err() != nil {
					res.status = ""
					return res
				}
				res.status, res.err = "failed", err
				return res
			}
		}
		lctx, stop := lease.Keep(ctx)
		_, err = e.Step(lctx, cid, opts)
		stop()
		var ce *ConflictError
		switch {
		case errors.Is(context.Cause(lctx), ErrLeaseLost):
			lease = nil // taken over or dropped: look again
		case err == nil, errors.As(err, &ce):
			// Moved (by this step, or by another process): look again.
		case ctx.Err() != nil:
			res.status = ""
			if hn, herr := e.headNode(wctx, cid); herr == nil {
				res.head = hn
				if st := hn.Status(); st != StatusActive {
					continue // killed or suspended meanwhile: report that
				}
			}
			return res
		case errors.Is(err, ErrNotActive):
			// Suspended or finished meanwhile: look again.
		default:
			res.status, res.err = "failed", err
			return res
		}
	}
}

// branchSlot takes a slot of the branch's workflow (if it has a cap) for
// branch thread cid, waiting while every slot is held, and sets it as
// opts.Slot. The slot is held in the name of the branch's lease holder,
// so a slot whose holder died goes stale with its lease.
func (e *Engine) branchSlot(ctx context.Context, parent, cid string, b Branch, wf cas.Hash, opts *RunOptions) error {
	name := e.workflowName(ctx, wf)
	grace := opts.BranchLease.withDefaults().Length
	worker := branchWorker(parent, b.Key)
	s, err := e.waitSlot(ctx, name, cid, worker, grace)
	if err != nil {
		return fmt.Errorf("a slot of workflow %s: %w", name, err)
	}
	if s != nil {
		opts.Slot = &SlotHold{wf: name, thread: cid, worker: worker, grace: grace, slot: s}
	}
	return nil
}

// branchPoll is how often a branch leased by another process is looked at.
const branchPoll = 250 * time.Millisecond

// branchWorker names the holder of a branch's lease: this process, the
// parent and the key.
func branchWorker(parent, key string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("branch %s/%s on %s pid %d", parent, key, host, os.Getpid())
}

// ensureChild creates branch thread cid of call cn if it does not exist:
// its start node names the call and the key, its log says "child of
// P@C/K". Another process creating it first is fine.
func (e *Engine) ensureChild(ctx context.Context, parent, cid string, cn *Node, b Branch, wf cas.Hash, cwd string) error {
	if _, err := e.refs.Get(ctx, refName(cid)); err == nil {
		return nil
	} else if !errors.Is(err, cas.ErrNotFound) {
		return err
	}
	st := &Start{Workflow: wf, Prompt: b.Prompt, Cwd: cwd, Call: cn.Hash, Key: b.Key, Role: b.Role}
	h, err := e.repo.Put(ctx, cas.ChildStartSchema, st.Payload())
	if err != nil {
		return fmt.Errorf("start branch %s: %w", b.Key, err)
	}
	err = e.refs.CompareAndSwap(ctx, refName(cid), 0, h, childMessage(parent, cn.Hash, b.Key))
	if err != nil && !errors.Is(err, cas.ErrConflict) {
		return fmt.Errorf("start branch %s: %w", b.Key, err)
	}
	if err == nil {
		e.storeOrigin(ctx, cid, Origin{Node: h})
	}
	return nil
}

// cancelBranch appends a cancelled mark to an active branch thread and
// returns its head.
func (e *Engine) cancelBranch(ctx context.Context, cid, why string) (*Node, error) {
	for range 5 {
		hn, err := e.headNode(ctx, cid)
		if err != nil {
			return nil, err
		}
		if st := hn.Status(); st != StatusActive {
			return hn, nil
		}
		h, err := e.appendMarkAfter(ctx, cid, hn, MarkCancelled, why, 0, nil)
		var ce *ConflictError
		if errors.As(err, &ce) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// A process running it under a lease (another runner) sees its
		// record dropped through the watch and ends its agent.
		if _, err := e.DropRun(ctx, cid, "cancelled: "+why); err != nil {
			e.log.Info("cancelled branch's run record left", "thread", cid, "error", err)
		}
		return e.Node(ctx, h)
	}
	return nil, fmt.Errorf("cancel branch %s: it keeps moving", cid)
}

// watchThread calls stop when thread id's head leaves from (it is killed,
// suspended, resumed or removed, by any process), through the Engine's
// shared watch of threads/ ([Engine.Changes]); it returns when ctx is
// done. A store whose refs cannot be watched is polled every second.
func (e *Engine) watchThread(ctx context.Context, id string, from cas.Hash, stop context.CancelFunc) {
	changed, unsubscribe, err := e.Changes(ctx, refName(id))
	var tick <-chan time.Time
	if err != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	} else {
		defer unsubscribe()
	}
	for {
		h, err := e.refs.Get(ctx, refName(id))
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, cas.ErrNotFound) || (err == nil && h != from) {
			stop()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick:
		}
	}
}

// settle ends a call whose branches ran: see [Engine.runCall].
func (e *Engine) settle(ctx context.Context, id string, cn *Node, pos *position, lw *loadedWorkflow, results []branchResult, winner int, opts *RunOptions, took time.Duration) (*StepResult, error) {
	call := cn.Call
	// The thread may have left the call meanwhile: then there is nothing
	// to settle. Settled by another process (joined, and perhaps run on
	// to its end) it moved: a conflict. Killed or suspended in the call,
	// it is not active.
	hn, err := e.headNode(ctx, id)
	if err != nil {
		return nil, err
	}
	if pc, err := e.pendingCall(ctx, hn); err != nil {
		return nil, err
	} else if pc == nil || pc.Hash != cn.Hash {
		return nil, &ConflictError{Thread: id, Expected: cn.Hash, Current: hn.Hash}
	}
	if st := hn.Status(); st != StatusActive {
		return nil, fmt.Errorf("thread %s: %w: it is %s", id, ErrNotActive, st)
	}
	raceWon := call.Mode == registry.ModeRace && winner >= 0
	var suspended, failed []string
	for i, r := range results {
		key := call.Branches[i].Key
		switch {
		case r.head == nil:
			failed = append(failed, fmt.Sprintf("branch %s (thread %s): it has no head: %v", key, r.id, r.err))
		case raceWon:
		case r.status == StatusSuspended:
			suspended = append(suspended, fmt.Sprintf("branch %s (thread %s) suspended: %s", key, r.id, r.reason))
		case r.status == "failed":
			failed = append(failed, fmt.Sprintf("branch %s (thread %s): %v", key, r.id, r.err))
		case r.status == "":
			failed = append(failed, fmt.Sprintf("branch %s (thread %s): did not finish", key, r.id))
		}
	}
	if len(suspended) > 0 && len(failed) == 0 {
		reason := strings.Join(suspended, "\n")
		h, err := e.appendMarkAfter(ctx, id, hn, MarkSuspended, reason, 0, nil)
		if err != nil {
			return nil, err
		}
		e.progress(opts, Event{Type: EventSuspended, Thread: id, Depth: hn.Depth() + 1, Role: call.Role, Head: h, Reason: reason})
		return &StepResult{Thread: id, Kind: EventSuspended, Head: h, Depth: hn.Depth() + 1, Role: call.Role, Reason: reason}, nil
	}
	if len(failed) > 0 || len(suspended) > 0 {
		if call.Mode == registry.ModeRace {
			failed = append([]string{"no branch of the race succeeded"}, failed...)
		}
		return nil, e.callFailure(ctx, id, hn, call, append(failed, suspended...), opts, took)
	}
	out, err := e.joinOutput(ctx, call, results, winner)
	if err != nil {
		return nil, e.callFailure(ctx, id, hn, call, []string{err.Error()}, opts, took)
	}
	schemaHash, ok := lw.schemas[call.Role]
	if !ok {
		return nil, fmt.Errorf("thread %s: workflow %s has no role %q", id, lw.wf.Name, call.Role)
	}
	schema, err := e.repo.Schema(ctx, schemaHash)
	if err != nil {
		return nil, err
	}
	if verr := schema.Validate(out); verr != nil {
		what := "the child's final output"
		if call.Mode != registry.ModeChild {
			what = "the join's output"
		}
		return nil, e.callFailure(ctx, id, hn, call, []string{fmt.Sprintf("%s does not fit role %s's schema: %v", what, call.Role, verr)}, opts, took)
	}
	outNode := cas.Node{Type: schemaHash, Payload: out}
	outHash, err := outNode.Hash()
	if err != nil {
		return nil, err
	}
	c, err := e.next(ctx, hn)
	if err != nil {
		return nil, err
	}
	j := &Join{Chain: c, Call: cn.Hash, Role: call.Role, Output: outHash, At: e.nowMs()}
	for i, r := range results {
		st := r.status
		if st != StatusDone {
			st = StatusCancelled
		}
		j.Branches = append(j.Branches, JoinBranch{Key: call.Branches[i].Key, Head: r.head.Hash, Status: st})
	}
	hs, err := e.repo.PutNodes(ctx, []cas.Node{outNode, {Type: cas.JoinSchema, Payload: j.Payload()}})
	if err != nil {
		return nil, fmt.Errorf("thread %s: join %s: %w", id, call.Role, err)
	}
	jh := hs[1]
	jn := &Node{Hash: jh, Kind: KindJoin, Join: j}
	if he, err := e.entry(ctx, hn); err == nil {
		e.followEntry(ctx, he, jn, nil)
	}
	if err := e.commit(ctx, id, jh, &j.Chain, "join "+call.Role); err != nil {
		return nil, err
	}
	// The call's own failure record (an earlier attempt whose branches
	// failed) is settled too: it goes, logged, as a completed merge's
	// MERGE_HEAD does.
	e.clearCallFailure(ctx, id, cn.Hash, settledPrefix+call.Role+"@"+jh.String())
	// From now on the join's edges keep the branches: their refs go, and
	// the records of their failed attempts with them.
	for i, r := range results {
		msg := joinedPrefix + id + "@" + jh.String()
		if err := e.refs.CompareAndSwap(ctx, refName(r.id), r.head.Hash, 0, msg); err != nil && !errors.Is(err, cas.ErrNotFound) {
			e.log.Info("branch ref left after the join", "thread", r.id, "branch", call.Branches[i].Key, "error", err)
		}
		if fh, err := e.refs.Get(ctx, FailurePrefix+r.id); err == nil {
			if err := e.refs.CompareAndSwap(ctx, FailurePrefix+r.id, fh, 0, msg); err != nil {
				e.log.Info("branch failure ref left after the join", "thread", r.id, "error", err)
			}
		}
	}
	status := outputStatus(out)
	e.progress(opts, Event{Type: EventStep, Thread: id, Depth: c.Depth, Role: call.Role, Agent: call.Mode, Status: status, Head: jh, Elapsed: took})
	return &StepResult{Thread: id, Kind: EventStep, Head: jh, Depth: c.Depth, Role: call.Role, Agent: call.Mode, Status: status}, nil
}

// joinOutput builds a settled call's output: a child's final output, or a
// stage's {status, branches}.
func (e *Engine) joinOutput(ctx context.Context, call *Call, results []branchResult, winner int) (any, error) {
	if call.Mode == registry.ModeChild {
		return e.finalOutput(ctx, results[0].head)
	}
	lw, err := e.stageWorkflow(ctx, results)
	if err != nil {
		return nil, err
	}
	role := lw.wf.Roles[call.Role]
	if role == nil {
		return nil, fmt.Errorf("workflow %s has no stage %q", lw.wf.Name, call.Role)
	}
	branches := map[string]any{}
	statuses := make([]string, len(results))
	winStatus := ""
	for i, r := range results {
		if r.status != StatusDone || (call.Mode == registry.ModeRace && i != winner) {
			continue
		}
		out, err := e.finalOutput(ctx, r.head)
		if err != nil {
			return nil, fmt.Errorf("branch %s: %w", call.Branches[i].Key, err)
		}
		branches[call.Branches[i].Key] = out
		statuses[i] = outputStatus(out)
		if i == winner {
			winStatus = statuses[i]
		}
	}
	status, err := role.JoinStatus(statuses, winStatus)
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", call.Role, err)
	}
	return map[string]any{"status": status, "branches": branches}, nil
}

// stageWorkflow loads the workflow of a stage's branches (the parent's).
func (e *Engine) stageWorkflow(ctx context.Context, results []branchResult) (*loadedWorkflow, error) {
	for _, r := range results {
		if r.head == nil {
			continue
		}
		sn, err := e.Node(ctx, r.head.StartHash())
		if err != nil {
			return nil, err
		}
		return e.loadWorkflow(ctx, sn.Start.Workflow)
	}
	return nil, fmt.Errorf("no branch has a head")
}

// finalOutput returns the output a finished thread routed to $END from:
// that of the step or join before its done mark.
func (e *Engine) finalOutput(ctx context.Context, head *Node) (any, error) {
	for n, err := range e.NewestFirst(ctx, head.Hash) {
		if err != nil {
			return nil, err
		}
		if _, out, ok := n.routed(); ok {
			on, err := e.repo.Get(ctx, out)
			if err != nil {
				return nil, fmt.Errorf("output of %s: %w", n.Hash, err)
			}
			return on.Payload, nil
		}
	}
	return nil, fmt.Errorf("thread ending at %s has no output: it finished without a step", head.Hash)
}

// callFailure records a call that did not settle: a failure node under
// failures/<id> naming every failed branch; the head stays where it is
// (on the call), so stepping or resuming the thread runs again only the
// branches that did not finish.
func (e *Engine) callFailure(ctx context.Context, id string, head *Node, call *Call, problems []string, opts *RunOptions, took time.Duration) error {
	report := strings.Join(problems, "\n")
	prompt := ""
	if len(call.Branches) > 0 {
		prompt = call.Branches[0].Prompt
	}
	det, nodes, err := e.detailNodes(prompt, &agent.Result{Raw: report, ExitCode: 1}, nil, prompt, took)
	if err != nil {
		return err
	}
	cause := fmt.Errorf("%w: %s %s: %s", ErrBranchFailed, call.Mode, call.Role, report)
	return e.recordFailure(ctx, id, head.Hash, call.Role, call.Mode, nodes, det, cause, opts, head.Depth(), took)
}

// ErrBranchFailed is wrapped by the *[StepError] of a call whose branches
// failed (each is named); the thread's head stays on the call.
var ErrBranchFailed = errors.New("branches failed")

// childrenOf returns the branch threads of the call thread id's head is
// in that still have refs, for kill, resume and rm to reach.
func (e *Engine) liveChildren(ctx context.Context, id string, head *Node) ([]string, error) {
	ids, _, err := e.pendingChildren(ctx, id, head)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cid := range ids {
		if _, err := e.refs.Get(ctx, refName(cid)); err == nil {
			out = append(out, cid)
		} else if !errors.Is(err, cas.ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}

// killChildren kills the active or suspended branches of the call head is
// in, and theirs, depth first.
func (e *Engine) killChildren(ctx context.Context, id string, head *Node, reason string) error {
	kids, err := e.liveChildren(ctx, id, head)
	if err != nil {
		return err
	}
	var errs []error
	for _, cid := range kids {
		if _, err := e.Kill(ctx, cid, reason); err != nil && !errors.Is(err, ErrNotActive) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resumeChildren resumes the suspended branches of the call head is in.
func (e *Engine) resumeChildren(ctx context.Context, id string, head *Node, text string) error {
	kids, err := e.liveChildren(ctx, id, head)
	if err != nil {
		return err
	}
	var errs []error
	for _, cid := range kids {
		hn, err := e.headNode(ctx, cid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if hn.Status() != StatusSuspended {
			continue
		}
		if _, err := e.Resume(ctx, cid, text); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeChildren removes the branch threads of the call head is in, and
// theirs.
func (e *Engine) removeChildren(ctx context.Context, id string, head *Node) error {
	kids, err := e.liveChildren(ctx, id, head)
	if err != nil {
		return err
	}
	var errs []error
	for _, cid := range kids {
		if err := e.Remove(ctx, cid); err != nil && !errors.Is(err, cas.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ChildInfo is a branch of a call, as [Engine.Branches] reads it.
type ChildInfo struct {
	Key    string
	Role   string   // the member a stage's branch runs; "" for a child workflow
	Thread string   // the branch thread's id
	Head   cas.Hash // its head: from its ref, or the join's edge once joined
	Status string   // its status; for a joined branch the join's (done or cancelled)
	Joined bool
	// Set by [Engine.Children]: the call it is a branch of, the call's
	// role, mode and depth.
	Call     cas.Hash
	CallRole string
	Mode     string
	Depth    int
}

// CallInfo is a call on a thread's chain with its branches.
type CallInfo struct {
	Call     cas.Hash
	Join     cas.Hash // zero while the call is pending
	Role     string
	Mode     string
	Depth    int
	Branches []ChildInfo
}

// Calls returns the calls on thread id's chain, oldest first, with their
// branches: a pending call's from the branch refs, a joined call's from
// its join. It walks the whole chain.
func (e *Engine) Calls(ctx context.Context, id string) ([]CallInfo, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []CallInfo
	joins := map[cas.Hash]*Join{}
	hn, err := e.Node(ctx, head)
	if err != nil {
		return nil, err
	}
	owners := &callOwners{e: e, id: id, head: hn}
	for n, err := range e.NewestFirst(ctx, head) {
		if err != nil {
			return nil, err
		}
		switch n.Kind {
		case KindJoin:
			joins[n.Join.Call] = n.Join
		case KindCall:
			ci := CallInfo{Call: n.Hash, Role: n.Call.Role, Mode: n.Call.Mode, Depth: n.Call.Depth}
			j := joins[n.Hash]
			owner := id
			if j != nil {
				owner = owners.at(ctx, j.Depth) // a fork's inherited join: the source's branches
			}
			for i, b := range n.Call.Branches {
				ch := ChildInfo{Key: b.Key, Role: b.Role, Thread: ChildID(owner, n.Hash, n.Call.At, b.Key)}
				if j != nil && i < len(j.Branches) {
					ci.Join = e.joinHash(ctx, n, j)
					ch.Head, ch.Status, ch.Joined = j.Branches[i].Head, j.Branches[i].Status, true
				} else if h, err := e.refs.Get(ctx, refName(ch.Thread)); err == nil {
					ch.Head = h
					if bn, err := e.Node(ctx, h); err == nil {
						ch.Status = bn.Status()
					}
				} else {
					ch.Status = "not started"
				}
				ci.Branches = append(ci.Branches, ch)
			}
			out = append(out, ci)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// joinHash returns the hash of join j of call cn (the join is at a depth
// above the call's).
func (e *Engine) joinHash(ctx context.Context, cn *Node, j *Join) cas.Hash {
	h, err := (cas.Node{Type: cas.JoinSchema, Payload: j.Payload()}).Hash()
	if err != nil {
		return 0
	}
	return h
}

// joinedPrefix starts the log message of a branch ref the join removed.
const joinedPrefix = "joined into "

// settledPrefix starts the log message of a thread's failures/ ref that
// the join of the failed call removed.
const settledPrefix = "settled by join "

// clearCallFailure removes thread id's failure record (failures/<id>)
// after the join of call cn committed, if the record is a failure of that
// call (see [Engine.failureOfCall]), with a compare-and-swap from the
// record read: a failure recorded meanwhile stays. Its log entry keeps the
// failure node for the log's retention. A failure to remove it is logged,
// not returned: the join stands, and [Engine.Show] does not report a
// failure of a joined call.
func (e *Engine) clearCallFailure(ctx context.Context, id string, cn cas.Hash, msg string) {
	name := FailurePrefix + id
	fh, err := e.refs.Get(ctx, name)
	if err != nil {
		if !errors.Is(err, cas.ErrNotFound) {
			e.log.Info("failure record left after the join", "thread", id, "error", err)
		}
		return
	}
	f, err := e.failure(ctx, fh)
	if err == nil {
		var of bool
		if of, err = e.failureOfCall(ctx, f, cn); err == nil && !of {
			return // another failure's record: not this call's to settle
		}
	}
	if err == nil {
		err = e.refs.CompareAndSwap(ctx, name, fh, 0, msg)
	}
	if err != nil {
		e.log.Info("failure record left after the join", "thread", id, "error", err)
	}
}

// failure reads the failure node at fh.
func (e *Engine) failure(ctx context.Context, fh cas.Hash) (*Failure, error) {
	fn, err := e.repo.Get(ctx, fh)
	if err != nil {
		return nil, err
	}
	return DecodeFailure(fn)
}

// failureOfCall reports whether failure f was recorded while call cn was
// pending: at the call, or at a mark after it (a resume).
func (e *Engine) failureOfCall(ctx context.Context, f *Failure, cn cas.Hash) (bool, error) {
	if f.Head == cn {
		return true, nil
	}
	hn, err := e.Node(ctx, f.Head)
	if err != nil {
		return false, err
	}
	if hn.Kind != KindMark {
		return false, nil
	}
	pc, err := e.pendingCall(ctx, hn)
	if err != nil || pc == nil {
		return false, err
	}
	return pc.Hash == cn, nil
}

// joinedCall reports whether f is the failure of a call that the chain
// ending at head has since joined: a stale record (one an older build
// left, or whose removal after the join failed). It reads the failure's
// head, back to its call, and the nodes of the chain from the call's depth
// up to the join (the call and its marks: usually two or three), each
// through the skip pointers.
func (e *Engine) joinedCall(ctx context.Context, f *Failure, head *Node) (bool, error) {
	if f.Head == head.Hash {
		return false, nil
	}
	fn, err := e.Node(ctx, f.Head)
	if err != nil {
		return false, err
	}
	cn, err := e.pendingCall(ctx, fn)
	if err != nil || cn == nil || cn.Depth() >= head.Depth() {
		return false, err
	}
	if at, err := e.Ancestor(ctx, head.Hash, cn.Depth()); err != nil || at.Hash != cn.Hash {
		return false, err // not on this chain (a fork's, say)
	}
	for d := cn.Depth() + 1; d <= head.Depth(); d++ {
		n, err := e.Ancestor(ctx, head.Hash, d)
		if err != nil {
			return false, err
		}
		switch {
		case n.Kind == KindJoin && n.Join.Call == cn.Hash:
			return true, nil
		case n.Kind != KindMark:
			return false, nil
		}
	}
	return false, nil
}

// Parent is the call a branch thread runs under.
type Parent struct {
	Thread string   // the parent thread, from the branch's creation log entry
	Call   cas.Hash // the call node on the parent's chain
	Key    string   // the branch's key
}

// parentThread reads the parent of branch thread id from its creation log
// entry ("child of P@C/K", the newest entry that created the ref); "" if
// the thread was created otherwise (a fork of a branch) or its log does
// not say.
func (e *Engine) parentThread(ctx context.Context, id string) string {
	log, err := e.refs.Log(ctx, refName(id))
	if err != nil {
		return ""
	}
	for _, le := range slices.Backward(log) {
		if !le.Old.IsZero() || le.New.IsZero() {
			continue
		}
		if p, _, _, ok := ParseChildMessage(le.Message); ok {
			return p
		}
		return ""
	}
	return ""
}

// branches returns the branches of the call head is in, with their
// status; nil when it is in none.
func (e *Engine) branches(ctx context.Context, id string, head *Node) ([]ChildInfo, error) {
	ids, cn, err := e.pendingChildren(ctx, id, head)
	if err != nil || cn == nil {
		return nil, err
	}
	out := make([]ChildInfo, len(ids))
	for i, cid := range ids {
		b := cn.Call.Branches[i]
		ch := ChildInfo{Key: b.Key, Role: b.Role, Thread: cid, Status: "not started"}
		if h, err := e.refs.Get(ctx, refName(cid)); err == nil {
			ch.Head = h
			if bn, err := e.Node(ctx, h); err == nil {
				ch.Status = bn.Status()
			}
		} else if !errors.Is(err, cas.ErrNotFound) {
			return nil, err
		}
		out[i] = ch
	}
	return out, nil
}

// branchReplay returns the options of branch b of call cn: opts, but for
// an agent replay:<source> the replay of the source's own branch (the
// branch of the same key under the source's call at the same depth), so
// a replayed parent re-runs its branches from their recorded outputs.
func (e *Engine) branchReplay(ctx context.Context, cn *Node, b Branch, opts *RunOptions) *RunOptions {
	src, ok := strings.CutPrefix(opts.Agent, "replay:")
	if !ok {
		return opts
	}
	src, err := ParseID(src)
	if err != nil {
		return opts
	}
	head, err := e.Head(ctx, src)
	if err != nil {
		return opts
	}
	anc, err := e.Ancestor(ctx, head, cn.Depth())
	if err != nil || anc.Call == nil || anc.Call.Role != cn.Call.Role {
		return opts // the source made no such call: the replay diverges, and says so
	}
	o := *opts
	o.Agent = "replay:" + ChildID(src, anc.Hash, anc.Call.At, b.Key)
	return &o
}
