package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/wake"
)

// Watching refs (SPEC §4). Events are the rows of ref_log, the cursor a
// row's id in decimal. Ids are assigned at insert, not at commit, and
// concurrent moves commit in any order, so a reader resuming from "id >
// last" must not pass an id that is still to commit. Every statement that
// appends a log row first runs the watch step (watchStep): it takes the
// advisory lock watchLock SHARED, held until its transaction ends, before
// the row gets its id (nextval runs as the row is formed, after the step),
// so every id handed out belongs to a transaction holding the lock until
// it commits or rolls back. Writers do not wait for one another. A reader
// delivers ids in order while they are contiguous; at a gap (an id missing
// below one it sees) it takes the lock EXCLUSIVE for an instant (barrier:
// it waits for every writer that holds it, then releases it) and reads
// again: every id up to the highest seen before is then committed or never
// will be (rolled back, pruned), so the missing ones are passed for good.
//
// Wake-ups: after a commit that logged a change, the Store wakes its own
// watchers at once and asks its notifier (notify.go) to send one
// coalesced NOTIFY on the schema's channel, in a transaction of its own
// (no write transaction waits for it, or for the global lock PostgreSQL
// takes to queue notifications at commit). One LISTEN connection per
// Store wakes its watchers; they also poll every pollListening, which
// catches a change whose process died between its commit and its
// notification, and the writes of version-1 binaries (they neither lock
// nor notify: a late commit of theirs may be passed as missing).
//
// Rows that are not changes (those ImportLog adds to an existing log,
// or rewrites) are listed in ref_log_quiet; the highest id that PruneLog
// or a log rewrite removed is in watch_trim, so a watch whose cursor is
// older learns that it missed something (cas.ErrCursorGone). Both tables
// are an addition (see additions), not part of the format: made at the
// first write that needs them, and read as empty while absent.

const (
	// pollListening is how often a watcher reads without a notification
	// while the LISTEN connection is up; pollAlone, while it is down.
	pollListening = 3 * time.Second
	pollAlone     = time.Second
)

// watchPage bounds the rows one read of a watch returns (a variable for
// tests).
var watchPage = 1000

// watchAddition makes the tables of the watch: see above. Made with a new
// store or at the first ref change by this build (the additions
// mechanism, never at Open); a version-1 build ignores them.
var watchAddition = addition{
	name: "watch-1",
	stmts: []string{
		`CREATE TABLE IF NOT EXISTS {{S}}.ref_log_quiet (
			id bigint PRIMARY KEY REFERENCES {{S}}.ref_log (id) ON DELETE CASCADE
		)`,
		`CREATE TABLE IF NOT EXISTS {{S}}.watch_trim (
			one boolean PRIMARY KEY DEFAULT true CHECK (one),
			id bigint NOT NULL
		)`,
	},
}

// watchLockKey is the advisory lock that writers of log rows hold shared
// and readers take exclusive at a gap.
func watchLockKey(schema string) int64 { return lockKey(schema, "watch", "") }

// watchChannel is the schema's notification channel, an identifier under
// 63 bytes whatever the schema's name.
func watchChannel(schema string) string {
	return "uwf_watch_" + strconv.FormatUint(uint64(lockKey(schema, "channel", "")), 16)
}

// watchStep is the CTE "w" (name) that every statement appending a log
// row selects the row's name from: the watch lock, shared, once per row
// of from (none when the change did not happen). It is evaluated as w's
// row is produced, before the INSERT reading w forms its row (and calls
// nextval for its id).
func watchStep(schema, from string) string {
	return `w AS (
			SELECT f.name, pg_advisory_xact_lock_shared(` + strconv.FormatInt(watchLockKey(schema), 10) + `) AS locked
			FROM ` + from + ` f
		)`
}

