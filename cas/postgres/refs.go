package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
)

// Refs is the [cas.Refs] of a [Store]: rows of the table refs, each change
// logged in ref_log in the same transaction, times by the server's clock.
// It is safe for concurrent use by goroutines and, through the database,
// by processes.
type Refs struct {
	s *Store
}

// Now returns the database server's clock, the one log entries use.
func (r *Refs) Now(ctx context.Context) (time.Time, error) { return r.s.Now(ctx) }

// Get returns the hash ref name points at. The error wraps
// [cas.ErrNotFound] if the ref does not exist and [cas.ErrInvalidRefName]
// for a bad name.
func (r *Refs) Get(ctx context.Context, name string) (cas.Hash, error) {
	if err := cas.ValidateRefName(name); err != nil {
		return 0, err
	}
	h, ok, err := r.current(ctx, r.s.pool, name)
	switch {
	case err != nil:
		return 0, fmt.Errorf("get ref %s: %w", name, err)
	case !ok:
		return 0, fmt.Errorf("ref %s: %w", name, cas.ErrNotFound)
	}
	return h, nil
}

type queryRower interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// current reads ref name: its hash and whether it exists.
func (r *Refs) current(ctx context.Context, db queryRower, name string) (cas.Hash, bool, error) {
	var h int64
	err := db.QueryRow(ctx, r.s.q.getRef, name).Scan(&h)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, ctxErr(ctx, err)
	}
	return cas.Hash(h), true, nil
}

// List lists the refs whose names start with prefix ("" for all), sorted
// by name in byte order (the column's collation is "C"), a page at a time
// (keyset pagination), so the loop body may use the refs. If ctx is done,
// or a page cannot be read, it yields the error and stops.
func (r *Refs) List(ctx context.Context, prefix string) iter.Seq2[cas.Ref, error] {
	return func(yield func(cas.Ref, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(cas.Ref{}, fmt.Errorf("list refs: %w", err))
			return
		}
		upper, ok := prefixEnd(prefix)
		if !ok {
			return // no ref name starts with it
		}
		last, first := prefix, true
		for {
			if err := ctx.Err(); err != nil {
				yield(cas.Ref{}, fmt.Errorf("list refs: %w", err))
				return
			}
			q := r.s.q.listNext
			if first {
				q = r.s.q.listFirst
			}
			rows, err := r.s.pool.Query(ctx, q, pageSize, last, upper)
			var page []cas.Ref
			if err == nil {
				page, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (cas.Ref, error) {
					var name string
					var h int64
					err := row.Scan(&name, &h)
					return cas.Ref{Name: name, Hash: cas.Hash(h)}, err
				})
			}
			if err != nil {
				yield(cas.Ref{}, fmt.Errorf("list refs: %w", ctxErr(ctx, err)))
				return
			}
			for _, ref := range page {
				if !yield(ref, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			first, last = false, page[len(page)-1].Name
		}
	}
}

// prefixEnd returns the least string above every string that starts with
// prefix, for a range scan, or false if no valid ref name starts with
// prefix. Ref names are ASCII, so incrementing the last byte will do.
func prefixEnd(prefix string) (string, bool) {
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-' || c == '/') {
			return "", false
		}
	}
	if prefix == "" {
		return "\x7f", true
	}
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1), true
}

// validMessage rejects log messages PostgreSQL's text cannot hold.
func validMessage(name, message string) error {
	switch {
	case !utf8.ValidString(message):
		return fmt.Errorf("ref %s: %w: log message is not valid UTF-8", name, cas.ErrInvalid)
	case strings.IndexByte(message, 0) >= 0:
		return fmt.Errorf("ref %s: %w: log message contains a NUL byte", name, cas.ErrInvalid)
	}
	return nil
}

