package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/uncaged/uwf/cas"
)

// pageSize is how many rows one page of a listing reads: listings use
// keyset pagination, so no connection is held while the loop body runs and
// at most one page is in memory.
const pageSize = 1000

// Batch limits: one INSERT of a batch carries at most this many objects
// and bytes; a batch is one transaction whatever its size.
const (
	batchRows  = 1000
	batchBytes = 16 << 20
)

// Get returns a copy of the object at h, re-hashed. The error is an
// *[cas.ObjectError] wrapping [cas.ErrNotFound] if it is absent, or
// [cas.ErrCorrupt] if its bytes no longer hash to h.
func (s *Store) Get(ctx context.Context, h cas.Hash) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, s.q.get, int64(h)).Scan(&data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, &cas.ObjectError{Op: "get", Hash: h, Err: cas.ErrNotFound}
	case err != nil:
		return nil, &cas.ObjectError{Op: "get", Hash: h, Err: ctxErr(ctx, err)}
	case s.sum(data) != h:
		return nil, &cas.ObjectError{Op: "get", Hash: h, Err: cas.ErrCorrupt}
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// GetBatch reads every object of hs in one statement and re-hashes each,
// as [cas.BatchGetter] specifies: errs[i] is an *[cas.ObjectError]
// wrapping [cas.ErrNotFound] or [cas.ErrCorrupt] for an absent or corrupt
// object.
func (s *Store) GetBatch(ctx context.Context, hs []cas.Hash) (data [][]byte, errs []error, err error) {
	rows, err := s.pool.Query(ctx, s.q.getMany, int64s(hs))
	if err != nil {
		return nil, nil, fmt.Errorf("get %d objects: %w", len(hs), ctxErr(ctx, err))
	}
	got := make(map[cas.Hash][]byte, len(hs))
	for rows.Next() {
		var h int64
		var d []byte
		if err := rows.Scan(&h, &d); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("get %d objects: %w", len(hs), ctxErr(ctx, err))
		}
		if d == nil {
			d = []byte{}
		}
		got[cas.Hash(h)] = d
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("get %d objects: %w", len(hs), ctxErr(ctx, err))
	}
	data, errs = s.batchResult(hs, got)
	return data, errs, nil
}

// Put stores data and returns its address, in one statement: an INSERT
// that, if the hash is taken by equal bytes, refreshes their age instead.
// If different bytes are there it re-hashes them: corrupt ones are
// replaced (healed); intact ones make the error an *[cas.ObjectError]
// wrapping [cas.ErrCollision], and nothing changes.
func (s *Store) Put(ctx context.Context, data []byte) (cas.Hash, error) {
	h := s.sum(data)
	if data == nil {
		data = []byte{} // NULL is not empty
	}
	for range 5 {
		var got int64
		err := s.pool.QueryRow(ctx, s.q.put, int64(h), data).Scan(&got)
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, &cas.ObjectError{Op: "put", Hash: h, Err: ctxErr(ctx, err)}
		}
		// Other bytes live at h.
		var gone bool
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			var err error
			gone, err = s.resolve(ctx, tx, h, data)
			return err
		})
		if err != nil {
			return 0, err
		}
		if !gone {
			return h, nil
		}
		// Deleted meanwhile: insert again.
	}
	return 0, &cas.ObjectError{Op: "put", Hash: h, Err: errors.New("the object keeps changing under concurrent writers")}
}

// resolve settles a put of data at h where other bytes were found, in tx:
// it locks the row and re-hashes what is there. Equal bytes (healed by
// someone else meanwhile) get their age refreshed; corrupt bytes are
// replaced; intact different bytes are a collision. gone reports that the
// row was deleted meanwhile, so the caller must insert again.
func (s *Store) resolve(ctx context.Context, tx pgx.Tx, h cas.Hash, data []byte) (gone bool, err error) {
	var old []byte
	err = tx.QueryRow(ctx, s.q.lockObject, int64(h)).Scan(&old)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return true, nil
	case err != nil:
		return false, &cas.ObjectError{Op: "put", Hash: h, Err: ctxErr(ctx, err)}
	case !bytes.Equal(old, data) && s.sum(old) == h:
		return false, &cas.ObjectError{Op: "put", Hash: h, Err: cas.ErrCollision}
	}
	if _, err := tx.Exec(ctx, s.q.healObject, int64(h), data); err != nil {
		return false, &cas.ObjectError{Op: "put", Hash: h, Err: ctxErr(ctx, err)}
	}
	if !bytes.Equal(old, data) {
		s.log.Info("healed a corrupt object", "hash", h)
	}
	return false, nil
}

