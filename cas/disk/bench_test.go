package disk_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
)

const benchSize = 1024

// benchData returns 1 KiB of bytes made distinct by i.
func benchData(buf []byte, i int) []byte {
	binary.LittleEndian.PutUint64(buf, uint64(i))
	return buf
}

func benchStore(b *testing.B, d disk.Durability, pool bool) *disk.Store {
	b.Helper()
	opts := &disk.Options{Durability: d}
	disk.SetBatchSyncPool(opts, pool)
	s, err := disk.Create(filepath.Join(b.TempDir(), "store"), opts)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPut puts distinct 1 KiB objects with DurabilityNone into a store
// whose 1024 shard folders exist (a store in use); compare with
// BenchmarkPlainTempPublish.
func BenchmarkPut(b *testing.B) {
	s := benchStore(b, disk.DurabilityNone, false)
	makeShards(b, s)
	ctx := b.Context()
	buf := make([]byte, benchSize)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Put(ctx, benchData(buf, i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPlainTempPublish writes the same bytes as BenchmarkPut with a
// plain loop and no hashing: create a temporary file, write, close, link it
// under its name in one of 1024 folders, remove the temporary name.
func BenchmarkPlainTempPublish(b *testing.B) {
	dir := b.TempDir()
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	for i := range 1024 {
		os.Mkdir(filepath.Join(dir, strconv.Itoa(i)), 0o755)
	}
	buf := make([]byte, benchSize)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f, err := os.CreateTemp(tmp, "t")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(benchData(buf, i)); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		name := filepath.Join(dir, strconv.Itoa(i%1024), strconv.Itoa(i))
		if err := os.Link(f.Name(), name); err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(f.Name()); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// makeShards creates the 1024 shard folders of s, as a store in use has
// them; BenchmarkPlainTempPublish's folders also exist before it starts.
func makeShards(b *testing.B, s *disk.Store) {
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	for _, y := range digits {
		for _, z := range digits {
			if err := os.Mkdir(filepath.Join(s.Dir(), "objects", string(y)+string(z)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
}

const benchObjects = 2000

// getFixture puts benchObjects objects and returns their hashes.
func getFixture(b *testing.B) (*disk.Store, []cas.Hash) {
	s := benchStore(b, disk.DurabilityNone, false)
	buf := make([]byte, benchSize)
	hs := make([]cas.Hash, benchObjects)
	for i := range hs {
		h, err := s.Put(b.Context(), benchData(buf, i))
		if err != nil {
			b.Fatal(err)
		}
		hs[i] = h
	}
	return s, hs
}

// BenchmarkGet reads (and re-hashes) 1 KiB objects; compare with
// BenchmarkReadFile.
func BenchmarkGet(b *testing.B) {
	s, hs := getFixture(b)
	ctx := b.Context()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, hs[i%len(hs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReadFile reads the same files as BenchmarkGet with os.ReadFile.
func BenchmarkReadFile(b *testing.B) {
	s, hs := getFixture(b)
	paths := make([]string, len(hs))
	for i, h := range hs {
		paths[i] = objectFile(s, h)
	}
	b.SetBytes(benchSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := os.ReadFile(paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPutDurable puts distinct 1 KiB objects one by one with
// DurabilityStrict: two fsyncs each.
func BenchmarkPutDurable(b *testing.B) {
	s := benchStore(b, disk.DurabilityStrict, false)
	makeShards(b, s)
	ctx := b.Context()
	buf := make([]byte, benchSize)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Put(ctx, benchData(buf, i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/object")
}

// BenchmarkPutBatchDurable puts batches of 1000 distinct 1 KiB objects with
// DurabilityStrict: one flush point per batch. Compare its ns/object with
// BenchmarkPutDurable's, or see BenchmarkBatchVsSingle.
func BenchmarkPutBatchDurable(b *testing.B) {
	for _, mode := range []struct {
		name string
		pool bool
	}{{"syncfs", false}, {"pool", true}} {
		b.Run(mode.name, func(b *testing.B) {
			s := benchStore(b, disk.DurabilityStrict, mode.pool)
			makeShards(b, s)
			ctx := b.Context()
			const batch = 1000
			b.SetBytes(benchSize * batch)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				data := make([][]byte, batch)
				for k := range data {
					data[k] = benchData(make([]byte, benchSize), n)
					n++
				}
				if _, err := s.PutBatch(ctx, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/object")
		})
	}
}

// BenchmarkBatchVsSingle measures, side by side in one store, 1000
// distinct 1 KiB objects stored with 1000 Puts and 1000 more stored with
// one PutBatch; every operation does both, alternating which goes first,
// so both see the same disk and the same load. It reports each one's
// ns/object and speedup = single / batch. With DurabilityStrict a Put
// syncs twice (the file, then its folder) and a PutBatch has one flush
// point (one syncfs(2), or in strict-pool an fsync of each file from a
// pool, then each touched folder synced once): the target is speedup >= 5
// for strict.
func BenchmarkBatchVsSingle(b *testing.B) {
	const batch = 1000
	for _, mode := range []struct {
		name string
		d    disk.Durability
		pool bool
	}{
		{"none", disk.DurabilityNone, false},
		{"strict", disk.DurabilityStrict, false},
		{"strict-pool", disk.DurabilityStrict, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			s := benchStore(b, mode.d, mode.pool)
			makeShards(b, s)
			ctx := b.Context()
			b.SetBytes(2 * benchSize * batch)
			b.ReportAllocs()
			data := make([][]byte, batch)
			for k := range data {
				data[k] = make([]byte, benchSize)
			}
			n := 0
			fill := func() {
				for k := range data {
					benchData(data[k], n)
					n++
				}
			}
			var single, batched time.Duration
			for i := 0; b.Loop(); i++ {
				for j := range 2 {
					fill()
					t := time.Now()
					if (i+j)%2 == 0 {
						for _, d := range data {
							if _, err := s.Put(ctx, d); err != nil {
								b.Fatal(err)
							}
						}
						single += time.Since(t)
					} else {
						if _, err := s.PutBatch(ctx, data); err != nil {
							b.Fatal(err)
						}
						batched += time.Since(t)
					}
				}
			}
			objs := float64(n / 2)
			b.ReportMetric(float64(single.Nanoseconds())/objs, "single-ns/object")
			b.ReportMetric(float64(batched.Nanoseconds())/objs, "batch-ns/object")
			b.ReportMetric(float64(single)/float64(batched), "speedup")
		})
	}
}

// BenchmarkPutBatchWriters stores batches of 1,000 distinct 1 KiB objects
// with DurabilityNone (what `uwf --durability none cas put --batch` does
// per chunk) in one store, written by one goroutine and by the default
// number (up to 4, no more than GOMAXPROCS) in turn, the order alternating,
// so both see the same load and the same folders for new files; it
// reports each one's time per object and writers-1 / default.
func BenchmarkPutBatchWriters(b *testing.B) {
	const n = 1000
	s := benchStore(b, disk.DurabilityNone, false)
	ctx := b.Context()
	var took [2]time.Duration
	round := 0
	for b.Loop() {
		for j := range 2 {
			k := (j + round) % 2 // which goes first alternates
			disk.SetBatchWriters(s, []int{1, 0}[k])
			data := make([][]byte, n)
			for i := range data {
				data[i] = benchData(make([]byte, benchSize), (2*round+j)*n+i)
			}
			start := time.Now()
			if _, err := s.PutBatch(ctx, data); err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(start)
		}
		round++
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(round*n) }
	b.ReportMetric(per(took[0]), "writers-1-µs/obj")
	b.ReportMetric(per(took[1]), "default-µs/obj")
	b.ReportMetric(float64(took[0])/float64(took[1]), "speedup")
}
