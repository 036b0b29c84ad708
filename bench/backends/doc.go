// Package backends holds benchmarks that compare the store backends with
// each other under the same load (bench/README.md, "PostgreSQL against the
// disk store"). It lives apart from cas/disk and cas/postgres so that
// neither backend's tests import the other: run it with
//
//	go test -run '^$' -bench '^BenchmarkBackends$' -benchtime 2s ./bench/backends/
//
// It has no code of its own; the PostgreSQL runs need UWF_TEST_POSTGRES.
package backends