// PutBatch stores every element of data as Put does, in one transaction,
// so the batch has one flush point (one commit). It returns the hashes in
// input order. Objects already present have their age refreshed; corrupt
// ones are healed. On any error (a collision, a done ctx) the transaction
// is rolled back and nothing of the batch is stored.
func (s *Store) PutBatch(ctx context.Context, data [][]byte) ([]cas.Hash, error) {
	hs, keys, uniq := s.distinct(data)
	if len(keys) == 0 {
		return hs, nil
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error { return s.putChunks(ctx, tx, keys, uniq) })
	if err != nil {
		return nil, fmt.Errorf("put batch of %d objects: %w", len(data), err)
	}
	return hs, nil
}

// distinct hashes data: hs in input order, keys the distinct hashes sorted
// (so concurrent batches lock rows in one order), uniq their bytes (never
// nil: NULL is not empty).
func (s *Store) distinct(data [][]byte) (hs, keys []cas.Hash, uniq map[cas.Hash][]byte) {
	hs = make([]cas.Hash, len(data))
	uniq = make(map[cas.Hash][]byte, len(data))
	for i, d := range data {
		hs[i] = s.sum(d)
		if _, ok := uniq[hs[i]]; !ok {
			if d == nil {
				d = []byte{}
			}
			uniq[hs[i]] = d
		}
	}
	keys = make([]cas.Hash, 0, len(uniq))
	for h := range uniq {
		keys = append(keys, h)
	}
	slices.Sort(keys)
	return hs, keys, uniq
}

// putChunks stores the objects keys in tx, in INSERTs within the batch
// limits.
func (s *Store) putChunks(ctx context.Context, tx pgx.Tx, keys []cas.Hash, uniq map[cas.Hash][]byte) error {
	for start := 0; start < len(keys); {
		end, size := start, 0
		for end < len(keys) && end-start < batchRows && (end == start || size+len(uniq[keys[end]]) <= batchBytes) {
			size += len(uniq[keys[end]])
			end++
		}
		if err := s.putChunk(ctx, tx, keys[start:end], uniq); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// putChunk inserts (or refreshes) the objects keys in one statement of
// tx, then resolves those whose hash holds other bytes.
func (s *Store) putChunk(ctx context.Context, tx pgx.Tx, keys []cas.Hash, uniq map[cas.Hash][]byte) error {
	datas := make([][]byte, len(keys))
	for i, h := range keys {
		datas[i] = uniq[h]
	}
	rows, err := tx.Query(ctx, s.q.putMany, int64s(keys), datas)
	if err != nil {
		return err
	}
	done := make(map[cas.Hash]bool, len(keys))
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return err
		}
		done[cas.Hash(h)] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, h := range keys {
		if done[h] {
			continue
		}
		// The conflicting row stays locked by the INSERT, so it cannot
		// vanish; retry the insert if it did all the same.
		for attempt := 0; ; attempt++ {
			gone, err := s.resolve(ctx, tx, h, uniq[h])
			if err != nil {
				return err
			}
			if !gone {
				break
			}
			var got int64
			err = tx.QueryRow(ctx, s.q.put, int64(h), uniq[h]).Scan(&got)
			if err == nil {
				break
			}
			if !errors.Is(err, pgx.ErrNoRows) || attempt > 3 {
				return &cas.ObjectError{Op: "put", Hash: h, Err: err}
			}
		}
	}
	return nil
}

// Has reports whether an object is stored at h, without verifying it.
func (s *Store) Has(ctx context.Context, h cas.Hash) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, s.q.has, int64(h)).Scan(&ok); err != nil {
		return false, &cas.ObjectError{Op: "has", Hash: h, Err: ctxErr(ctx, err)}
	}
	return ok, nil
}

var _ cas.BatchHaser = (*Store)(nil)

// HasBatch reports, for each hash of hs in order, whether an object is
// stored there, in one query ([cas.BatchHaser]).
func (s *Store) HasBatch(ctx context.Context, hs []cas.Hash) ([]bool, error) {
	out := make([]bool, len(hs))
	if len(hs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q.hasMany, int64s(hs))
	if err != nil {
		return nil, fmt.Errorf("look up %d objects: %w", len(hs), ctxErr(ctx, err))
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("look up %d objects: %w", len(hs), ctxErr(ctx, err))
	}
	present := make(map[cas.Hash]bool, len(found))
	for _, h := range found {
		present[cas.Hash(h)] = true
	}
	for i, h := range hs {
		out[i] = present[h]
	}
	return out, nil
}

// Touch sets the age of the object at h to the server's clock (never
// back). The error is an *[cas.ObjectError] wrapping [cas.ErrNotFound] if
// it is absent.
func (s *Store) Touch(ctx context.Context, h cas.Hash) error {
	tag, err := s.pool.Exec(ctx, s.q.touch, int64(h))
	if err != nil {
		return &cas.ObjectError{Op: "touch", Hash: h, Err: ctxErr(ctx, err)}
	}
	if tag.RowsAffected() == 0 {
		return &cas.ObjectError{Op: "touch", Hash: h, Err: cas.ErrNotFound}
	}
	return nil
}

