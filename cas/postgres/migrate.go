package postgres

import (
	"context"
	"errors"
	"fmt"

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

// SchemaVersion is the version of the SQL schema this package creates and
// reads, recorded in the table schema_version. [Open] migrates older
// schemas and refuses newer ones.
const SchemaVersion = 1

func init() {
	if len(migrations) != SchemaVersion {
		panic("postgres: SchemaVersion does not match the migrations")
	}
}

// migrate brings the schema to SchemaVersion. It first reads the version
// without locking (the common case: nothing to do); otherwise it takes a
// transaction-scoped advisory lock, so concurrent Opens migrate once, and
// runs the missing steps and the version update in that one transaction.
func (s *Store) migrate(ctx context.Context) error {
	v, err := s.readVersion(ctx, s.pool)
	if err == nil && v == SchemaVersion {
		return nil
	}
	if err == nil && v > SchemaVersion {
		return s.newerErr(v)
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
		if v > SchemaVersion {
			return s.newerErr(v)
		}
		for ; v < SchemaVersion; v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.Exec(ctx, s.q.expand(stmt)); err != nil {
					return fmt.Errorf("migrate to version %d: %w", v+1, err)
				}
			}
			s.log.Info("migrated the schema", "version", v+1)
		}
		_, err = tx.Exec(ctx, s.q.expand(`INSERT INTO {{S}}.schema_version (version) VALUES ($1)
			ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version`), SchemaVersion)
		if err != nil {
			return fmt.Errorf("record the schema version: %w", err)
		}
		return nil
	})
}

func (s *Store) newerErr(v int) error {
	return fmt.Errorf("%w: the schema is at version %d, this program knows versions up to %d: upgrade uwf",
		cas.ErrFormat, v, SchemaVersion)
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
