package postgres_test

import (
	"path/filepath"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

// BenchmarkBackends measures Put, a batch Put of 100 and Get of 1 KiB
// objects on PostgreSQL and on the disk store (strict and none) in one run,
// so their throughputs can be compared under the same load:
//
//	go test -run '^$' -bench '^BenchmarkBackends$' -benchtime 2s ./cas/postgres/
func BenchmarkBackends(b *testing.B) {
	needPostgres(b)
	backends := []struct {
		name string
		open func(b *testing.B) cas.Store
	}{
		{"postgres", func(b *testing.B) cas.Store { return newStore(b) }},
		{"disk-strict", func(b *testing.B) cas.Store { return openDisk(b, disk.DurabilityStrict) }},
		{"disk-none", func(b *testing.B) cas.Store { return openDisk(b, disk.DurabilityNone) }},
	}
	for _, be := range backends {
		b.Run(be.name+"/put", func(b *testing.B) {
			s := be.open(b)
			seed := benchSeed.Add(1)
			b.SetBytes(objectSize)
			var n uint64
			for b.Loop() {
				n++
				if _, err := s.Put(b.Context(), blob(seed, n)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
		b.Run(be.name+"/putbatch100", func(b *testing.B) {
			s := be.open(b)
			seed := benchSeed.Add(1)
			b.SetBytes(100 * objectSize)
			var n uint64
			for b.Loop() {
				batch := make([][]byte, 100)
				for i := range batch {
					n++
					batch[i] = blob(seed, n)
				}
				if _, err := cas.PutBatch(b.Context(), s, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "objects/s")
		})
		b.Run(be.name+"/get", func(b *testing.B) {
			s := be.open(b)
			seed := benchSeed.Add(1)
			hs := make([]cas.Hash, 1000)
			batch := make([][]byte, len(hs))
			for i := range batch {
				batch[i] = blob(seed, uint64(i))
			}
			hs, err := cas.PutBatch(b.Context(), s, batch)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(objectSize)
			i := 0
			for b.Loop() {
				if _, err := s.Get(b.Context(), hs[i%len(hs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

func openDisk(b *testing.B, d disk.Durability) cas.Store {
	b.Helper()
	st, err := disk.Create(filepath.Join(b.TempDir(), "store"), &disk.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}
