package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
)

var _ cas.LinkedSwapper = (*Refs)(nil)

// moveLinkedGuard is the condition of a step's move after its objects'
// INSERT in the same transaction ($5, $6: their hashes and bytes; $7 the
// edges): every object holds its own bytes and every edge is there, so
// the ref never moves to a node that was not stored whole.
const moveLinkedGuard = ` AND (SELECT count(*) FROM unnest($5::bigint[], $6::bytea[]) AS u(h, d)
			JOIN {{S}}.objects o ON o.hash = u.h AND o.data = u.d) = cardinality($5::bigint[])
		AND (SELECT count(*) FROM {{S}}.objects WHERE hash = ANY ($7::bigint[])) = cardinality($7::bigint[])`

// PutLinkedSwap stores a step's objects and moves its ref, as
// [cas.LinkedSwapper] specifies, for a store st that is r's own: one batch
// (the shared store lock, the UPDATE of the edges' ages, the INSERT of the
// objects, the move guarded by "every object and edge is there", a read of
// the ref, and the upsert of the derived-cache entries, if any), one round
// trip and one commit, so the step waits for one WAL flush where PutLinked
// and SwapTouching wait for two (the entries, in an unlogged table, add
// none). It reports done false, having moved nothing, for a store not its
// own, a create or delete (a zero old or new), a batch past one INSERT's
// limits, an absent edge or an object that meets other bytes at its hash:
// the slow path then puts the objects (and heals, or says what is
// missing) before it moves the ref. Without the derived cache's table the
// batch goes again without the entries.
func (r *Refs) PutLinkedSwap(ctx context.Context, st cas.Store, data [][]byte, edges []cas.Hash, name string, old, new cas.Hash, message string, entries []cas.DerivedEntry) ([]cas.Hash, bool, error) {
	s := r.s
	if !r.owns(st) || old.IsZero() || new.IsZero() || old == new {
		return nil, false, nil
	}
	if cas.ValidateRefName(name) != nil || validMessage(name, message) != nil {
		return nil, false, nil
	}
	// The entries, the last of each key (one upsert may not touch a row
	// twice).
	var keys []string
	var vals [][]byte
	at := map[string]int{}
	for _, e := range entries {
		if cas.ValidateDerivedKey(e.Key) != nil {
			return nil, false, nil
		}
		d := e.Data
		if d == nil {
			d = []byte{} // not NULL
		}
		if i, ok := at[e.Key]; ok {
			vals[i] = d
			continue
		}
		at[e.Key] = len(keys)
		keys, vals = append(keys, e.Key), append(vals, d)
	}
	hs, objs, uniq := s.distinct(data)
	size := 0
	for _, d := range uniq {
		size += len(d)
	}
	if len(objs) > batchRows || size > batchBytes {
		return nil, false, nil
	}
	edges = uniqueHashes(edges)
	if err := s.ensureAdditions(ctx); err != nil {
		return nil, true, fmt.Errorf("update ref %s: %w", name, err)
	}
	datas := make([][]byte, len(objs))
	for i, h := range objs {
		datas[i] = uniq[h]
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		touched, stored, moved, cur, err := s.putMoveBatch(ctx, objs, datas, edges, name, old, new, message, keys, vals)
		switch {
		case noTable(err) && keys != nil:
			// The derived cache's table was dropped: it keeps nothing.
			keys, vals = nil, nil
			continue
		case retryable(err):
			lastErr = err
			continue
		case err != nil:
			return nil, true, fmt.Errorf("put %d objects and update ref %s: %w", len(data), name, ctxErr(ctx, err))
		case moved:
			s.changed()
			return hs, true, nil
		case touched < len(edges) || stored < len(objs):
			// An absent edge, or other bytes at a hash: nothing moved.
			return nil, false, nil
		case cur != old:
			return hs, true, &cas.ConflictError{Name: name, Expected: old, Current: cur}
		}
		// It went away from old and came back meanwhile: try again.
		lastErr = nil
	}
	if lastErr != nil {
		return nil, true, fmt.Errorf("put %d objects and update ref %s: %w", len(data), name, ctxErr(ctx, lastErr))
	}
	return hs, true, fmt.Errorf("update ref %s: it keeps changing under concurrent writers: %w", name, cas.ErrConflict)
}

// uniqueHashes returns hs sorted, without duplicates.
func uniqueHashes(hs []cas.Hash) []cas.Hash {
	seen := make(map[cas.Hash]bool, len(hs))
	out := make([]cas.Hash, 0, len(hs))
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// putMoveBatch is one attempt of PutLinkedSwap: how many edges it found,
// how many objects hold their own bytes, whether the ref moved, and where
// the ref is after.
func (s *Store) putMoveBatch(ctx context.Context, keys []cas.Hash, datas [][]byte, edges []cas.Hash, name string, old, new cas.Hash, message string, dkeys []string, dvals [][]byte) (touched, stored int, moved bool, cur cas.Hash, err error) {
	hi, lo := keyHalves(s.gcKey)
	b := &pgx.Batch{}
	b.Queue(s.q.lockSharedXact, s.storeKey)
	b.Queue(s.q.touchMany, int64s(edges), hi, lo)
	b.Queue(s.q.putLinked, int64s(edges), hi, lo, int64s(keys), datas)
	b.Queue(s.q.moveLinked, name, int64(old), int64(new), message, int64s(keys), datas, int64s(edges))
	b.Queue(s.q.getRef, name)
	if dkeys != nil {
		b.Queue(s.q.putDerivedMany, dkeys, dvals)
	}
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return 0, 0, false, 0, err
	}
	t, err := collectHashes(br)
	if err != nil {
		return 0, 0, false, 0, err
	}
	st, err := collectHashes(br)
	if err != nil {
		return 0, 0, false, 0, err
	}
	var id int64
	switch err := br.QueryRow().Scan(&id); {
	case err == nil:
		moved = true
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, 0, false, 0, err
	}
	var h int64
	if err := br.QueryRow().Scan(&h); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, 0, err
	}
	if dkeys != nil {
		if _, err := br.Exec(); err != nil {
			return 0, 0, false, 0, err
		}
	}
	return len(t), len(st), moved, cas.Hash(h), br.Close()
}