// trimStep is a CTE recording in watch_trim the highest id among the
// changes that CTE from deleted (it must return their id); rows listed in
// ref_log_quiet are history, never delivered, so removing them trims
// nothing. (The statement sees ref_log_quiet as it was before it: the
// cascade runs at its end.)
func trimStep(from string) string {
	return `t AS (
			INSERT INTO {{S}}.watch_trim (one, id)
			SELECT true, max(x.id) FROM ` + from + ` x
			WHERE NOT EXISTS (SELECT 1 FROM {{S}}.ref_log_quiet q WHERE q.id = x.id)
			HAVING count(*) > 0
			ON CONFLICT (one) DO UPDATE SET id = greatest({{S}}.watch_trim.id, EXCLUDED.id)
		)`
}

// watchQueries adds the watch's statements to q.
func (q *queries) watchQueries(schema string, w func(string) string) {
	// The log rows after $1 (of every ref: watchers filter them), in id
	// order, each with whether it is quiet (history, not a change), and the
	// trim mark; watchReadBare is the same for a store without the watch's
	// tables (an addition: none is quiet, nothing was trimmed).
	read := func(quiet, trim string) string {
		return q.expand(`SELECT m.trim, l.id, l.name, l.old, l.new, l.time_ms, l.message, l.quiet
		FROM (SELECT coalesce(` + trim + `, 0) AS trim) m
		LEFT JOIN LATERAL (
			SELECT r.id, r.name, r.old, r.new, r.time_ms, r.message, ` + quiet + ` AS quiet
			FROM {{S}}.ref_log r
			WHERE r.id > $1
			ORDER BY r.id LIMIT $2
		) l ON true
		ORDER BY l.id`)
	}
	q.watchRead = read(`EXISTS (SELECT 1 FROM {{S}}.ref_log_quiet q WHERE q.id = r.id)`, `(SELECT id FROM {{S}}.watch_trim)`)
	q.watchReadBare = read(`false`, `NULL::bigint`)
	// The barrier: the watch lock exclusive, in a transaction of its own
	// (autocommit), so it is released as soon as it is granted, and on any
	// error: it returns when every writer holding it shared has ended.
	q.watchBarrier = `SELECT pg_advisory_xact_lock(` + strconv.FormatInt(watchLockKey(schema), 10) + `)`
	head := func(trim string) string {
		return q.expand(`SELECT greatest(coalesce((SELECT max(id) FROM {{S}}.ref_log), 0), coalesce(` + trim + `, 0))`)
	}
	q.watchHead = head(`(SELECT id FROM {{S}}.watch_trim)`)
	q.watchHeadBare = head(`NULL::bigint`)
	// The highest id ever handed out (0 if none): no cursor is beyond it.
	// A role that may not read the sequence (SELECT on the tables alone)
	// gets the highest id in the log.
	q.watchTop = q.expand(`SELECT greatest(coalesce((SELECT max(id) FROM {{S}}.ref_log), 0),
		coalesce(CASE WHEN has_sequence_privilege(x.seq, 'SELECT') THEN pg_sequence_last_value(x.seq::regclass) END, 0))
		FROM (SELECT pg_get_serial_sequence($1, 'id') AS seq) x`)
	q.watchTrim = q.expand(`SELECT coalesce((SELECT id FROM {{S}}.watch_trim), 0)`)
	// ImportLog's rows, in order, each listed as quiet except, when $7,
	// the last (the creation of the ref, a change).
	q.importRows = q.expand(`WITH n AS (SELECT $1::text AS name), ` + w("n") + `,
		ins AS (
			INSERT INTO {{S}}.ref_log (name, old, new, time_ms, message)
			SELECT w.name, u.o, u.n, u.t, u.m
			FROM w, unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::text[]) WITH ORDINALITY AS u(o, n, t, m, i)
			ORDER BY u.i
			RETURNING id
		)
		INSERT INTO {{S}}.ref_log_quiet (id)
		SELECT id FROM ins WHERE NOT $6::bool OR id < (SELECT max(id) FROM ins)`)
	q.watchNotify = `SELECT set_config('synchronous_commit', 'off', true), pg_notify('` + watchChannel(schema) + `', '')`
	q.deleteLogsTrim = q.expand(`WITH d AS (DELETE FROM {{S}}.ref_log WHERE name = $1 RETURNING id), ` + trimStep("d") + `
		SELECT count(*) FROM d`)
	q.deleteNewest = q.expand(`DELETE FROM {{S}}.ref_log WHERE id = (SELECT max(id) FROM {{S}}.ref_log WHERE name = $1)`)
}