// CompareAndSwap moves ref name from old to new and logs the change, as
// [cas.Refs] specifies, each change one transaction with its log row:
//
//   - a create (zero old) takes the name's advisory locks (see
//     [Refs.ImportLog]), checks for an existing ref and for a name clash,
//     and runs INSERT ... ON CONFLICT DO NOTHING with the log row;
//   - a move is UPDATE ... WHERE name = $1 AND hash = old, and a delete
//     DELETE ... WHERE name = $1 AND hash = old, each in one statement with
//     the INSERT of its log row; a move is sent in one batch with a read
//     of the ref, which a conflict reports (the same batch, with the
//     target's refresh, as [Refs.SwapTouching]).
//
// A stale old is a *[cas.ConflictError] carrying the current value; a name
// clash is one with Clash set to the first clashing ref in name order. A
// message that is not valid UTF-8 or holds a NUL byte is an error wrapping
// [cas.ErrInvalid].
func (r *Refs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	if err := validMessage(name, message); err != nil {
		return err
	}
	if old != new {
		if err := r.s.ensureAdditions(ctx); err != nil {
			return fmt.Errorf("update ref %s: %w", name, err)
		}
	}
	switch {
	case old == new:
		cur, _, err := r.current(ctx, r.s.pool, name)
		if err != nil {
			return fmt.Errorf("update ref %s: %w", name, err)
		}
		if cur != old {
			return &cas.ConflictError{Name: name, Expected: old, Current: cur}
		}
		return nil
	case old.IsZero():
		return r.create(ctx, name, new, message)
	case new.IsZero():
		return r.swap(ctx, name, old, r.s.q.del, name, int64(old), message)
	default:
		return r.move(ctx, name, old, new, message, false)
	}
}

// swap runs a move or delete statement; if it changed nothing the ref did
// not hold old, and the conflict carries what it holds.
func (r *Refs) swap(ctx context.Context, name string, old cas.Hash, stmt string, args ...any) error {
	for range 5 {
		var id int64
		err := r.s.pool.QueryRow(ctx, stmt, args...).Scan(&id)
		if err == nil {
			r.s.changed()
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("update ref %s: %w", name, ctxErr(ctx, err))
		}
		cur, _, err := r.current(ctx, r.s.pool, name)
		if err != nil {
			return fmt.Errorf("update ref %s: %w", name, err)
		}
		if cur != old {
			return &cas.ConflictError{Name: name, Expected: old, Current: cur}
		}
		// It went away from old and came back meanwhile: try again.
	}
	return fmt.Errorf("update ref %s: it keeps changing under concurrent writers: %w", name, cas.ErrConflict)
}

func (r *Refs) create(ctx context.Context, name string, new cas.Hash, message string) error {
	err := r.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := r.lockName(ctx, tx, name); err != nil {
			return err
		}
		cur, ok, err := r.current(ctx, tx, name)
		if err != nil {
			return fmt.Errorf("update ref %s: %w", name, err)
		}
		if ok {
			return &cas.ConflictError{Name: name, Current: cur}
		}
		clash, err := r.clash(ctx, tx, name)
		if err != nil {
			return err
		}
		if clash != "" {
			return &cas.ConflictError{Name: name, Clash: clash}
		}
		var id int64
		err = tx.QueryRow(ctx, r.s.q.create, name, int64(new), message).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			// A unique constraint caught what the locks should have (a
			// writer that does not take them): report what is there.
			if cur, ok, err := r.current(ctx, tx, name); err == nil && ok {
				return &cas.ConflictError{Name: name, Current: cur}
			}
			if clash, err := r.clash(ctx, tx, name); err == nil && clash != "" {
				return &cas.ConflictError{Name: name, Clash: clash}
			}
			return fmt.Errorf("create ref %s: a unique constraint refused it: %w", name, cas.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create ref %s: %w", name, err)
		}
		return nil
	})
	if err == nil {
		r.s.changed()
	}
	return err
}

// Replace sets ref name to new, or deletes it if new is zero, whatever it
// holds, as [cas.Refs] specifies, in one transaction holding the name's
// advisory locks and the row's lock: the logged old value is the row's,
// or, with no row (deleted behind uwf's back), the new value of the
// name's newest log row. A row cannot be malformed here (the columns'
// types and constraints see to it), so Replace only ever repairs a
// missing ref; a name clash is a *[cas.ConflictError].
func (r *Refs) Replace(ctx context.Context, name string, new cas.Hash, message string) error {
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	if err := validMessage(name, message); err != nil {
		return err
	}
	if err := r.s.ensureAdditions(ctx); err != nil {
		return fmt.Errorf("replace ref %s: %w", name, err)
	}
	err := r.s.inTx(ctx, func(tx pgx.Tx) error {
		cur, live, err := r.lockRef(ctx, tx, name)
		if err != nil {
			return err
		}
		old := cur
		if !live {
			var last int64
			err := tx.QueryRow(ctx, r.s.q.lastLogged, name).Scan(&last)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			old = cas.Hash(last)
		}
		switch {
		case live && old == new, !live && new.IsZero() && old.IsZero():
			return nil
		case new.IsZero():
			if _, err := tx.Exec(ctx, r.s.q.delRef, name); err != nil {
				return err
			}
		default:
			if !live {
				clash, err := r.clash(ctx, tx, name)
				if err != nil {
					return err
				}
				if clash != "" {
					return &cas.ConflictError{Name: name, Clash: clash}
				}
			}
			if _, err := tx.Exec(ctx, r.s.q.setRef, name, int64(new)); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, r.s.q.insertLog, name, int64(old), int64(new), message)
		return err
	})
	if err != nil {
		var ce *cas.ConflictError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("replace ref %s: %w", name, err)
	}
	r.s.changed()
	return nil
}

