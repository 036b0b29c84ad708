package cas_test

import (
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

func TestMemConformance(t *testing.T) {
	castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
		s := cas.NewMemStore(nil)
		t.Cleanup(func() { castest.Verify(t, s) })
		return s, s.Refs()
	})
}
