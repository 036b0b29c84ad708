// Package pgtest gives tests the PostgreSQL server they may use: the URL in
// UWF_TEST_POSTGRES (see .ci/postgres.sh). Without it a test skips, with a
// message saying how to run it, except under CI (CI=true), where a missing
// server is a failure: CI must run every backend.
package pgtest

import (
	"os"
	"testing"
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
