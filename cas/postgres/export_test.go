package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas"
)

// SetHash replaces the address function of s, so tests can force hash
// collisions. Call it before s is used.
func SetHash(s *Store, sum func([]byte) cas.Hash) { s.sum = sum }

// AddAddition appends an additive SQL object to the list Open makes, until
// the test ends. Tests that call it must not run in parallel with others.
func AddAddition(t interface{ Cleanup(func()) }, name string, stmts ...string) {
	n := len(additions)
	additions = append(additions[:n:n], addition{name: name, stmts: stmts})
	t.Cleanup(func() { additions = additions[:n:n] })
}

// SetWatchStandIn adds to every ref move's batch, until the test ends, a
// stand-in for what watching refs adds to it: an exclusive
// transaction-level advisory lock just before the move (so log ids commit
// in order) and a pg_notify just after, either or both.
func SetWatchStandIn(t interface{ Cleanup(func()) }, lock, notify bool) {
	if lock {
		moveHooks.before = func(b *pgx.Batch, s *Store, name string) {
			b.Queue("SELECT pg_advisory_xact_lock($1::bigint)", lockKey(s.schema, "log", ""))
		}
	}
	if notify {
		moveHooks.after = func(b *pgx.Batch, s *Store, name string) {
			b.Queue("SELECT pg_notify($1::text, $2::text)", "uwf_"+s.schema, name)
		}
	}
	t.Cleanup(func() { moveHooks.before, moveHooks.after = nil, nil })
}
