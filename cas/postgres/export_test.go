package postgres

import "github.com/uncaged/uwf/cas"

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

// WatchLockKey is the advisory lock every log row's transaction takes
// before the row gets its id.
func WatchLockKey(schema string) int64 { return watchLockKey(schema) }
