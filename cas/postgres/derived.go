package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/uncaged/uwf/cas"
)

var _ cas.Derived = (*Store)(nil)

// The derived cache ([cas.Derived]) is the addition "derived-cache": an
// unlogged table (no WAL; PostgreSQL empties it after a crash), not part of
// the format. It may be emptied (TRUNCATE) or dropped at any time: with
// the table gone the store keeps no entries (and DELETE FROM additions
// WHERE name = 'derived-cache' has the next write of a Store make it
// again). Like every addition it is made at a store's creation or at the
// first change of a ref by this build, never by a read: a PutDerived (which
// readers call to fill the cache) while it is absent keeps nothing.
func init() {
	additions = append(additions, addition{name: "derived-cache", stmts: []string{
		`CREATE UNLOGGED TABLE IF NOT EXISTS {{S}}.derived (
			key text COLLATE "C" PRIMARY KEY,
			data bytea NOT NULL
		)`,
	}})
}

// noTable reports whether err says the table derived does not exist.
func noTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// GetDerived returns the [cas.Derived] entry at key.
func (s *Store) GetDerived(ctx context.Context, key string) ([]byte, bool, error) {
	if err := cas.ValidateDerivedKey(key); err != nil {
		return nil, false, err
	}
	var data []byte
	err := s.pool.QueryRow(ctx, s.q.expand(`SELECT data FROM {{S}}.derived WHERE key = $1`), key).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) || noTable(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: read derived-cache entry %s: %w", key, ctxErr(ctx, err))
	}
	return data, true, nil
}

// PutDerived sets the [cas.Derived] entry at key.
func (s *Store) PutDerived(ctx context.Context, key string, data []byte) error {
	if err := cas.ValidateDerivedKey(key); err != nil {
		return err
	}
	if data == nil {
		data = []byte{} // not NULL
	}
	_, err := s.pool.Exec(ctx, s.q.expand(`INSERT INTO {{S}}.derived (key, data) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data`), key, data)
	if err != nil && !noTable(err) {
		return fmt.Errorf("postgres: write derived-cache entry %s: %w", key, ctxErr(ctx, err))
	}
	return nil
}

// DropDerived removes the [cas.Derived] entries at keys, those there are,
// in one statement. It checks every key before removing any.
func (s *Store) DropDerived(ctx context.Context, keys ...string) error {
	for _, key := range keys {
		if err := cas.ValidateDerivedKey(key); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, s.q.expand(`DELETE FROM {{S}}.derived WHERE key = ANY($1)`), keys)
	if err != nil && !noTable(err) {
		if len(keys) == 1 {
			return fmt.Errorf("postgres: drop derived-cache entry %s: %w", keys[0], ctxErr(ctx, err))
		}
		return fmt.Errorf("postgres: drop %d derived-cache entries: %w", len(keys), ctxErr(ctx, err))
	}
	return nil
}

// derivedPage is how many keys one query of [Store.DerivedKeys] reads.
const derivedPage = 1000

// DerivedKeys lists the keys of the [cas.Derived] entries in key order, a
// page of keys per query (each after the last key of the one before), so
// no query, connection or snapshot is held while the caller works. A
// store whose table derived is absent lists nothing.
func (s *Store) DerivedKeys(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		q := s.q.expand(`SELECT key FROM {{S}}.derived WHERE key > $1 ORDER BY key LIMIT $2`)
		after := ""
		for {
			rows, err := s.pool.Query(ctx, q, after, derivedPage)
			var page []string
			if err == nil {
				page, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
			if noTable(err) {
				return
			}
			if err != nil {
				yield("", fmt.Errorf("postgres: list the derived cache: %w", ctxErr(ctx, err)))
				return
			}
			for _, k := range page {
				if !yield(k, nil) {
					return
				}
			}
			if len(page) < derivedPage {
				return
			}
			after = page[len(page)-1]
		}
	}
}
