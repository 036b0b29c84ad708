package postgres_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/postgres"
)

// objectSize is the size of the objects the throughput benchmarks store.
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

func benchStore(b *testing.B) *postgres.Store {
	b.Helper()
	needPostgres(b)
	return newStore(b)
}

var benchSeed atomic.Uint64

func init() { benchSeed.Store(uint64(time.Now().UnixNano())) }

func BenchmarkPut(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	seed := benchSeed.Add(1)
	b.SetBytes(objectSize)
	b.ReportAllocs()
	var n uint64
	for b.Loop() {
		n++
		if _, err := s.Put(ctx, blob(seed, n)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

func BenchmarkPutParallel(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	seed := benchSeed.Add(1)
	var n atomic.Uint64
	b.SetBytes(objectSize)
	b.ReportAllocs()
	b.SetParallelism(4) // 4 × GOMAXPROCS writers
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Put(ctx, blob(seed, n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

func BenchmarkPutBatch(b *testing.B) {
	for _, size := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			s := benchStore(b)
			ctx := b.Context()
			seed := benchSeed.Add(1)
			b.SetBytes(int64(size * objectSize))
			b.ReportAllocs()
			var n uint64
			batch := make([][]byte, size)
			for b.Loop() {
				for i := range batch {
					n++
					batch[i] = blob(seed, n)
				}
				if _, err := s.PutBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// getFixture stores n objects for the Get benchmarks.
func getFixture(b *testing.B, n int) (*postgres.Store, []cas.Hash) {
	b.Helper()
	s := benchStore(b)
	seed := benchSeed.Add(1)
	data := make([][]byte, n)
	for i := range data {
		data[i] = blob(seed, uint64(i))
	}
	hs, err := s.PutBatch(b.Context(), data)
	if err != nil {
		b.Fatal(err)
	}
	return s, hs
}

func BenchmarkGet(b *testing.B) {
	s, hs := getFixture(b, 1000)
	ctx := b.Context()
	b.SetBytes(objectSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, hs[i%len(hs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

func BenchmarkGetParallel(b *testing.B) {
	s, hs := getFixture(b, 1000)
	ctx := b.Context()
	var n atomic.Uint64
	b.SetBytes(objectSize)
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, hs[n.Add(1)%uint64(len(hs))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

// listSchema types a node listing other nodes.
const listSchema = `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string","format":"cas_ref"}}},
 "required":["items"],"additionalProperties":false}`

// BenchmarkGC runs one GC over about 20,000 objects (1,000,000 with
// UWF_BENCH_BIG=1: building that store takes a minute or more) of which
// half are unreachable, and reports its time and the peak heap in use:
//
//	UWF_BENCH_BIG=1 go test ./cas/postgres -run '^$' -bench '^BenchmarkGC$' -benchtime 1x -timeout 60m
func BenchmarkGC(b *testing.B) {
	total := 20_000
	if os.Getenv("UWF_BENCH_BIG") == "1" {
		total = 1_000_000
	}
	b.Run(fmt.Sprintf("objects=%d", total), func(b *testing.B) { benchGC(b, total) })
}

func benchGC(b *testing.B, total int) {
	const perList = 1000
	s := benchStore(b)
	ctx := b.Context()
	repo, err := cas.Open(ctx, s, s.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	doc, err := cas.ParseJSON([]byte(listSchema))
	if err != nil {
		b.Fatal(err)
	}
	list, err := repo.PutSchema(ctx, "bench-list", doc)
	if err != nil {
		b.Fatal(err)
	}
	// Reachable: half the content nodes, in lists of perList under one root
	// list named by a ref. Unreachable: the other half.
	lists := (total/2 + perList - 1) / perList
	contents := total - lists - 1 - len(cas.BuiltinsAt(cas.FormatV1)) - 1
	build := time.Now()
	var reach []any
	var batch [][]byte
	var items []any
	var keys []string // derived-cache entries: every 10th content node's
	flush := func() {
		if _, err := s.PutBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	encode := func(n cas.Node) []byte {
		data, err := n.Encode()
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	for i := range contents {
		data := encode(cas.Node{Type: cas.ContentSchema, Payload: fmt.Sprintf("content node %07d of the GC benchmark", i)})
		batch = append(batch, data)
		if i%10 == 0 {
			keys = append(keys, "chain/"+cas.Sum(data).String())
		}
		if i < total/2 {
			items = append(items, cas.Sum(data).String())
			if len(items) == perList {
				flush() // children before the list
				l := encode(cas.Node{Type: list, Payload: map[string]any{"items": items}})
				batch = append(batch, l)
				reach = append(reach, cas.Sum(l).String())
				items = nil
			}
		}
		if len(batch) >= 5000 {
			flush()
		}
	}
	if len(items) > 0 {
		flush()
		l := encode(cas.Node{Type: list, Payload: map[string]any{"items": items}})
		batch = append(batch, l)
		reach = append(reach, cas.Sum(l).String())
	}
	flush()
	root, err := repo.Put(ctx, list, map[string]any{"items": reach})
	if err != nil {
		b.Fatal(err)
	}
	if err := repo.Refs().CompareAndSwap(ctx, "bench/root", 0, root, "benchmark"); err != nil {
		b.Fatal(err)
	}
	objects := 0
	for _, err := range s.All(ctx) {
		if err != nil {
			b.Fatal(err)
		}
		objects++
	}
	// Derived-cache entries the size of a step's, half of nodes that stay,
	// half of nodes GC deletes.
	entry := make([]byte, 300)
	var next atomic.Int64
	var fill sync.WaitGroup
	for range 8 {
		fill.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(keys)); i = next.Add(1) - 1 {
				if err := s.PutDerived(ctx, keys[i], entry); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	fill.Wait()
	b.Logf("built %d objects (%d lists) and %d derived-cache entries in %v", objects, len(reach), len(keys), time.Since(build).Round(time.Second))
	keys, reach, batch, items = nil, nil, nil, nil // not counted in GC's peak heap

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	runtime.GC()
	wg.Go(func() {
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	var st *cas.GCStats
	var cacheBegan, cacheEnded time.Time // GC's phase "cache"
	pctx := cas.WithProgress(ctx, func(p cas.Progress) {
		if p.Op == "gc" && p.Phase == "cache" {
			if cacheBegan.IsZero() {
				cacheBegan = time.Now()
			}
			if p.Final {
				cacheEnded = time.Now()
			}
		}
	})
	for b.Loop() {
		st, err = repo.GC(pctx, &cas.GCOptions{Grace: time.Nanosecond})
		if err != nil {
			b.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	b.Logf("GC: %+v", *st)
	b.ReportMetric(float64(st.Scanned), "objects")
	b.ReportMetric(float64(st.Deleted), "deleted")
	b.ReportMetric(st.Duration.Seconds(), "s/gc")
	b.ReportMetric(float64(st.DerivedDropped), "cache-dropped")
	b.ReportMetric(cacheEnded.Sub(cacheBegan).Seconds()/st.Duration.Seconds(), "cache-share")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// BenchmarkDeleteIfOlder deletes stored objects one by one, as a GC sweep
// does.
func BenchmarkDeleteIfOlder(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	seed := benchSeed.Add(1)
	var hs []cas.Hash
	batch := make([][]byte, 0, 1000)
	cutoff := time.Now().Add(time.Hour)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(hs) {
			b.StopTimer()
			batch = batch[:0]
			for j := range 1000 {
				batch = append(batch, blob(seed, uint64(len(hs)+j)))
			}
			more, err := s.PutBatch(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			hs = append(hs, more...)
			b.StartTimer()
		}
		ok, err := s.DeleteIfOlder(ctx, hs[i], cutoff)
		if err != nil || !ok {
			b.Fatalf("DeleteIfOlder = %v, %v", ok, err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkWatchStep measures what the watch step (the commit-order lock
// and the notification) adds to a ref move: each iteration runs the move
// statement with it on one ref and without it on another, alternately, so
// both see the same load; with-us and without-us are their medians.
func BenchmarkWatchStep(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	with, without := postgres.MoveSQL(s)
	for _, name := range []string{"with", "without"} {
		if err := s.Refs().CompareAndSwap(ctx, name, 0, 1, "create"); err != nil {
			b.Fatal(err)
		}
	}
	var tw, to []time.Duration
	cur := int64(1)
	run := func(stmt, name string, times *[]time.Duration) {
		t0 := time.Now()
		var id int64
		if err := postgres.Pool(s).QueryRow(ctx, stmt, name, cur, cur+1, "step").Scan(&id); err != nil {
			b.Fatal(err)
		}
		*times = append(*times, time.Since(t0))
	}
	for b.Loop() {
		run(with, "with", &tw)
		run(without, "without", &to)
		cur++
	}
	slices.Sort(tw)
	slices.Sort(to)
	b.ReportMetric(float64(tw[len(tw)/2])/1e3, "with-us")
	b.ReportMetric(float64(to[len(to)/2])/1e3, "without-us")
}

// BenchmarkWatchStepParallel is BenchmarkWatchStep with 8 writers, each
// moving its own ref: the commit-order lock serialises their commits, so
// this is where the step costs. Sub-benchmarks "with" and "without"
// alternate over -count.
func BenchmarkWatchStepParallel(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	with, without := postgres.MoveSQL(s)
	var next atomic.Int64
	for _, v := range []struct{ name, stmt string }{{"with", with}, {"without", without}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetParallelism(4) // 8 writers on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				name := fmt.Sprintf("p%d", next.Add(1))
				if err := s.Refs().CompareAndSwap(ctx, name, 0, 1, "create"); err != nil {
					b.Error(err)
					return
				}
				cur := int64(1)
				for pb.Next() {
					var id int64
					if err := postgres.Pool(s).QueryRow(ctx, v.stmt, name, cur, cur+1, "step").Scan(&id); err != nil {
						b.Error(err)
						return
					}
					cur++
				}
			})
		})
	}
}

// BenchmarkStepWrites measures a step's writes as the repo makes them on
// PostgreSQL, 8 writers at once (each on its own ref): a node put with one
// edge (PutLinked) and the ref move onto it (SwapTouching), each one round
// trip and one commit (the move's holding the watch lock shared).
//
//	go test ./cas/postgres -run '^$' -bench '^BenchmarkStepWrites$' -benchtime 2000x
func BenchmarkStepWrites(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	edge, err := s.Put(ctx, []byte("the edge every step names"))
	if err != nil {
		b.Fatal(err)
	}
	seed := benchSeed.Add(1)
	var writer atomic.Uint64
	b.SetParallelism(4) // 8 writers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		w := writer.Add(1)
		name := fmt.Sprintf("threads/w%d", w)
		var head cas.Hash
		for n := uint64(0); pb.Next(); n++ {
			hs, err := s.PutLinked(ctx, [][]byte{blob(seed, w<<32|n)}, []cas.Hash{edge})
			if err != nil {
				b.Error(err)
				return
			}
			if head.IsZero() {
				err = s.Refs().CompareAndSwap(ctx, name, 0, hs[0], "start")
			} else {
				_, err = s.Refs().SwapTouching(ctx, s, name, head, hs[0], "step")
			}
			if err != nil {
				b.Error(err)
				return
			}
			head = hs[0]
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