var _ cas.Watcher = (*Refs)(nil)

// parseCursor reads a cursor: a log id in decimal ("" is 0).
func parseCursor(c cas.Cursor) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(c), 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != string(c) {
		return 0, fmt.Errorf("%w %q: not a PostgreSQL store's cursor (a log id in decimal)", cas.ErrInvalidCursor, c)
	}
	return n, nil
}

// WatchHead returns the cursor of the newest committed change: the
// highest log id (or trim mark) the store shows, read in one round trip
// holding the watch lock exclusive (a transaction of its own: no writer is
// then between taking an id and its commit), so a change committed after
// the call has a higher id.
func (r *Refs) WatchHead(ctx context.Context) (cas.Cursor, error) {
	id, err := r.watchHeadWith(ctx, r.s.q.watchHead)
	if noTable(err) {
		id, err = r.watchHeadWith(ctx, r.s.q.watchHeadBare)
	}
	if err != nil {
		return "", fmt.Errorf("watch head: %w", ctxErr(ctx, err))
	}
	return cas.Cursor(strconv.FormatInt(id, 10)), nil
}

func (r *Refs) watchHeadWith(ctx context.Context, stmt string) (id int64, err error) {
	b := &pgx.Batch{}
	b.Queue(r.s.q.lockExclusive, watchLockKey(r.s.schema))
	b.Queue(stmt).QueryRow(func(row pgx.Row) error { return row.Scan(&id) })
	return id, r.s.pool.SendBatch(ctx, b).Close()
}

// Watch yields the changes committed after cursor after to refs whose
// names start with prefix, as [cas.Watcher] specifies: log rows in id
// order, which is their commit order and each ref's log order, without
// those ImportLog added as history. A cursor beyond every id the store
// handed out is invalid; one older than what PruneLog (or a log rewrite
// by ImportLog) removed yields [cas.ErrCursorGone] once. It is woken by
// the Store's LISTEN connection and polls every few seconds.
func (r *Refs) Watch(ctx context.Context, prefix string, after cas.Cursor) iter.Seq2[cas.Event, error] {
	return func(yield func(cas.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(cas.Event{}, err)
			return
		}
		// The store's Close ends the watch, even in a statement.
		outer := ctx
		ctx, stop := r.s.watchCtx(ctx)
		defer stop()
		closed := func() bool {
			if r.s.closed.Load() && outer.Err() == nil {
				yield(cas.Event{}, fmt.Errorf("watch: postgres store closed: %w", fs.ErrClosed))
				return true
			}
			return false
		}
		last, err := parseCursor(after)
		if err != nil {
			yield(cas.Event{}, err)
			return
		}
		if last > 0 {
			var top int64
			if err := r.s.pool.QueryRow(ctx, r.s.q.watchTop, r.s.q.schema+".ref_log").Scan(&top); err != nil {
				if closed() {
					return
				}
				yield(cas.Event{}, fmt.Errorf("watch: %w", ctxErr(ctx, err)))
				return
			}
			if last > top {
				yield(cas.Event{}, fmt.Errorf("%w %q: beyond every log id of this store (%d)", cas.ErrInvalidCursor, after, top))
				return
			}
		}
		_, any := prefixEnd(prefix)
		release := r.s.listen.acquire(r.s)
		defer release()
		// From the zero cursor, what was trimmed before the first read
		// was never to be seen.
		checkTrim, goneSaid := after != "", false
		woke := time.Now()
		for {
			if closed() {
				return
			}
			wake := r.s.listen.Wait()
			var evs []cas.Event
			var next, trim int64
			var more bool
			if any {
				evs, next, more, trim, err = r.s.reads.read(ctx, r, last, prefix, woke)
			} else {
				err = r.s.pool.QueryRow(ctx, r.s.q.watchTrim).Scan(&trim)
				if noTable(err) {
					trim, err = 0, nil // no watch tables yet: nothing trimmed
				}
			}
			if err != nil {
				if closed() {
					return
				}
				if ctx.Err() != nil {
					yield(cas.Event{}, ctx.Err())
					return
				}
				if !yield(cas.Event{}, fmt.Errorf("watch: %w", err)) {
					return
				}
			} else {
				if checkTrim && trim > last && !goneSaid {
					goneSaid = true
					if !yield(cas.Event{}, fmt.Errorf("%w: log rows after %d were removed (up to %d)", cas.ErrCursorGone, last, trim)) {
						return
					}
				}
				checkTrim = true
				for _, e := range evs {
					if !yield(e, nil) {
						return
					}
				}
				last = max(last, next)
				if more {
					continue
				}
			}
			select {
			case <-ctx.Done():
				if closed() {
					return
				}
				yield(cas.Event{}, ctx.Err())
				return
			case <-wake:
			case <-time.After(r.s.listen.pollInterval()):
			}
			woke = time.Now()
		}
	}
}

