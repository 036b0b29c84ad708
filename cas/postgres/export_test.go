package postgres

import "github.com/uncaged/uwf/cas"

// SetHash replaces the address function of s, so tests can force hash
// collisions. Call it before s is used.
func SetHash(s *Store, sum func([]byte) cas.Hash) { s.sum = sum }