// lockName takes, in tx, the advisory locks that serialise every change
// that may create a ref against every other that may create a clashing
// one: shared locks on each lower-case folder of the name, outermost
// first, then an exclusive lock on the lower-case name. Two clashing names
// lie on one chain of folders, so one of them waits for the other's
// transaction to end; unrelated names (threads/A and threads/B) share only
// shared locks and proceed in parallel. Locks are always taken outermost
// first, so they cannot deadlock.
func (r *Refs) lockName(ctx context.Context, tx pgx.Tx, name string) error {
	lower := strings.ToLower(name)
	var folders []int64
	for i := range len(lower) {
		if lower[i] == '/' {
			folders = append(folders, lockKey(r.s.schema, "ref", lower[:i]))
		}
	}
	if len(folders) > 0 {
		if _, err := tx.Exec(ctx, r.s.q.lockShared, folders); err != nil {
			return fmt.Errorf("lock ref name %s: %w", name, err)
		}
	}
	if _, err := tx.Exec(ctx, r.s.q.lockExclusive, lockKey(r.s.schema, "ref", lower)); err != nil {
		return fmt.Errorf("lock ref name %s: %w", name, err)
	}
	return nil
}

// clash returns the first live ref, in name order, whose name clashes with
// name (which is not live), or "".
func (r *Refs) clash(ctx context.Context, tx pgx.Tx, name string) (string, error) {
	lower := strings.ToLower(name)
	folders := []string{}
	for i := range len(lower) {
		if lower[i] == '/' {
			folders = append(folders, lower[:i])
		}
	}
	var other string
	err := tx.QueryRow(ctx, r.s.q.clash, name, lower, folders).Scan(&other)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("check ref %s for name clashes: %w", name, err)
	}
	return other, nil
}

// Log returns ref name's log, oldest first (in the order the entries were
// written, or ImportLog merged them). The error wraps
// [cas.ErrNotFound] if there is no log for name and
// [cas.ErrInvalidRefName] for a bad name.
func (r *Refs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	if err := cas.ValidateRefName(name); err != nil {
		return nil, err
	}
	log, err := r.readLog(ctx, r.s.pool, name)
	if err != nil {
		return nil, fmt.Errorf("read ref log %s: %w", name, err)
	}
	if len(log) == 0 {
		return nil, fmt.Errorf("ref log %s: %w", name, cas.ErrNotFound)
	}
	return log, nil
}

func (r *Refs) readLog(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, name string) ([]cas.LogEntry, error) {
	rows, err := db.Query(ctx, r.s.q.readLog, name)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	log, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cas.LogEntry, error) {
		var old, new int64
		var e cas.LogEntry
		err := row.Scan(&old, &new, &e.Time, &e.Message)
		e.Old, e.New = cas.Hash(old), cas.Hash(new)
		return e, err
	})
	return log, ctxErr(ctx, err)
}

