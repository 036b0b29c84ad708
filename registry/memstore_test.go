package registry_test

import (
	"context"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// newRepo returns a Repo over a fresh in-memory store.
func newRepo(t testing.TB) *cas.Repo {
	t.Helper()
	repo, err := openMemRepo()
	if err != nil {
		t.Fatalf("cas.Open: %v", err)
	}
	return repo
}

// openMemRepo opens a Repo over a fresh in-memory store.
func openMemRepo() (*cas.Repo, error) {
	st := cas.NewMemStore(nil)
	return cas.Open(context.Background(), st, st.Refs(), nil)
}
