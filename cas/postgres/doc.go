// Package postgres is uwf's shared backend: a [cas.Store] and [cas.Refs]
// kept in PostgreSQL (through github.com/jackc/pgx/v5), for many workers on
// many machines sharing one store.
//
//	st, err := postgres.Open(ctx, "postgres://user@host/db", nil)
//	...
//	defer st.Close()
//	repo, err := cas.Open(ctx, st, st.Refs(), nil)
//
// # Tables
//
// A store lives in one SQL schema ([Options].Schema, default "uwf"), so
// several stores can share a database. docs/FORMAT.md specifies it; in
// short:
//
//   - schema_version(version): one row, the store's format version (1 or
//     2; a new store is [SchemaVersion]). [Open] creates the tables of a
//     new store under an advisory lock, writes nothing to a store at a
//     known version, and refuses a newer one ([cas.ErrFormat]); the
//     version moves only by [Refs.BumpFormat]. Additive SQL objects are
//     recorded apart, in the table additions; an existing store gets
//     missing ones at its first ref change by this build, never at Open,
//     and readers take absent ones as empty.
//   - objects(hash bigint primary key, data bytea, size bigint, time
//     timestamptz): one row per object. The hash is the XXH64 read as a
//     signed 64-bit integer; time is when the object was last put, touched
//     or made a ref's target, by the server's clock.
//   - refs(name text COLLATE "C" primary key, lower_name unique, hash
//     bigint): the live refs. The "C" collation orders names by bytes;
//     lower_name is lower(name) and its unique index refuses two names
//     that differ only in case, whatever the application does.
//   - ref_log(id identity, name, old, new, time_ms, message): every change,
//     in id order per name. Deleted refs keep their rows until PruneLog.
//
// # Clocks
//
// Object ages and log times come from the database server's clock
// (clock_timestamp()), never a client's, so workers with skewed clocks
// agree on ages; [Store.Now] reads it. Stored times have microsecond
// precision; log times are Unix milliseconds.
//
// # Compare-and-swap
//
// A move is UPDATE refs ... WHERE name = $1 AND hash = old, a delete
// DELETE ... WHERE name = $1 AND hash = old, each in one statement with
// the INSERT of its log row, so the change and its log entry commit
// together; if no row matched, the ref's current value goes into the
// *[cas.ConflictError]. A create runs in a transaction: it takes the
// name's advisory locks, checks that the ref does not exist and that no
// live ref clashes with it, then runs INSERT ... ON CONFLICT DO NOTHING
// with the log row.
//
// Name clashes (names equal but for case, or one a folder of the other)
// are detected race-free across clients with transaction-scoped advisory
// locks: a create (and an ImportLog) takes a shared lock on each lower-case
// folder of the name, outermost first, and an exclusive lock on the
// lower-case name itself. Two clashing names lie on one chain of folders,
// so one transaction waits for the other and then sees its row; unrelated
// names under one folder (threads/A, threads/B) share only shared locks
// and proceed in parallel. Moves and deletes take no advisory lock: the
// ref's row lock orders them.
//
// # Watching refs
//
// [Refs] implements [cas.Watcher]: events are ref_log rows in id order,
// the cursor a row's id. Every statement that inserts log rows first takes
// a transaction-level advisory lock shared (held until the transaction
// ends, taken before the row gets its id, after the ref's own locks), so
// concurrent moves commit in parallel; a reader delivers ids while they
// are contiguous and, at a gap, takes the lock exclusive for an instant (a
// barrier that waits for every writer holding it) before passing a missing
// id for good, so a reader resuming from "id > last" skips nothing. After
// a commit the Store wakes its own watchers and sends one coalesced
// pg_notify outside the write transaction; one LISTEN connection per Store
// wakes its watchers, which also poll every few seconds (all that sees a
// change whose process died before notifying). Rows ImportLog
// adds as history are listed in ref_log_quiet, and the highest id that
// PruneLog or a log rewrite removed in watch_trim (the addition watch-1),
// so a watch behind it is told [cas.ErrCursorGone]. A version-1 binary
// takes no lock and sends no notification: its changes are seen at the
// next poll, and one that commits late may be missed.
//
// # A step's writes
//
// [Store.PutLinked] and [Refs.SwapTouching], the fast paths [cas.Repo]
// takes for a node put and a ref move, are each one pipelined batch: one
// round trip and one commit, under the store-wide lock taken shared at
// transaction level. A thread step's nodes and its ref move
// ([Refs.PutLinkedSwap], for [cas.Repo.PutNodesMove]) are one such batch
// together: one commit, so one WAL flush to wait for, a step. Concurrent commits share WAL flushes, so many
// workers stepping at once cost far fewer flushes than steps. An age
// refreshed within the last second is not written again while no GC holds
// the GC lock: rows many steps name would otherwise queue every step
// behind one another's commits.
//
// # Locks
//
// The store-wide lock ([Store.Lock]) is a session-level advisory lock,
// shared for writers and exclusive for a GC sweep batch, held on a
// connection that the holder keeps for its lifetime. Those connections
// come from a pool of their own, so holders never starve the operations
// they perform while holding the lock. PostgreSQL queues lock requests: a
// waiting exclusive request holds back shared requests made after it, so
// writers cannot starve a GC. A request whose ctx ends while it waits is
// cancelled on the server and its connection closed, so it leaves no lock
// and no queued request behind. The GC lock ([Store.LockGC]) is
// pg_try_advisory_lock on a connection opened for it alone. The server
// releases every lock of a process that dies (with PostgreSQL 14 and later
// also while its request still waits, through
// client_connection_check_interval).
//
// # Concurrency
//
// A [Store] and its [Refs] are safe for concurrent use by goroutines and,
// through the database, by processes on any number of machines.
//
// # Caveats
//
//   - A Store opens at most 2*MaxConns+1 connections: MaxConns for
//     operations, MaxConns for lock holders, one for a running GC. Size the
//     server's max_connections for every worker.
//   - Close waits for every connection in use: call each unlock first.
//   - Log messages are PostgreSQL text: one that is not valid UTF-8 or
//     holds a NUL byte is refused with [cas.ErrInvalid].
//   - A statement that fails because its ctx ended may still have
//     committed if the server finished it first, as with any database.
//   - [Store.DeleteIfOlder] commits asynchronously: a server crash may
//     bring back the last objects a GC deleted (never a node without its
//     children); the next GC takes them again.
package postgres
