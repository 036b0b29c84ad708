package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/uncaged/uwf/cas"
)

// migrations[i] brings a schema from version i to version i+1; the schema
// is at SchemaVersion when all have run. Every statement is run with
// {{S}} replaced by the quoted schema name. Append to this list, never
// change a published step: stores in the field run them in order.
var migrations = [][]string{
	// 1: objects, refs and ref logs.
	{
		`CREATE TABLE {{S}}.objects (
			hash bigint PRIMARY KEY,
			data bytea NOT NULL,
			size bigint NOT NULL,
			time timestamptz NOT NULL
		) WITH (fillfactor = 90)`,
		`CREATE TABLE {{S}}.refs (
			name text COLLATE "C" PRIMARY KEY,
			lower_name text COLLATE "C" NOT NULL UNIQUE CHECK (lower_name = lower(name)),
			hash bigint NOT NULL CHECK (hash <> 0)
		)`,
		`CREATE TABLE {{S}}.ref_log (
			id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			name text COLLATE "C" NOT NULL,
			old bigint NOT NULL,
			new bigint NOT NULL,
			time_ms bigint NOT NULL,
			message text NOT NULL
		)`,
		`CREATE INDEX ref_log_name_id ON {{S}}.ref_log (name, id)`,
	},
}

// SchemaVersion is the format version of a new store, recorded in the
// table schema_version. That row is the store's format version (SPEC §9):
// a version-1 build checks only it and refuses anything but 1. [Open]
// accepts every version from [cas.FormatV1] to [cas.LatestFormat], writes
// nothing to a store that has one, and refuses newer ones; the version
// moves forward only through [Refs.BumpFormat]. The migrations above make
// the tables of version 1; a later format version that needs tables creates
// them in its bump's transaction, and additive, droppable SQL objects
// (indexes, caches) are tracked apart from the format version.
const SchemaVersion = cas.FormatV1

func init() {
	if len(migrations) != SchemaVersion {
		panic("postgres: SchemaVersion does not match the migrations")
	}
}

// additions are additive, droppable SQL objects (an index, a cache table, a
// journal) that later issues append here. They are not part of the format:
// a version-1 build ignores them, and so they are kept apart from the
// format version, each recorded by name in the table additions when it is
// made. Open never makes them in an existing store (SPEC §9: Open writes
// nothing, and a role without CREATE rights can open and read any store):
// a new store gets them with its tables, and an existing one at the first
// write by this binary that may need them (ensureAdditions, before every
// change of a ref or its log), each in one transaction with its row (so a
// store that has them all is left untouched). Every reader takes an absent
// addition as empty. Every statement must be safe to run again ("IF NOT
// EXISTS"), and must never change what the tables of the format mean.
// Never remove or rename an entry once released.
var additions = []addition{watchAddition}

// addition is one entry of additions.
type addition struct {
	name  string   // unique, recorded in the table additions
	stmts []string // with {{S}} for the schema
}

// ensureAdditions makes the additions the store lacks, once per Store
// (after a success later calls cost nothing): see additions. Callers run it
// before their first statement that may need one.
func (s *Store) ensureAdditions(ctx context.Context) error {
	if s.added.Load() {
		return nil
	}
	s.addMu.Lock()
	defer s.addMu.Unlock()
	if s.added.Load() {
		return nil
	}
	if err := s.addAdditions(ctx); err != nil {
		return fmt.Errorf("postgres: make the additive tables (first write to this store by this build): %w", ctxErr(ctx, err))
	}
	s.added.Store(true)
	return nil
}

// addAdditions makes the additions the store lacks. It reads the recorded
// names first, without locking; only when some are missing does it take
// the migration lock and, in one transaction, create the table additions
// if needed, run each missing addition and record it.
func (s *Store) addAdditions(ctx context.Context) error {
	if len(additions) == 0 {
		return nil
	}
	done := map[string]bool{}
	rows, err := s.pool.Query(ctx, s.q.expand(`SELECT name FROM {{S}}.additions`))
	if err == nil {
		var names []string
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
		for _, n := range names {
			done[n] = true
		}
	}
	if err != nil && !noTable(err) { // no table additions: none made yet
		return fmt.Errorf("read the additions: %w", ctxErr(ctx, err))
	}
	missing := false
	for _, a := range additions {
		missing = missing || !done[a.name]
	}
	if !missing {
		return nil
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(s.schema, "migrate", "")); err != nil {
			return fmt.Errorf("lock for additions: %w", err)
		}
		return s.makeAdditions(ctx, tx)
	})
}

// makeAdditions makes, in tx (which holds the migration lock), the table
// additions if needed and each addition not recorded there, recording it.
func (s *Store) makeAdditions(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, s.q.expand(`CREATE TABLE IF NOT EXISTS {{S}}.additions (
		name text COLLATE "C" PRIMARY KEY,
		made timestamptz NOT NULL DEFAULT now()
	)`)); err != nil {
		return fmt.Errorf("create the table additions: %w", err)
	}
	for _, a := range additions {
		tag, err := tx.Exec(ctx, s.q.expand(`INSERT INTO {{S}}.additions (name) VALUES ($1) ON CONFLICT DO NOTHING`), a.name)
		if err != nil {
			return fmt.Errorf("record addition %s: %w", a.name, err)
		}
		if tag.RowsAffected() == 0 {
			continue // made before
		}
		for _, stmt := range a.stmts {
			if _, err := tx.Exec(ctx, s.q.expand(stmt)); err != nil {
				return fmt.Errorf("make addition %s: %w", a.name, err)
			}
		}
		s.log.Info("made an additive SQL object", "name", a.name)
	}
	return nil
}

