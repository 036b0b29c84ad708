// Package thread is uwf's thread engine: start, step and mark nodes chained
// with skip-list ancestor pointers, thread heads moved by compare-and-swap,
// forks, reading, replay, and the step loop that runs agents (SPEC §5).
//
// # Vocabulary
//
//   - A start node begins a thread: the workflow, the user's prompt and the
//     working folder. Identical starts share one node. Its depth is 0.
//   - A step node records one role's work: its typed output and a detail
//     node (the assembled prompt, the raw output, timings).
//   - A mark node records a lifecycle event in the chain: done, killed,
//     suspended, resumed.
//   - Steps and marks carry chain fields: start, prev (null for the first),
//     depth, and skip pointers: Skip[k-1] is the ancestor at distance 2^k,
//     for k = 1..10, when that ancestor is a step or mark. With them any
//     ancestor within 2^11 is reached in O(log distance) reads.
//   - A thread is a ULID and one ref, threads/<ulid>, pointing at its head.
//     Its status is read from the head: active for a start, a step or a
//     resumed mark, else the mark's kind.
//   - The step limit is a workflow's maxSteps, or [RunOptions.MaxSteps]
//     (default [DefaultMaxSteps]) for one without: the steps since the
//     start, the fork point or the last resume. Reaching it appends a
//     suspended mark naming it, reported as an [EventLimit].
//
// # Composition
//
// A role that runs a workflow, and a parallel or race stage (format version
// 2; docs/WORKFLOWS.md, "Composition"), are stepped as a call node,
// committed before any branch starts, then a branch thread per key (its id
// [ChildID] of the thread, the call and the key; its start a child-start
// node naming both), each run under a lease ([Engine.Acquire]), then a
// join node with an edge to each branch's final head and the role's
// output. A step of a thread in a call carries on its unfinished branches;
// kill, resume and rm of a thread reach them; [Engine.Calls] lists a
// thread's calls and branches.
//
// # Views
//
// What a person inspects is assembled here, not by the CLI: [Engine.Show]
// and [Engine.List] describe threads, [Engine.Steps] lists a chain with
// each step's output status, [Engine.StepView] expands one step (output,
// detail, prompt, raw output, stderr, failed attempts) and [Engine.Read]
// renders a thread as markdown. A node a view needs that is absent,
// damaged or of the wrong kind is an error naming it.
//
// # The step cache
//
// What a step and [Engine.Show] need of the rest of a thread (the steps on
// the chain, per role and since the last resume; the fork point) is kept
// in the store's droppable derived cache ([cas.Derived]), filled as steps
// and marks are committed and lazily for threads an older build wrote, and
// checked against the nodes whenever it is read: a missing, stale, torn,
// foreign or poisoned entry is recomputed. So a step and a show read a
// bounded number of nodes and no ref log, at any depth
// (docs/ARCHITECTURE.md, "The step cache").
//
// # Secrets
//
// Everything recorded from an agent (raw output, stderr, failed attempts,
// the error of a failed run) is masked before extraction and storage:
// each known secret of at least 8 bytes (the store URL's password in
// [RunOptions.Store], the config's [config.Config.Secrets],
// [RunOptions.Secrets]) reads "********".
//
// # Runs and leases
//
// Who runs a thread right now is recorded in the store, not in a process.
//
// A thread's run record (ref runs/<thread>, a [Run]) says whether it is
// queued, running under a lease, retrying or failed. Any process may hold
// a lease: a worker claiming queued work, the HTTP server running a thread
// it started, the runner of a parallel branch. The contract is the same
// for all of them:
//
//  1. Get a lease: [Engine.Claim] takes a queued (or retrying, once its
//     backoff ended) run, or takes over a running one whose lease expired
//     by the STORE's clock; [Engine.Acquire] also creates the run record
//     when the thread has none (it needs no queue). Each is one
//     compare-and-swap of runs/<thread>; a lease still held by another
//     fails with a *[LeaseHeldError]. A run taken over more than
//     [LeaseOptions.MaxTakeovers] times (a poison pill) is failed by the
//     claim instead ([ErrTakeoverLimit]).
//  2. Keep it: [Lease.Keep] renews it in the background every third of its
//     length and returns a context that is cancelled, with cause a
//     *[LeaseLostError], when the lease is lost: another holder took it, a
//     user killed or removed the thread (the record dropped, seen at once
//     through the store's watch, one per Engine shared by all its leases:
//     [Engine.Changes]), or this process's own monotonic clock
//     says the lease may have expired (its expiry minus a margin) because
//     renewals failed or the process was frozen. [Lease.Lost] is the same
//     news as a channel.
//  3. Work under that context: [Engine.Step] and [Engine.StepN] given it
//     commit only while [Lease.Check] passes (checked right before each
//     compare-and-swap of the thread's head, whose log message then names
//     the worker, its build and the attempt), and an agent run under it is
//     ended, with its whole process group, when it is cancelled. So a
//     holder that lost its lease commits nothing; the head compare-and-swap
//     remains the fence that keeps two commits off one chain position.
//  4. Give it back: stop the renewals (the function Keep returned), then
//     [Lease.Release] when the thread no longer needs running (done,
//     suspended, killed: the record is deleted), [Lease.Requeue] to hand it
//     to another worker, [Lease.Retry] after a failed step (claimable again
//     after a backoff), or [Lease.Fail] to take it out of the queue as
//     failed. Each is a compare-and-swap from the holder's own record, so
//     it fails with a *[LeaseLostError] if the lease changed hands.
//
// Expiry is always computed and compared on the store's clock
// ([cas.Store.Now]: the database server's on PostgreSQL, the machine's on
// disk and in memory), never across machines' clocks; the holder's local
// validity uses only its monotonic clock, started before it read the
// store's clock, so it ends before the stored expiry.
//
// Example, for a process that runs one thread under a lease:
//
//	l, err := eng.Acquire(ctx, id, "branch-runner-1", nil)
//	if err != nil { ... } // a *LeaseHeldError: someone else runs it
//	lctx, stop := l.Keep(ctx)
//	_, err = eng.StepN(lctx, id, 0, opts)
//	stop()
//	if cause := context.Cause(lctx); errors.Is(cause, thread.ErrLeaseLost) { return cause } // nothing more to do
//	return l.Release(ctx, "done")
//
// The fence applies to commits of the leased thread: a context may carry
// several leases (a parent's Keep context around a branch's), and each
// commit checks the one on its own thread.
//
// # Concurrency
//
// An [Engine] is safe for concurrent use, and any number of engines in any
// number of processes may share a store: every change of a thread is one
// compare-and-swap of its ref from the new node's prev (or its start), so
// two writers racing on one thread cannot both win; the loser gets a
// *[ConflictError] naming the current head, and its nodes stay until GC.
package thread
