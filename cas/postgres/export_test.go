package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/uncaged/uwf/cas"
)

// SetHash replaces the address function of s, so tests can force hash
// collisions. Call it before s is used.
func SetHash(s *Store, sum func([]byte) cas.Hash) { s.sum = sum }

// AddAddition appends an additive SQL object to the list a first write makes, until
// the test ends. Tests that call it must not run in parallel with others.
func AddAddition(t interface{ Cleanup(func()) }, name string, stmts ...string) {
	n := len(additions)
	additions = append(additions[:n:n], addition{name: name, stmts: stmts})
	t.Cleanup(func() { additions = additions[:n:n] })
}

// WatchLockKey is the advisory lock every log row's transaction takes
// before the row gets its id.
func WatchLockKey(schema string) int64 { return watchLockKey(schema) }

// MoveSQL returns the statement a move runs (with the watch step) and the
// same statement without it, for the benchmark of the step's cost.
func MoveSQL(s *Store) (with, without string) {
	return s.q.move, s.q.expand(`WITH u AS (
			UPDATE {{S}}.refs SET hash = $3::bigint WHERE name = $1::text AND hash = $2::bigint RETURNING name
		)
		INSERT INTO {{S}}.ref_log (name, old, new, time_ms, message)
		SELECT u.name, $2::bigint, $3::bigint, ` + nowMS + `, $4::text FROM u
		RETURNING id`)
}

// Pool returns the store's operation pool.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

// SetWatchPage sets how many rows one read of a watch returns, until the
// test ends. Tests that call it must not run in parallel with others.
func SetWatchPage(t interface{ Cleanup(func()) }, n int) {
	old := watchPage
	watchPage = n
	t.Cleanup(func() { watchPage = old })
}

// SetCloseWait sets how long Close waits for connections in use, until the
// test ends. Tests that call it must not run in parallel with others.
func SetCloseWait(t interface{ Cleanup(func()) }, d time.Duration) {
	old := closeWait
	closeWait = d
	t.Cleanup(func() { closeWait = old })
}
