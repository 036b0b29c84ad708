package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
)

// The fast paths of a step's writes. Each is one pgx batch: its statements
// go out together and run, up to the one Sync that ends the batch, as one
// implicit transaction (committed at the Sync, rolled back whole if a
// statement fails), so a step's nodes cost one round trip and one commit,
// and its ref move one more. Each batch first takes the store-wide lock
// shared at transaction level (pg_advisory_xact_lock_shared), which
// conflicts with a GC's exclusive session-level hold of the same key as
// [Store.Lock] does, and is released by the commit.

var _ cas.LinkedPutter = (*Store)(nil)
var _ cas.TouchingSwapper = (*Refs)(nil)

// PutLinked refreshes every object of edges and, only if all are present,
// stores data, as [cas.LinkedPutter] specifies: one batch of three
// statements (the shared lock, an UPDATE of the edges' ages returning
// those found, an INSERT of the objects guarded by "every edge is there"),
// one round trip and one commit. A batch larger than one INSERT's limits,
// or one that meets bytes other than its own at a hash (corrupt ones to
// heal, a collision), takes an explicit transaction instead, which does
// the same a statement at a time.
func (s *Store) PutLinked(ctx context.Context, data [][]byte, edges []cas.Hash) ([]cas.Hash, error) {
	hs, keys, uniq := s.distinct(data)
	edges = slices.Compact(slices.Sorted(slices.Values(edges)))
	size := 0
	for _, d := range uniq {
		size += len(d)
	}
	if len(keys) <= batchRows && size <= batchBytes {
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			var done bool
			if done, err = s.putLinkedBatch(ctx, keys, uniq, edges); err == nil && done {
				return hs, nil
			}
			if err == nil || !retryable(err) {
				break
			}
		}
		if err != nil {
			return nil, linkedErr(ctx, len(data), err)
		}
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.lockSharedXact, s.storeKey); err != nil {
			return err
		}
		if err := s.touchAll(ctx, tx, edges); err != nil {
			return err
		}
		return s.putChunks(ctx, tx, keys, uniq)
	})
	if err != nil {
		return nil, linkedErr(ctx, len(data), err)
	}
	return hs, nil
}

// linkedErr wraps a failure of PutLinked; an absent edge stays the
// *cas.ObjectError the repo looks for.
func linkedErr(ctx context.Context, n int, err error) error {
	var oe *cas.ObjectError
	if errors.As(err, &oe) {
		return err
	}
	return fmt.Errorf("put %d linked objects: %w", n, ctxErr(ctx, err))
}

// putLinkedBatch is PutLinked's one round trip. It reports done false,
// having stored nothing of its own, if some object met other bytes at its
// hash: the caller then resolves them in a transaction. An absent edge is
// an *cas.ObjectError wrapping cas.ErrNotFound.
func (s *Store) putLinkedBatch(ctx context.Context, keys []cas.Hash, uniq map[cas.Hash][]byte, edges []cas.Hash) (done bool, err error) {
	datas := make([][]byte, len(keys))
	for i, h := range keys {
		datas[i] = uniq[h]
	}
	b := &pgx.Batch{}
	b.Queue(s.q.lockSharedXact, s.storeKey)
	hi, lo := keyHalves(s.gcKey)
	b.Queue(s.q.touchMany, int64s(edges), hi, lo)
	b.Queue(s.q.putLinked, int64s(edges), hi, lo, int64s(keys), datas)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return false, err
	}
	touched, err := collectHashes(br)
	if err != nil {
		return false, err
	}
	stored, err := collectHashes(br)
	if err != nil {
		return false, err
	}
	if err := br.Close(); err != nil {
		return false, err
	}
	if len(touched) < len(edges) {
		for _, h := range edges {
			if !touched[h] {
				return false, &cas.ObjectError{Op: "touch", Hash: h, Err: cas.ErrNotFound}
			}
		}
	}
	return len(stored) == len(keys), nil
}

// keyHalves splits an advisory-lock key as pg_locks shows it: classid the
// high 32 bits, objid the low 32 bits (as unsigned numbers).
func keyHalves(k int64) (hi, lo int64) {
	return int64(uint64(k) >> 32), int64(uint64(k) & 0xffffffff)
}

// collectHashes reads the next result of br: rows of one bigint hash.
func collectHashes(br pgx.BatchResults) (map[cas.Hash]bool, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	out := map[cas.Hash]bool{}
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return nil, err
		}
		out[cas.Hash(h)] = true
	}
	return out, rows.Err()
}

