package disk_test

import (
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/disk"
)

// TestConformance runs the shared conformance suite against the disk
// backend, each subtest on a fresh store (durability none: the order of
// syncs is tested through the recording filesystem instead).
func TestConformance(t *testing.T) {
	castest.Run(t, func(t *testing.T) (cas.Store, cas.Refs) {
		st, err := disk.Create(t.TempDir(), &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, st.Refs()
	})
}
