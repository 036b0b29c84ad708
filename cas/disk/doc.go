// Package disk is uwf's default, embedded backend: a [cas.Store] (with the
// [cas.BatchPutter] fast path) and [cas.Refs] kept in one folder on a local
// filesystem, shared safely by goroutines and by any number of processes.
//
// [Create] makes a store, [Open] opens one, [OpenOrCreate] does whichever is
// needed (safely when several processes start at once). [Store.Refs] returns
// the refs of the same store.
//
// # Layout
//
// Format versions 1 and 2 (docs/FORMAT.md has the full specification) share
// this layout:
//
//	FORMAT                    "uwf store 1\nbackend disk\nhash xxh64\n" (or 2)
//	objects/YZ/<HASH>         an object's bytes; YZ = the last two characters
//	                          of its 13-character canonical hash; the file's
//	                          modification time is the object's age (read
//	                          allowing for the filesystem's granularity:
//	                          see Store.DeleteIfOlder)
//	tmp/.tmp-<pid>-<n>        temporary files, published by rename or link
//	tmp/new-<random>/         empty folders a batch makes its unnamed files
//	                          in (newdir.go); removed when closed, or by
//	                          Open and GC after an hour
//	refs/<lower-cased name>   a ref: "<HASH> <Name>\n" (Name case-preserved)
//	logs/<lower-cased name>@.jsonl
//	                          a ref's log: one JSON object per line,
//	                          {"old","new","time","message","name"[,"import"]};
//	                          a folder a pruned log leaves empty is removed
//	lock                      the store-wide lock (flock: shared or exclusive)
//	gc.lock                   the GC lock (flock, never waited for)
//	cache/XY/<62 hex digits>  the droppable derived cache ([cas.Derived]), not
//	                          part of the format: one file per entry, the key,
//	                          a newline and the entry, at the hex SHA-256 of
//	                          the key; written unsynced by rename, never read
//	                          by GC, fsck, export or import; deleting the
//	                          folder loses nothing. On Linux an entry keyed
//	                          "<kind>/<HASH>" lives in the attribute
//	                          user.uwf.<kind> of that node's object file
//	                          instead (no file made; see derived.go)
//	locks/refs                the lock for creating and deleting refs
//	locks/ref-XX              256 striped locks for moving refs
//	journal/<seg>             the watch journal's segments (an additive
//	                          extra: see Watching refs)
//	journal/pruned            the newest PruneLog cutoff
//	locks/journal, locks/journal.gate
//	                          the journal's lock and its gate
//
// Shard folders and lock files are created when first needed. The FORMAT
// file is written last, without overwriting, so concurrent creators agree;
// Open refuses a version or setting it does not know ([cas.ErrFormat]). A
// new store is at version 1; [Refs.BumpFormat] replaces FORMAT, under the
// lock locks/refs, when the first node of a version-2 kind is written.
//
// A ref's path is its lower-cased name, so two names that differ only in
// case are the same path, and a name that is a folder of another ("a/b" and
// "a/b/c") shows as a file where a folder is needed or the reverse: clashes
// are detected on any filesystem, case-sensitive or not, and across
// processes (creation holds locks/refs). A log file's name ends in "@", which
// ref names cannot hold, so logs of live and deleted refs never collide.
//
// # Durability
//
// [DurabilityStrict] (the default) makes every operation durable before it
// returns. An object is written to a temporary file in tmp/, synced, closed,
// published under its name without overwriting (renameat2 RENAME_NOREPLACE,
// or link(2) and removing the temporary name where that is unavailable), and
// its shard folder is synced; a shard folder created on the way is synced
// into objects/ too. [Store.PutBatch] writes all its new files (on Linux,
// unnamed O_TMPFILE files made in folders tmp/new-*, published with linkat(2),
// which never overwrites: no entry in tmp/ and nothing left by a crash;
// temporary files in tmp/ elsewhere, and past 256 open files), makes
// them durable together with one syncfs(2) (concurrent fsyncs from a bounded
// pool where syncfs is unavailable), publishes them in input order, then
// makes the touched folders durable with a second syncfs (an fsync of each
// touched folder without it). A ref change appends its log line with
// O_APPEND and writes the new ref file to a temporary file, makes both
// durable at one flush point (one syncfs, or an fsync of each), renames
// the temporary file over the ref file and syncs its folder (see
// [Refs.CompareAndSwap]). A strict thread step (a batch of its nodes, then
// the move of its thread's ref) thus makes four flushes on Linux, however
// many nodes and folders it touches. [DurabilityNone] skips every
// fsync: a power loss may lose recent writes or leave recent objects empty or
// damaged (Get reports them; putting them again heals them); a crash of the
// process alone loses nothing.
//
// A Put that finds its bytes already stored does not sync them again: they
// were made durable by the writer that stored them (unless that writer used
// DurabilityNone, or is still between publishing and syncing them).
// Refreshing an object's age (a re-put, [Store.Touch]) and deleting an
// object ([Store.DeleteIfOlder]) are not synced either: after a power loss an
// object may look older than it is, or come back; neither matters once the
// writers that relied on them are gone.
//
// # Concurrency
//
// Objects are immutable and published atomically, so reads take no lock.
// Put, Touch and DeleteIfOlder of one hash exclude each other within a
// process through 256 striped mutexes; across processes, callers hold the
// store-wide [Store.Lock] (shared for writers, exclusive for a GC sweep
// batch), which is flock(2) on a new open file description per holder, so it
// works the same between goroutines and between processes and is released
// when a process dies. [Store.LockGC] is a non-blocking flock on gc.lock.
//
// Creating or deleting a ref takes locks/refs and then the ref's stripe
// (locks/ref-XX, chosen by a hash of the lower-cased name); moving a ref takes
// only its stripe, so unrelated refs move in parallel. Reading a ref takes no
// lock (ref files are replaced atomically); reading a log takes its stripe
// shared.
//
// # Crash safety
//
// After a crash at any point (SIGKILL, or a power loss with
// DurabilityStrict):
//
//   - every object file under its name is whole (temporary files are
//     published only once complete); a store that is damaged anyway (a bit
//     flip, a truncated file) is detected by [Store.Get], which re-hashes
//     every read, and healed by putting the right bytes again;
//   - temporary files left in tmp/ are removed by Open, and by every GC
//     ([Store.RemoveStaleTemps]), once their inode change time (which only
//     the kernel sets) is an hour old ([cas.StaleTempAge]); fsck counts
//     them ([Store.CountTemps]); so are the empty folders tmp/new-* of a
//     writer that crashed (not counted);
//   - a ref and its visible log agree. A change is made under the ref's
//     locks in this order: (1) read the ref and check the expected value;
//     (2) append the log line and write the new ref file's temporary file,
//     then make both durable at one flush point; (3) rename the temporary
//     file over the ref file (or remove it, for a delete). Any other write
//     that must be durable before a ref moves goes in (2), noted with the
//     flush point, so that the same flush covers it (see Refs.commit).
//     A crash between (2) and (3) leaves a last
//     log entry whose old is the ref's value and whose new is not: an
//     uncommitted intent. [Refs.Log] does not return it, and the next change
//     of the ref truncates it before appending. A torn last line (no final
//     newline) is likewise ignored by readers and truncated by the next
//     writer. Entries added by [Refs.ImportLog] are marked and never taken for
//     intents;
//   - no lock stays held: flock locks die with their process.
//
// # Watching refs
//
// [Refs] implements [cas.Watcher] over a store-wide, append-only journal:
// each ref change (and each ImportLog that creates a ref) appends a record,
// a ref-log line, to the newest segment of journal/, beside its log line
// and flushed at the same point, under the ref's lock, before the ref
// moves. A watch reads the records after its cursor (d.<segment>.<offset>)
// and delivers each once the ref's log, read under the ref's lock, shows
// the change committed, so a change a crash kept from committing is never
// delivered. The changes made through the same Store need no such reading:
// their writers tell the Store's watchers how each ended, and wake them once
// the ref's lock is free; a watcher that meets a record of its Store still
// midway delivers the records before it and waits for that wake-up.
// Other processes' changes wake the watchers through inotify on Linux, and
// a poll (every 250 ms without inotify, every 2 s with it) catches the rest.
// PruneLog removes the oldest segments whose every record is older than
// its ref's cutoff, and records the newest cutoff of the refs whose
// entries went; a watch whose cursor was removed, or that meets a record
// its log no longer shows and older than that cutoff, is told
// [cas.ErrCursorGone] once. A version-1 binary writes no records: its
// changes are not seen.
//
// # Platforms
//
// The store runs on Linux, macOS and the other Unix systems. On Linux it
// publishes with renameat2(2) RENAME_NOREPLACE and makes a batch, and the
// writes before a ref move, durable with syncfs(2) (falling back, per call,
// where the kernel or filesystem lacks them); elsewhere it takes the
// portable path: link(2) then removing the temporary name, and an fsync of
// each file and folder a flush point covers. Both paths run
// the conformance suite on Linux. On Windows there is no flock(2), which the
// store's cross-process locks rely on: [Create] and [Open] fail with an error
// wrapping [errors.ErrUnsupported] that says so (use a PostgreSQL store).
package disk