// touchAll refreshes every object of edges (distinct) in tx; an absent one
// is an *cas.ObjectError wrapping cas.ErrNotFound.
func (s *Store) touchAll(ctx context.Context, tx pgx.Tx, edges []cas.Hash) error {
	if len(edges) == 0 {
		return nil
	}
	hi, lo := keyHalves(s.gcKey)
	rows, err := tx.Query(ctx, s.q.touchMany, int64s(edges), hi, lo)
	if err != nil {
		return err
	}
	touched := map[cas.Hash]bool{}
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return err
		}
		touched[cas.Hash(h)] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, h := range edges {
		if !touched[h] {
			return &cas.ObjectError{Op: "touch", Hash: h, Err: cas.ErrNotFound}
		}
	}
	return nil
}

// SwapTouching refreshes new and moves ref name from old to new, as
// [cas.TouchingSwapper] specifies, for a store st that is r's own: one
// batch of four statements (the shared lock, the UPDATE of new's age, the
// move with its log row guarded by "new is there", and a read of the ref),
// one round trip and one commit. A create or a delete (a zero old or new),
// or old equal to new, reports ok false: they take the slow path.
func (r *Refs) SwapTouching(ctx context.Context, st cas.Store, name string, old, new cas.Hash, message string) (ok bool, err error) {
	if !r.owns(st) || old.IsZero() || new.IsZero() || old == new {
		return false, nil
	}
	if err := cas.ValidateRefName(name); err != nil {
		return true, err
	}
	if err := validMessage(name, message); err != nil {
		return true, err
	}
	if err := r.s.ensureAdditions(ctx); err != nil {
		return true, fmt.Errorf("update ref %s: %w", name, err)
	}
	return true, r.move(ctx, name, old, new, message, true)
}

// move moves ref name from old to new, each attempt one round trip
// (moveBatch), with touch refreshing new first; see SwapTouching and
// CompareAndSwap.
func (r *Refs) move(ctx context.Context, name string, old, new cas.Hash, message string, touch bool) error {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		moved, present, cur, err := r.moveBatch(ctx, name, old, new, message, touch)
		switch {
		case retryable(err):
			lastErr = err
			continue
		case err != nil:
			return fmt.Errorf("update ref %s: %w", name, ctxErr(ctx, err))
		case !present:
			return fmt.Errorf("move ref %s to %s: %w", name, new, &cas.ObjectError{Op: "touch", Hash: new, Err: cas.ErrNotFound})
		case moved:
			r.s.changed()
			return nil
		case cur != old:
			return &cas.ConflictError{Name: name, Expected: old, Current: cur}
		}
		// It went away from old and came back meanwhile: try again.
		lastErr = nil
	}
	if lastErr != nil {
		return fmt.Errorf("update ref %s: %w", name, ctxErr(ctx, lastErr))
	}
	return fmt.Errorf("update ref %s: it keeps changing under concurrent writers: %w", name, cas.ErrConflict)
}

// owns reports whether st is r's store, or wraps it (Unwrap).
func (r *Refs) owns(st cas.Store) bool {
	for range 16 {
		if s, ok := st.(*Store); ok {
			return s == r.s
		}
		u, ok := st.(interface{ Unwrap() cas.Store })
		if !ok {
			return false
		}
		st = u.Unwrap()
	}
	return false
}

// moveBatch is one attempt of a move, one batch: with touch, the shared
// store lock, new's refresh and the move guarded by new's presence; without,
// the move alone; then a read of the ref, for a conflict. present is false only
// if touch found new absent (nothing moved).
func (r *Refs) moveBatch(ctx context.Context, name string, old, new cas.Hash, message string, touch bool) (moved, present bool, cur cas.Hash, err error) {
	s := r.s
	b := &pgx.Batch{}
	touchAt, stmt := -1, s.q.move
	if touch {
		b.Queue(s.q.lockSharedXact, s.storeKey)
		hi, lo := keyHalves(s.gcKey)
		touchAt, stmt = b.Len(), s.q.moveIfPresent
		b.Queue(s.q.touchMany, []int64{int64(new)}, hi, lo)
	}
	moveAt := b.Len()
	b.Queue(stmt, name, int64(old), int64(new), message)
	readAt := b.Len()
	b.Queue(s.q.getRef, name)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	present = true
	for i := range b.Len() {
		switch i {
		case touchAt:
			var found map[cas.Hash]bool
			found, err = collectHashes(br)
			present = found[new]
		case moveAt:
			var id int64
			e := br.QueryRow().Scan(&id)
			moved = e == nil
			if !errors.Is(e, pgx.ErrNoRows) {
				err = e
			}
		case readAt:
			var h int64
			e := br.QueryRow().Scan(&h)
			cur = cas.Hash(h)
			if !errors.Is(e, pgx.ErrNoRows) {
				err = e
			}
		default:
			_, err = br.Exec()
		}
		if err != nil {
			return false, false, 0, err
		}
	}
	return moved, present, cur, br.Close()
}