// sharedReads lets a Store's watchers share their reads of ref_log: when
// many are woken by one notification, one query serves them all. A read is
// reused by a watcher whose position it covers and which was woken before
// the read began (so the read sees what woke it); reads run one at a time.
type sharedReads struct {
	mu    sync.Mutex
	valid bool
	began time.Time   // when the query was sent
	from  int64       // it read the rows after this id
	rows  []cas.Event // the changes it passed, in id order
	next  int64       // the id it got to: every id up to it is final
	full  bool        // it stopped at a page's end: more may follow
	trim  int64       // watch_trim then
}

// read returns the changes after last under prefix, the id to go on from,
// whether more may follow at once (a full page), and the trim mark.
func (c *sharedReads) read(ctx context.Context, r *Refs, last int64, prefix string, woke time.Time) (evs []cas.Event, next int64, more bool, trim int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A full page covers no one at its end: the next page is to read.
	covers := c.valid && c.began.After(woke) && c.from <= last && last <= c.next && !(c.full && last == c.next)
	if !covers {
		began := time.Now()
		rows, next, full, trim, err := r.readChanges(ctx, last)
		if err != nil {
			c.valid = false
			return nil, 0, false, 0, err
		}
		c.valid, c.began, c.from, c.rows, c.next, c.full, c.trim = true, began, last, rows, next, full, trim
	}
	for _, e := range c.rows {
		if id, _ := parseCursor(e.Cursor); id > last && strings.HasPrefix(e.Ref, prefix) {
			evs = append(evs, e)
		}
	}
	return evs, max(c.next, last), c.full && last < c.next, c.trim, nil
}

// logRow is a row of ref_log as the watch reads it.
type logRow struct {
	id    int64
	quiet bool
	ev    cas.Event
}

// readChanges reads the changes after last (of every ref) that are final,
// in id order: the rows from last on while their ids are contiguous; at a
// gap, after a barrier, every row up to the highest id seen before it
// (what is still missing there never commits), then on while contiguous.
// It returns them, the id it got to, whether it stopped at a page's end,
// and the trim mark.
func (r *Refs) readChanges(ctx context.Context, last int64) (evs []cas.Event, next int64, full bool, trim int64, err error) {
	rows, trim, err := r.readLogRows(ctx, last, false)
	if err != nil {
		return nil, 0, false, 0, err
	}
	take, gap := contiguous(rows, last)
	if gap {
		final := rows[len(rows)-1].id
		if rows, trim, err = r.readLogRows(ctx, last, true); err != nil {
			return nil, 0, false, 0, err
		}
		n := 0
		for n < len(rows) && rows[n].id <= final {
			n++
		}
		more, _ := contiguous(rows[n:], final)
		take = n + more
	}
	next = last
	for _, row := range rows[:take] {
		next = row.id
		if !row.quiet {
			evs = append(evs, row.ev)
		}
	}
	return evs, next, len(rows) == watchPage && take == len(rows), trim, nil
}

