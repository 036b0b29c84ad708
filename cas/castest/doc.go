// Package castest is the conformance suite for [cas.Store] and [cas.Refs]
// backends, and the failing-backend wrappers that drive error paths in the
// layers above them.
//
// A backend's test is one call:
//
//	func TestConformance(t *testing.T) {
//		castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
//			s := openFreshStore(t)
//			return s, s.Refs()
//		})
//	}
//
// [Run] calls open once per subtest, for a fresh, empty store and its refs,
// and re-hashes every object when the subtest ends ([Verify]). [RunStore]
// and [RunRefs] run the halves separately.
//
// [Run] also runs the GC interleaving tests ([RunGC]): [cas.Repo.GC] over
// the backend with a writer acting between sweep batches, or a read that
// fails while GC orders its candidates; each ends with a clean fsck.
//
// # Clocks
//
// The suite never sets a backend's clock: it reads it with
// [cas.Store.Now] and works with cutoffs relative to it, sleeping a few
// milliseconds where time must pass, so it also suits a backend whose clock
// is a database server's. The clock must advance. [RunRefs] alone has no
// store: it reads the refs' clock through [Clock] if the refs implement it,
// else the local clock.
//
// # Optional abilities
//
// A store that implements [Corrupter] also gets the corruption tests (Get
// reports [cas.ErrCorrupt], Put heals; GC deletes a corrupt unreachable
// node before anything it might reach). A store that implements
// [cas.BatchPutter] has its PutBatch tested; others are tested through the
// [cas.PutBatch] fallback. Refs that implement [RefDropper] also get the
// missing-ref tests (a missing ref whose path another ref took, in another
// case, is cleared by Replace to zero, the other ref left alone).
//
// # Semantics the suite pins
//
// Where the contracts leave room, the suite decides, for every backend:
//
//   - Times: an object's Time is within the store's Now readings taken
//     around its Put or Touch; DeleteIfOlder deletes only a Time strictly
//     before cutoff (cutoff equal to the listed Time keeps it, Time + 1ms
//     deletes it). A ref-log entry's Time is within the Unix-millisecond
//     readings of the clock around the change, and sequential changes have
//     non-decreasing times. Now never goes back between consecutive calls.
//   - PutBatch refreshes the age of objects already present, as Put does.
//   - Lock is advisory: no Store method waits for it, so GC can call the
//     store while holding it exclusively. A waiting exclusive request is not
//     starved by overlapping shared holders; a cancelled request leaves no
//     lock held and holds no other request back. A stale unlock (called
//     again after a later grant) releases nothing.
//   - A listing (All, List, Logs) stops when the loop breaks, and its loop
//     body may call any method of the same backend.
//   - A done ctx: All, List, Logs and Lock fail with an error wrapping
//     [context.Canceled]; other methods may succeed, but if they fail the
//     error wraps it and a failed change changed nothing.
//   - Errors for an absent object name its hash; for an absent ref, its
//     name. Get returns no bytes with an error.
//   - List sorts by byte order ("B" < "a-1" < "a/x" < "a0" < "aC" < "a_b").
//   - A name clash is a *[cas.ConflictError] with Name the requested ref,
//     Expected the given old, Current zero and Clash the existing ref. A
//     deleted ref's log never blocks a name: "a/b" may be created after
//     "a/b/c" was deleted, and both logs remain.
//   - CompareAndSwap with old == new == zero on an absent ref succeeds and
//     logs nothing.
//   - PruneLog keeps, for a live ref, its newest entry and the entry that
//     created its current incarnation: the last one with a zero Old. For a
//     deleted ref whose newest entry is not older than before, older
//     entries are dropped like any others. Each ref's cutoff is that of
//     the longest prefix its name starts with ([cas.LogCutoff]), and a
//     watch never skips a change pruned that way unsaid: it delivers it
//     or yields [cas.ErrCursorGone].
//   - ImportLog merges as [cas.MergeLog] says, whatever the entries'
//     times: runs of linked entries keep their given order, a run goes
//     where it links (time picks among equal places), a live ref's log
//     never gets a run at its end that would move it, and what links
//     nowhere goes before the current creation entry (cases: clocks that
//     step back, A->B->A detours, delete and recreate, diverged logs).
//   - ImportLog de-duplicates within the import too; an empty import
//     changes nothing (no empty log); an import that would create a ref
//     whose name clashes with a live one fails with a *[cas.ConflictError]
//     (Clash set) and changes nothing, while one that creates no ref may
//     add a log under a clashing name.
//
// # Watching
//
// Refs that implement [cas.Watcher] also get the watch tests: every
// committed CompareAndSwap and Replace is delivered exactly once, in its
// ref's log order, with the log's entry; a conflict or a no-op delivers
// nothing; prefixes filter by name; a watch from any event's cursor yields
// exactly the rest, and from the zero cursor everything; WatchHead then a
// change then a watch sees it; concurrent writers on many refs are all
// delivered, none twice; a malformed cursor fails with
// [cas.ErrInvalidCursor]; PruneLog and an ImportLog into an existing log
// deliver nothing and an ImportLog that creates a ref one event; a
// cancelled watch ends with the context's error. Refs that implement
// [Reopener] are also watched through a second instance on the same store
// (another process), which must wake within [WatchWakeBound]. [FaultyRefs]
// passes Watch through.
//
// # Fault injection
//
// [FaultyStore] and [FaultyRefs] wrap a backend and fail the calls a Fail
// function chooses; [FailOp], [FailOn], [FailAfter], [FailFirst] and
// [FailAny] build common Fail functions, and [ErrInjected] is a ready-made error for them.
package castest