// All lists every object with its size and age, in hash order (as signed
// 64-bit numbers), reading pages by keyset pagination: no connection is
// held while the loop body runs, so the body may use the store, and at
// most one page is in memory. Objects put or deleted during the listing
// may or may not be listed. If ctx is done, or a page cannot be read, it
// yields the error and stops.
func (s *Store) All(ctx context.Context) iter.Seq2[cas.Object, error] {
	return func(yield func(cas.Object, error) bool) {
		var last int64
		first := true
		for {
			if err := ctx.Err(); err != nil {
				yield(cas.Object{}, fmt.Errorf("list objects: %w", err))
				return
			}
			var rows pgx.Rows
			var err error
			if first {
				rows, err = s.pool.Query(ctx, s.q.allFirst, pageSize)
			} else {
				rows, err = s.pool.Query(ctx, s.q.allNext, pageSize, last)
			}
			var page []cas.Object
			if err == nil {
				page, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (cas.Object, error) {
					var h, size int64
					var t time.Time
					err := row.Scan(&h, &size, &t)
					return cas.Object{Hash: cas.Hash(h), Size: size, Time: t.UTC()}, err
				})
			}
			if err != nil {
				yield(cas.Object{}, fmt.Errorf("list objects: %w", ctxErr(ctx, err)))
				return
			}
			for _, o := range page {
				if !yield(o, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			first, last = false, int64(page[len(page)-1].Hash)
		}
	}
}

// DeleteIfOlder deletes the object at h if its time is before cutoff, in
// one statement (DELETE ... WHERE hash = h AND time < cutoff), so it is
// atomic with respect to Touch and Put. It reports whether it deleted; an
// absent object is (false, nil). Stored times have microsecond precision;
// a cutoff between two microseconds is rounded up, which keeps "before"
// exact.
//
// The delete commits asynchronously (synchronous_commit = off, in one
// round trip with its transaction), sparing a GC sweep a WAL flush per
// object. A server crash may undo the last few deletes, never anything
// else: the write-ahead log is flushed in order, so a lost delete brings
// back an unreachable object only together with every later one, and GC
// deletes parents before children, so no present node ever lacks a child.
// Any later synchronous commit (a Put, a ref change) makes every earlier
// delete durable.
func (s *Store) DeleteIfOlder(ctx context.Context, h cas.Hash, cutoff time.Time) (bool, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(s.q.deleteIfOlder, int64(h), pgTime(cutoff))
	b.Queue("COMMIT")
	br := s.pool.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	var err error
	for i := range b.Len() {
		t, e := br.Exec()
		if i == 2 {
			tag = t
		}
		if e != nil && err == nil {
			err = e
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, &cas.ObjectError{Op: "delete", Hash: h, Err: ctxErr(ctx, err)}
	}
	return tag.RowsAffected() > 0, nil
}

// DeleteIfOlderBatch deletes every object of hs whose time is before
// cutoff in one statement (DELETE ... WHERE hash = ANY (hs) AND time <
// cutoff RETURNING hash), each row atomically with respect to Touch and
// Put of it, and returns those deleted in the order of hs. Like
// DeleteIfOlder it commits asynchronously, in one round trip with its
// transaction: a GC sweep batch costs one round trip and no WAL flush of
// its own. A server crash may undo the last batches, never anything else
// (see DeleteIfOlder): GC deletes a batch only after the batches of every
// candidate parent of its objects.
func (s *Store) DeleteIfOlderBatch(ctx context.Context, hs []cas.Hash, cutoff time.Time) ([]cas.Hash, error) {
	if len(hs) == 0 {
		return nil, ctx.Err()
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(s.q.deleteIfOlderMany, int64s(hs), pgTime(cutoff))
	b.Queue("COMMIT")
	br := s.pool.SendBatch(ctx, b)
	gone := map[cas.Hash]bool{}
	var err error
	for i := range b.Len() {
		if i != 2 {
			if _, e := br.Exec(); e != nil && err == nil {
				err = e
			}
			continue
		}
		got, e := collectHashes(br)
		if e != nil && err == nil {
			err = e
		}
		gone = got
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("delete %d objects: %w", len(hs), ctxErr(ctx, err))
	}
	deleted := make([]cas.Hash, 0, len(gone))
	for _, h := range hs {
		if gone[h] {
			deleted = append(deleted, h)
			delete(gone, h)
		}
	}
	return deleted, nil
}

// pgTime converts a cutoff to a timestamptz parameter: rounded up to the
// microsecond, and outside PostgreSQL's range replaced by an infinity.
func pgTime(t time.Time) pgtype.Timestamptz {
	switch {
	case t.Year() > 200000:
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	case t.Year() < -4000:
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		if r.Before(t) {
			r = r.Add(time.Microsecond)
		}
		t = r
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// Now returns the database server's clock (clock_timestamp()), the one
// object ages and ref-log times use.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.pool.QueryRow(ctx, s.q.now).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read the server's clock: %w", ctxErr(ctx, err))
	}
	return t.UTC(), nil
}
