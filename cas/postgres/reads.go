package postgres

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// The read fast paths of a thread step and of show: objects and
// derived-cache entries in one statement ([cas.BatchReader]), many
// derived-cache entries in one ([cas.DerivedBatchGetter]), and refs with
// the objects they point at in one ([cas.RefNodeGetter]). Each is one round
// trip where the plain reads take one per object, entry or ref: on a busy
// machine each round trip waits for the server process to be scheduled.

var (
	_ cas.BatchReader        = (*Store)(nil)
	_ cas.DerivedBatchGetter = (*Store)(nil)
	_ cas.RefNodeGetter      = (*Refs)(nil)
)

// batchResult returns, for each hash of hs in order, its bytes in got
// re-hashed, or the error [Store.Get] would give.
func (s *Store) batchResult(hs []cas.Hash, got map[cas.Hash][]byte) (data [][]byte, errs []error) {
	data, errs = make([][]byte, len(hs)), make([]error, len(hs))
	for i, h := range hs {
		d, ok := got[h]
		switch {
		case !ok:
			errs[i] = &cas.ObjectError{Op: "get", Hash: h, Err: cas.ErrNotFound}
		case s.sum(d) != h:
			errs[i] = &cas.ObjectError{Op: "get", Hash: h, Err: cas.ErrCorrupt}
		default:
			data[i] = d
		}
	}
	return data, errs
}

// derivedResult returns, for each key of keys in order, its entry in got.
func derivedResult(keys []string, got map[string][]byte) (data [][]byte, ok []bool) {
	data, ok = make([][]byte, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		data[i], ok[i] = got[k]
	}
	return data, ok
}

// GetDerivedBatch returns the [cas.Derived] entries at keys in one
// statement, as [cas.DerivedBatchGetter] specifies.
func (s *Store) GetDerivedBatch(ctx context.Context, keys []string) ([][]byte, []bool, error) {
	_, _, data, ok, err := s.ReadBatch(ctx, nil, keys)
	return data, ok, err
}

// ReadBatch reads the objects hs (re-hashed, as [Store.GetBatch] does) and
// the derived-cache entries keys in one statement, as [cas.BatchReader]
// specifies. Without the derived-cache table there are no entries.
func (s *Store) ReadBatch(ctx context.Context, hs []cas.Hash, keys []string) (data [][]byte, errs []error, derived [][]byte, found []bool, err error) {
	for _, k := range keys {
		if err := cas.ValidateDerivedKey(k); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	if keys == nil {
		keys = []string{} // an empty array, not NULL
	}
	what := fmt.Sprintf("get %d objects and %d derived-cache entries", len(hs), len(keys))
	rows, err := s.pool.Query(ctx, s.q.readBatch, int64s(hs), keys)
	if noTable(err) {
		return s.readBatchNoTable(ctx, hs, keys)
	}
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("%s: %w", what, ctxErr(ctx, err))
	}
	objs := make(map[cas.Hash][]byte, len(hs))
	ents := make(map[string][]byte, len(keys))
	for rows.Next() {
		var h *int64
		var k *string
		var d []byte
		if err := rows.Scan(&h, &k, &d); err != nil {
			rows.Close()
			return nil, nil, nil, nil, fmt.Errorf("%s: %w", what, ctxErr(ctx, err))
		}
		if d == nil {
			d = []byte{}
		}
		switch {
		case h != nil:
			objs[cas.Hash(*h)] = d
		case k != nil:
			ents[*k] = d
		}
	}
	switch err := rows.Err(); {
	case noTable(err):
		return s.readBatchNoTable(ctx, hs, keys)
	case err != nil:
		return nil, nil, nil, nil, fmt.Errorf("%s: %w", what, ctxErr(ctx, err))
	}
	data, errs = s.batchResult(hs, objs)
	derived, found = derivedResult(keys, ents)
	return data, errs, derived, found, nil
}

// readBatchNoTable is [Store.ReadBatch] without the derived-cache table (a
// store an older build made, not yet written by this one): the objects
// alone, and no entries.
func (s *Store) readBatchNoTable(ctx context.Context, hs []cas.Hash, keys []string) (data [][]byte, errs []error, derived [][]byte, found []bool, err error) {
	if len(hs) > 0 {
		if data, errs, err = s.GetBatch(ctx, hs); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	derived, found = derivedResult(keys, nil)
	return data, errs, derived, found, nil
}

// GetRefNodes reads the refs names and the objects they point at in one
// statement, as [cas.RefNodeGetter] specifies: a ref's bytes are nil when
// its object is absent or no longer hashes to it.
func (r *Refs) GetRefNodes(ctx context.Context, names []string) ([]cas.Hash, [][]byte, error) {
	for _, name := range names {
		if err := cas.ValidateRefName(name); err != nil {
			return nil, nil, err
		}
	}
	rows, err := r.s.pool.Query(ctx, r.s.q.getRefNodes, names)
	if err != nil {
		return nil, nil, fmt.Errorf("get %d refs: %w", len(names), ctxErr(ctx, err))
	}
	type row struct {
		h    cas.Hash
		data []byte
	}
	got := make(map[string]row, len(names))
	for rows.Next() {
		var name string
		var h int64
		var d []byte
		if err := rows.Scan(&name, &h, &d); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("get %d refs: %w", len(names), ctxErr(ctx, err))
		}
		if d != nil && r.s.sum(d) != cas.Hash(h) {
			d = nil
		}
		got[name] = row{cas.Hash(h), d}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("get %d refs: %w", len(names), ctxErr(ctx, err))
	}
	hs, data := make([]cas.Hash, len(names)), make([][]byte, len(names))
	for i, name := range names {
		hs[i], data[i] = got[name].h, got[name].data
	}
	return hs, data, nil
}
