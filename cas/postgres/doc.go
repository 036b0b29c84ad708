// Package postgres is uwf's shared backend: a [cas.Store] and [cas.Refs]
// kept in PostgreSQL (through github.com/jackc/pgx/v5), for many workers on
// many machines sharing one store.
package postgres
