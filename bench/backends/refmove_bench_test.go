package backends_test

import (
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
)

// refsOf returns the refs of a store opened by openDisk or openPostgres.
func refsOf(s cas.Store) cas.Refs {
	switch s := s.(type) {
	case *disk.Store:
		return s.Refs()
	case *postgres.Store:
		return s.Refs()
	}
	panic("no refs")
}

// BenchmarkRefMove measures one CompareAndSwap moving a ref (the step of a
// thread) on each backend, one after another: the cost of a ref move with
// its log line (and, since the watch API, its journal record or watch
// step).
func BenchmarkRefMove(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) cas.Store
	}{
		{"postgres", openPostgres},
		{"disk-strict", func(b *testing.B) cas.Store { return openDisk(b, disk.DurabilityStrict) }},
		{"disk-none", func(b *testing.B) cas.Store { return openDisk(b, disk.DurabilityNone) }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			r := refsOf(be.open(b))
			ctx := b.Context()
			cur := cas.Hash(0)
			for b.Loop() {
				next := cur + 1
				if err := r.CompareAndSwap(ctx, "threads/bench", cur, next, "step"); err != nil {
					b.Fatal(err)
				}
				cur = next
			}
		})
	}
}
