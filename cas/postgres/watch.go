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
)

// Watching refs (SPEC §4). Events are the rows of ref_log, the cursor a
// row's id in decimal. Ids are assigned at insert, not at commit, so a
// reader resuming from "id > last" could skip a transaction that commits
// late; to rule that out every statement that appends a log row first
// runs the watch step (watchStep): it takes the transaction-level advisory
// lock watchLock, held until commit, just before the row gets its id, so
// ids commit in order, and it sends a notification on the schema's
// channel (payload: the ref's name), delivered at commit. One LISTEN
// connection per Store wakes its watchers; they also poll every
// pollListening, which is all that catches writes by version-1 binaries
// (they neither lock nor notify; their late commits may be missed).
//
// Rows that are not changes (those ImportLog adds to an existing log,
// or rewrites) are listed in ref_log_quiet; the highest id that PruneLog
// or a log rewrite removed is in watch_trim, so a watch whose cursor is
// older learns that it missed something (cas.ErrCursorGone). Both tables
// are an addition (see additions), not part of the format.

const (
	// pollListening is how often a watcher reads without a notification
	// while the LISTEN connection is up; pollAlone, while it is down.
	pollListening = 3 * time.Second
	pollAlone     = time.Second
)

// watchPage bounds the rows one read of a watch returns (a variable for
// tests).
var watchPage = 1000

// watchAddition makes the tables of the watch: see above. Made at Open by
// the additions mechanism; a version-1 build ignores them.
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

// watchLockKey is the advisory lock that orders the commits of log rows.
func watchLockKey(schema string) int64 { return lockKey(schema, "watch", "") }

// watchChannel is the schema's notification channel, an identifier under
// 63 bytes whatever the schema's name.
func watchChannel(schema string) string {
	return "uwf_watch_" + strconv.FormatUint(uint64(lockKey(schema, "channel", "")), 16)
}