// Logs lists the names of every ref that has a log, live or deleted,
// sorted by name, a page at a time. If ctx is done, or a page cannot be
// read, it yields the error and stops.
func (r *Refs) Logs(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		last, first := "", true
		for {
			if err := ctx.Err(); err != nil {
				yield("", fmt.Errorf("list ref logs: %w", err))
				return
			}
			var rows pgx.Rows
			var err error
			if first {
				rows, err = r.s.pool.Query(ctx, r.s.q.logsFirst, pageSize)
			} else {
				rows, err = r.s.pool.Query(ctx, r.s.q.logsNext, pageSize, last)
			}
			var page []string
			if err == nil {
				page, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
			if err != nil {
				yield("", fmt.Errorf("list ref logs: %w", ctxErr(ctx, err)))
				return
			}
			for _, name := range page {
				if !yield(name, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			first, last = false, page[len(page)-1]
		}
	}
}

// PruneLog drops, in one statement, log entries older than their ref's
// cutoff ([cas.LogCutoff] of before and prefixes; an entry's millisecond
// time is before it), except, for a live ref, its newest entry and the
// entry that created its current incarnation (the last one with a zero
// Old). A deleted ref's log goes whole once its newest entry is older than
// the cutoff; a missing ref's log (no row, but its newest entry has a
// non-zero new: a row deleted behind uwf's back) is kept whole. It returns
// how many entries it removed.
func (r *Refs) PruneLog(ctx context.Context, before time.Time, prefixes ...cas.PrefixCutoff) (int, error) {
	// entry ms < before  <=>  entry ms < ceil(before in ms)
	ceilMS := func(t time.Time) int64 {
		ms := t.UnixMilli()
		if time.UnixMilli(ms).Before(t) {
			ms++
		}
		return ms
	}
	names, cuts := make([]string, len(prefixes)), make([]int64, len(prefixes))
	for i, p := range prefixes {
		names[i], cuts[i] = p.Prefix, ceilMS(p.Before)
	}
	if err := r.s.ensureAdditions(ctx); err != nil {
		return 0, fmt.Errorf("prune ref logs: %w", err)
	}
	var n int
	if err := r.s.pool.QueryRow(ctx, r.s.q.pruneLog, ceilMS(before), names, cuts).Scan(&n); err != nil {
		return 0, fmt.Errorf("prune ref logs: %w", ctxErr(ctx, err))
	}
	return n, nil
}

// ImportLog merges entries into ref name's log with [cas.MergeLog], as
// [cas.Refs] specifies, in one transaction that holds the name's advisory
// locks (as a create does) and the ref's row lock (as a move does), and
// creates an absent ref at the merged log's newest New if that is
// non-zero, with no new log entry. If creating the ref would clash with a
// live ref the error is a *[cas.ConflictError] naming it, and nothing
// changes. An empty import changes nothing.
func (r *Refs) ImportLog(ctx context.Context, name string, entries []cas.LogEntry) error {
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	for _, e := range entries {
		if err := validMessage(name, e.Message); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("import ref log %s: %w", name, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if err := r.s.ensureAdditions(ctx); err != nil {
		return fmt.Errorf("import ref log %s: %w", name, err)
	}
	err := r.s.inTx(ctx, func(tx pgx.Tx) error {
		cur, live, err := r.lockRef(ctx, tx, name)
		if err != nil {
			return err
		}
		existing, err := r.readLog(ctx, tx, name)
		if err != nil {
			return err
		}
		log := cas.MergeLog(existing, entries, func(e cas.LogEntry) cas.LogEntry { return e }, cur)
		create := !live && !log[len(log)-1].New.IsZero()
		if newest := log[len(log)-1].New; create {
			clash, err := r.clash(ctx, tx, name)
			if err != nil {
				return err
			}
			if clash != "" {
				return &cas.ConflictError{Name: name, Clash: clash}
			}
			if _, err := tx.Exec(ctx, r.s.q.insertRef, name, int64(newest)); err != nil {
				return fmt.Errorf("create ref %s: %w", name, err)
			}
		}
		add := log[len(existing):]
		if !slices.Equal(log[:len(existing)], existing) {
			// Imported entries go between existing ones: rewrite the log,
			// whose order is its row ids. A watch behind the removed rows
			// learns it (watch_trim).
			if _, err := tx.Exec(ctx, r.s.q.deleteLogsTrim, name); err != nil {
				return err
			}
			add = log
		}
		if create && len(add) == 0 {
			// The creation is a change (one event, the newest entry): its
			// row moves to the end with a new id.
			if _, err := tx.Exec(ctx, r.s.q.deleteNewest, name); err != nil {
				return err
			}
			add = log[len(log)-1:]
		}
		if len(add) == 0 {
			return nil
		}
		// The rows go in in order, all listed as history (ref_log_quiet)
		// but for the creation's.
		olds, news, times, msgs := make([]int64, len(add)), make([]int64, len(add)), make([]int64, len(add)), make([]string, len(add))
		for i, e := range add {
			olds[i], news[i], times[i], msgs[i] = int64(e.Old), int64(e.New), e.Time, e.Message
		}
		_, err = tx.Exec(ctx, r.s.q.importRows, name, olds, news, times, msgs, create)
		return err
	})
	if err != nil {
		var ce *cas.ConflictError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("import ref log %s: %w", name, err)
	}
	r.s.changed()
	return nil
}

// lockRef takes ref name's lock in tx and reads its current value for
// update; live is false if the ref does not exist.
func (r *Refs) lockRef(ctx context.Context, tx pgx.Tx, name string) (cur cas.Hash, live bool, err error) {
	if err := r.lockName(ctx, tx, name); err != nil {
		return 0, false, err
	}
	var h int64
	err = tx.QueryRow(ctx, r.s.q.getRefForUpdate, name).Scan(&h)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return cas.Hash(h), true, nil
}
