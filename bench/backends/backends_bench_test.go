package backends_test

import (
	"encoding/binary"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
)

// objectSize is the size of the objects the benchmarks store.
const objectSize = 1024

// blob returns objectSize bytes unique to n (and to the run, by seed).
func blob(seed, n uint64) []byte {
	b := make([]byte, objectSize)
	binary.LittleEndian.PutUint64(b, seed)
	binary.LittleEndian.PutUint64(b[8:], n)
	for i := 16; i < len(b); i++ {
		b[i] = byte(i*31 + int(n))
	}
	return b
}

var benchSeed atomic.Uint64

func init() { benchSeed.Store(uint64(time.Now().UnixNano())) }

// BenchmarkBackends measures Put, a batch Put of 100 and Get of 1 KiB
// objects on PostgreSQL and on the disk store (strict and none) in one run,
// so their throughputs can be compared under the same load. Without
// UWF_TEST_POSTGRES the PostgreSQL runs skip (fail under CI=true).
func BenchmarkBackends(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) cas.Store
	}{
		{"postgres", openPostgres},
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
			batch := make([][]byte, 1000)
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

// openPostgres opens a store in a fresh SQL schema, dropped when b ends.
func openPostgres(b *testing.B) cas.Store {
	b.Helper()
	url := pgtest.URL(b)
	schema := pgtest.Schema(b, "uwf_bench_")
	st, err := postgres.Open(b.Context(), url, &postgres.Options{Schema: schema, MaxConns: 8})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	return st
}
