package castest_test

import (
	"errors"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

// TestRunThroughFaultyWrappers runs the whole suite through wrappers whose
// Fail functions never fail: they must pass every call through unchanged.
func TestRunThroughFaultyWrappers(t *testing.T) {
	never := errors.New("never returned")
	castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
		s := cas.NewMemStore(nil)
		return &castest.FaultyStore{Store: s, Fail: castest.FailOn("get", cas.Hash(1), never)},
			&castest.FaultyRefs{Refs: s.Refs()}
	})
}

func TestRunRefs(t *testing.T) {
	t.Run("with the refs' clock", func(t *testing.T) {
		castest.RunRefs(t, func(t *testing.T) cas.Refs { return cas.NewMemStore(nil).Refs() })
	})
	t.Run("with the local clock", func(t *testing.T) {
		castest.RunRefs(t, func(t *testing.T) cas.Refs {
			return &castest.FaultyRefs{Refs: cas.NewMemStore(nil).Refs()} // hides Now
		})
	})
}
