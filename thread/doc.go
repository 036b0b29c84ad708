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
// # Concurrency
//
// An [Engine] is safe for concurrent use, and any number of engines in any
// number of processes may share a store: every change of a thread is one
// compare-and-swap of its ref from the new node's prev (or its start), so
// two writers racing on one thread cannot both win; the loser gets a
// *[ConflictError] naming the current head, and its nodes stay until GC.
package thread