// migrate makes the tables of a new store, with the additions. It first
// reads the version without locking: a store at a known version is left
// as it is (nothing is written, not even a missing addition). Otherwise it
// takes a transaction-scoped advisory lock, so concurrent Opens create the
// store once, and runs the missing steps and records the version in that
// one transaction. It refuses a version this build does not know.
func (s *Store) migrate(ctx context.Context) error {
	v, err := s.readVersion(ctx, s.pool)
	if err == nil && v >= cas.FormatV1 && v <= cas.LatestFormat {
		return nil
	}
	if err == nil && v > cas.LatestFormat {
		return s.newerErr(v)
	}
	if s.noCreate {
		var pe *pgconn.PgError
		if err == nil || errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") {
			return fmt.Errorf("%w: no store in schema %s (nothing was created)", cas.ErrNotFound, s.schema)
		}
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(s.schema, "migrate", "")); err != nil {
			return fmt.Errorf("lock for migration: %w", err)
		}
		for _, stmt := range []string{
			`CREATE SCHEMA IF NOT EXISTS {{S}}`,
			`CREATE TABLE IF NOT EXISTS {{S}}.schema_version (
				singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
				version integer NOT NULL
			)`,
		} {
			if _, err := tx.Exec(ctx, s.q.expand(stmt)); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		v, err := s.readVersion(ctx, tx)
		if err != nil {
			return err
		}
		if v > cas.LatestFormat {
			return s.newerErr(v)
		}
		if v >= cas.FormatV1 {
			return nil // another Open made it meanwhile
		}
		for ; v < SchemaVersion; v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.Exec(ctx, s.q.expand(stmt)); err != nil {
					return fmt.Errorf("migrate to version %d: %w", v+1, err)
				}
			}
			s.log.Info("migrated the schema", "version", v+1)
		}
		if err := s.makeAdditions(ctx, tx); err != nil {
			return err
		}
		s.added.Store(true)
		_, err = tx.Exec(ctx, s.q.expand(`INSERT INTO {{S}}.schema_version (version) VALUES ($1)
			ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version`), SchemaVersion)
		if err != nil {
			return fmt.Errorf("record the schema version: %w", err)
		}
		return nil
	})
}

var _ cas.FormatVersioner = (*Refs)(nil)

// FormatVersion returns the store's format version, the row of
// schema_version. The error wraps [cas.ErrFormat] for a version this build
// does not know.
func (r *Refs) FormatVersion(ctx context.Context) (int, error) {
	v, err := r.s.readVersion(ctx, r.s.pool)
	if err != nil {
		return 0, fmt.Errorf("postgres: %w", ctxErr(ctx, err))
	}
	if v < cas.FormatV1 || v > cas.LatestFormat {
		return 0, r.s.newerErr(v)
	}
	return v, nil
}

// BumpFormat moves the store from format version from to version to, as
// [cas.FormatVersioner] specifies, in one transaction: the migration lock,
// the version row locked, each ref of want checked (and share-locked, so no
// one moves it before the commit), then schema_version set to to.
func (r *Refs) BumpFormat(ctx context.Context, from, to int, want map[string]cas.Hash) error {
	s := r.s
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(s.schema, "migrate", "")); err != nil {
			return fmt.Errorf("postgres: lock for the format bump: %w", ctxErr(ctx, err))
		}
		var cur int
		if err := tx.QueryRow(ctx, s.q.expand(`SELECT version FROM {{S}}.schema_version FOR UPDATE`)).Scan(&cur); err != nil {
			return fmt.Errorf("postgres: read the format version: %w", ctxErr(ctx, err))
		}
		switch cur {
		case to:
			return nil
		case from:
		default:
			return fmt.Errorf("postgres: %w: the store is at format version %d, not %d", cas.ErrFormat, cur, from)
		}
		for _, name := range slices.Sorted(maps.Keys(want)) {
			if err := r.lockName(ctx, tx, name); err != nil {
				return err
			}
			var h int64
			err := tx.QueryRow(ctx, s.q.expand(`SELECT hash FROM {{S}}.refs WHERE lower_name = $1 FOR SHARE`),
				strings.ToLower(name)).Scan(&h)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("postgres: read ref %s: %w", name, ctxErr(ctx, err))
			}
			if cas.Hash(h) != want[name] {
				return &cas.ConflictError{Name: name, Expected: want[name], Current: cas.Hash(h)}
			}
		}
		if _, err := tx.Exec(ctx, s.q.expand(`UPDATE {{S}}.schema_version SET version = $1`), to); err != nil {
			return fmt.Errorf("postgres: record format version %d: %w", to, ctxErr(ctx, err))
		}
		s.log.Info("moved the store's format", "from", from, "to", to)
		return nil
	})
}

func (s *Store) newerErr(v int) error {
	return fmt.Errorf("%w: the store is at format version %d, this build knows versions %d to %d: upgrade uwf",
		cas.ErrFormat, v, cas.FormatV1, cas.LatestFormat)
}

// readVersion returns the recorded schema version, 0 if there is none yet.
// The error is the database's if the schema or the table is missing.
func (s *Store) readVersion(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := db.QueryRow(ctx, s.q.expand(`SELECT version FROM {{S}}.schema_version`)).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // undefined table, schema
			return 0, err
		}
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return v, nil
}
