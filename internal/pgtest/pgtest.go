// Package pgtest gives tests the PostgreSQL server they may use: the URL in
// UWF_TEST_POSTGRES (see .ci/postgres.sh). Without it a test skips, with a
// message saying how to run it, except under CI (CI=true), where a missing
// server is a failure: CI must run every backend.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the environment variable holding the test server's URL.
const EnvVar = "UWF_TEST_POSTGRES"

// URL returns the test server's URL. Without one it skips t, or fails it
// when CI=true.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvVar)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(EnvVar + " is not set and CI=true: the PostgreSQL tests must run (see .ci/postgres.sh)")
		}
		t.Skip("set " + EnvVar + "=postgres://... to run the PostgreSQL tests (see .ci/postgres.sh)")
	}
	return url
}

// Schema returns a new SQL schema name, unique to this run, beginning with
// prefix; the schema (if a store created it) is dropped when t ends. Open a
// store in it with postgres.Options.Schema, or "?schema=" in the URL.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	url := URL(t)
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	schema := prefix + hex.EncodeToString(r[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}