// contiguous returns how many of rows (in id order) follow after in
// unbroken ids, and whether a gap comes after them.
func contiguous(rows []logRow, after int64) (n int, gap bool) {
	for n < len(rows) && rows[n].id == after+1 {
		after++
		n++
	}
	return n, n < len(rows)
}

// readLogRows reads a page of log rows after last and the trim mark, after
// a barrier if barrier (one round trip more). A store without the
// watch's tables (an addition made at the first write that needs them)
// is read as having no quiet rows and no trim.
func (r *Refs) readLogRows(ctx context.Context, last int64, barrier bool) ([]logRow, int64, error) {
	rows, trim, err := r.readLogRowsWith(ctx, r.s.q.watchRead, last, barrier)
	if noTable(err) {
		rows, trim, err = r.readLogRowsWith(ctx, r.s.q.watchReadBare, last, barrier)
	}
	return rows, trim, ctxErr(ctx, err)
}

func (r *Refs) readLogRowsWith(ctx context.Context, stmt string, last int64, barrier bool) (out []logRow, trim int64, err error) {
	if barrier {
		if _, err := r.s.pool.Exec(ctx, r.s.q.watchBarrier); err != nil {
			return nil, 0, fmt.Errorf("barrier: %w", err)
		}
	}
	b := &pgx.Batch{}
	b.Queue(stmt, last, watchPage)
	br := r.s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var id *int64
		var name, message *string
		var old, new, ms *int64
		var quiet *bool
		if err := rows.Scan(&trim, &id, &name, &old, &new, &ms, &message, &quiet); err != nil {
			return nil, 0, err
		}
		if id == nil {
			continue // no row: the trim mark alone
		}
		out = append(out, logRow{id: *id, quiet: *quiet, ev: cas.Event{Ref: *name, Old: cas.Hash(*old), New: cas.Hash(*new),
			Time: *ms, Message: *message, Cursor: cas.Cursor(strconv.FormatInt(*id, 10))}})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	rows.Close()
	return out, trim, br.Close()
}

// listener is a Store's LISTEN connection, run while any watcher is, and
// the wake-ups it hands out.
type listener struct {
	wake.Signal // the wake-ups (Wait, Broadcast)

	mu     sync.Mutex
	users  int
	up     bool // listening now
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *listener) setUp(up bool) {
	l.mu.Lock()
	l.up = up
	l.mu.Unlock()
}

func (l *listener) pollInterval() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.up {
		return pollListening
	}
	return pollAlone
}

// acquire registers a watcher, starting the LISTEN connection for the
// first; release unregisters it, closing the connection after the last.
func (l *listener) acquire(s *Store) (release func()) {
	l.mu.Lock()
	l.users++
	if l.users == 1 {
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx, s, l.done)
	}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.users--
			var cancel context.CancelFunc
			var done chan struct{}
			if l.users == 0 {
				cancel, done = l.cancel, l.done
				l.cancel, l.done = nil, nil
			}
			l.mu.Unlock()
			if cancel != nil {
				cancel()
				<-done
			}
		})
	}
}

// run keeps a connection listening on the schema's channel until ctx
// ends, reconnecting after a failure; every notification, and every
// (re)connection, wakes the watchers.
func (l *listener) run(ctx context.Context, s *Store, done chan struct{}) {
	defer close(done)
	defer l.setUp(false)
	for ctx.Err() == nil {
		err := l.listenOnce(ctx, s)
		l.setUp(false)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("watch: the LISTEN connection failed; polling until it is back", "error", err)
		l.Broadcast()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollAlone):
		}
	}
}

func (l *listener) listenOnce(ctx context.Context, s *Store) error {
	// Waiting for a notification runs no query for a cancel request to
	// end: when ctx ends, interrupt the wait at once with a deadline.
	cf := s.connCf.Copy()
	cf.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	conn, err := pgx.ConnectConfig(ctx, cf)
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), unlockTimeout)
		defer cancel()
		conn.Close(c)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{watchChannel(s.schema)}.Sanitize()); err != nil {
		return err
	}
	l.setUp(true)
	l.Broadcast() // what committed before LISTEN took effect
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil
			}
			return err
		}
		l.Broadcast()
	}
}