// watchStep is the CTE "w" (name) that every statement appending a log
// row selects the row's name from: the commit-order lock, then the
// notification, once per row of from (none when the change did not
// happen). The lock is taken before the INSERT reading w assigns the id.
func watchStep(schema, from string) string {
	return `w AS (
			SELECT f.name, pg_advisory_xact_lock(` + strconv.FormatInt(watchLockKey(schema), 10) + `) AS locked,
				pg_notify('` + watchChannel(schema) + `', f.name) AS notified
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
	// The changes after $1 (of every ref: watchers filter them), the
	// newest id the snapshot sees, and the trim mark, in one snapshot: with ids committing in
	// order, every id up to top is committed or never will be.
	q.watchRead = q.expand(`SELECT m.top, m.trim, l.id, l.name, l.old, l.new, l.time_ms, l.message
		FROM (SELECT coalesce((SELECT max(id) FROM {{S}}.ref_log), 0) AS top,
			coalesce((SELECT id FROM {{S}}.watch_trim), 0) AS trim) m
		LEFT JOIN LATERAL (
			SELECT r.id, r.name, r.old, r.new, r.time_ms, r.message FROM {{S}}.ref_log r
			WHERE r.id > $1
				AND NOT EXISTS (SELECT 1 FROM {{S}}.ref_log_quiet q WHERE q.id = r.id)
			ORDER BY r.id LIMIT $2
		) l ON true
		ORDER BY l.id`)
	q.watchHead = q.expand(`SELECT greatest(coalesce((SELECT max(id) FROM {{S}}.ref_log), 0),
		coalesce((SELECT id FROM {{S}}.watch_trim), 0))`)
	// The highest id ever handed out (0 if none): no cursor is beyond it.
	q.watchTop = `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, 'id')), 0)`
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
// highest log id the server shows (or trimmed). Rows commit in id order,
// so a change committed after the call has a higher id.
func (r *Refs) WatchHead(ctx context.Context) (cas.Cursor, error) {
	var id int64
	if err := r.s.pool.QueryRow(ctx, r.s.q.watchHead).Scan(&id); err != nil {
		return "", fmt.Errorf("watch head: %w", ctxErr(ctx, err))
	}
	return cas.Cursor(strconv.FormatInt(id, 10)), nil
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
		last, err := parseCursor(after)
		if err != nil {
			yield(cas.Event{}, err)
			return
		}
		if last > 0 {
			var top int64
			if err := r.s.pool.QueryRow(ctx, r.s.q.watchTop, r.s.q.schema+".ref_log").Scan(&top); err != nil {
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
			if r.s.closed.Load() {
				yield(cas.Event{}, fmt.Errorf("watch: postgres store closed: %w", fs.ErrClosed))
				return
			}
			wake := r.s.listen.wait()
			var evs []cas.Event
			var next, trim int64
			var more bool
			if any {
				evs, next, more, trim, err = r.s.reads.read(ctx, r, last, prefix, woke)
			} else {
				err = r.s.pool.QueryRow(ctx, r.s.q.watchTrim).Scan(&trim)
			}
			if err != nil {
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
	rows  []cas.Event // every change after from, in id order, up to watchPage
	top   int64       // the highest id its snapshot saw
	trim  int64       // watch_trim then
}

// read returns the changes after last under prefix, the id to go on from,
// whether more may follow at once (a full page), and the trim mark.
func (c *sharedReads) read(ctx context.Context, r *Refs, last int64, prefix string, woke time.Time) (evs []cas.Event, next int64, more bool, trim int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	full := len(c.rows) == watchPage
	covers := c.valid && c.began.After(woke) && c.from <= last
	if covers && full {
		if id, _ := parseCursor(c.rows[len(c.rows)-1].Cursor); last >= id {
			covers = false // past this page
		}
	}
	if !covers {
		began := time.Now()
		rows, top, trim, err := r.readChanges(ctx, last)
		if err != nil {
			c.valid = false
			return nil, 0, false, 0, err
		}
		c.valid, c.began, c.from, c.rows, c.top, c.trim = true, began, last, rows, top, trim
		full = len(rows) == watchPage
	}
	next = c.top
	if full {
		next, _ = parseCursor(c.rows[len(c.rows)-1].Cursor)
	}
	for _, e := range c.rows {
		if id, _ := parseCursor(e.Cursor); id > last && strings.HasPrefix(e.Ref, prefix) {
			evs = append(evs, e)
		}
	}
	return evs, next, full, c.trim, nil
}

// readChanges reads a page of changes after last (of every ref), the
// newest id the snapshot sees and the trim mark.
func (r *Refs) readChanges(ctx context.Context, last int64) (evs []cas.Event, top, trim int64, err error) {
	rows, err := r.s.pool.Query(ctx, r.s.q.watchRead, last, watchPage)
	if err != nil {
		return nil, 0, 0, ctxErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id *int64
		var name, message *string
		var old, new, ms *int64
		if err := rows.Scan(&top, &trim, &id, &name, &old, &new, &ms, &message); err != nil {
			return nil, 0, 0, err
		}
		if id == nil {
			continue // no change: the row of top and trim alone
		}
		evs = append(evs, cas.Event{Ref: *name, Old: cas.Hash(*old), New: cas.Hash(*new), Time: *ms, Message: *message,
			Cursor: cas.Cursor(strconv.FormatInt(*id, 10))})
	}
	return evs, top, trim, ctxErr(ctx, rows.Err())
}

// listener is a Store's LISTEN connection, run while any watcher is, and
// the wake-ups it hands out.
type listener struct {
	mu     sync.Mutex
	ch     chan struct{}
	users  int
	up     bool // listening now
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *listener) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	return l.ch
}

func (l *listener) broadcast() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch != nil {
		close(l.ch)
		l.ch = nil
	}
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
		l.broadcast()
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
	l.broadcast() // what committed before LISTEN took effect
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil
			}
			return err
		}
		l.broadcast()
	}
}
