package disk_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/memstat"
)

// The typed layer ([cas.Repo]) over the disk store: encoding, schema
// validation and the edge check on top of the backend's Put.

// benchText pads payloads to about 1 KiB.
var benchText = strings.Repeat("0123456789abcdef", 60)

// plainSchema is a plain object schema, as bench/cas-vs-git.sh registers.
var plainSchema = map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}

// refsSchema is an object schema whose "refs" are edges.
var refsSchema = map[string]any{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type":    "object",
	"properties": map[string]any{
		"refs": map[string]any{"type": "array", "items": map[string]any{"type": "string", "format": "cas_ref"}},
	},
}

// benchRepo opens the typed layer over a new disk store with durability d
// (or over a memory store if mem).
func benchRepo(b *testing.B, d disk.Durability, mem bool) (*cas.Repo, cas.Store) {
	b.Helper()
	var (
		st   cas.Store
		refs cas.Refs
	)
	if mem {
		m := cas.NewMemStore(nil)
		st, refs = m, m.Refs()
	} else {
		s := benchStore(b, d, false)
		makeShards(b, s)
		st, refs = s, s.Refs()
	}
	repo, err := cas.Open(b.Context(), st, refs, nil)
	if err != nil {
		b.Fatal(err)
	}
	return repo, st
}

// BenchmarkRepoPut puts distinct nodes of about 1 KiB one by one with the
// typed layer over the disk store (DurabilityNone), side by side with the
// backend's Put of the same bytes and with the typed layer over a memory
// store (the CPU part alone):
//
//	plain/store  disk Store.Put of the encoded node (no typed layer)
//	plain/typed  Repo.Put: encode, validate (plain object schema), touch the type, put
//	plain/mem    Repo.Put over a memory store
//	refs8/typed  Repo.Put of a node with 8 edges: each is touched (checked present)
//	refs8/mem    the same over a memory store
func BenchmarkRepoPut(b *testing.B) {
	for _, tc := range []struct {
		name  string
		edges int
		mode  string // "store", "typed" or "mem"
	}{
		{"plain/store", 0, "store"}, {"plain/typed", 0, "typed"}, {"plain/mem", 0, "mem"},
		{"refs8/typed", 8, "typed"}, {"refs8/mem", 8, "mem"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := b.Context()
			repo, st := benchRepo(b, disk.DurabilityNone, tc.mode == "mem")
			schema := plainSchema
			if tc.edges > 0 {
				schema = refsSchema
			}
			typ, err := repo.PutSchema(ctx, "bench", schema)
			if err != nil {
				b.Fatal(err)
			}
			var refs []any
			for k := range tc.edges {
				h, err := repo.Put(ctx, cas.ContentSchema, fmt.Sprintf("leaf %d", k))
				if err != nil {
					b.Fatal(err)
				}
				refs = append(refs, h.String())
			}
			payload := func(i int) map[string]any {
				p := map[string]any{"id": float64(i), "text": benchText}
				if refs != nil {
					p["refs"] = refs
				}
				return p
			}
			size, err := cas.Node{Type: typ, Payload: payload(0)}.Encode()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(size)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if tc.mode == "store" {
					data, err := cas.Node{Type: typ, Payload: payload(i)}.Encode()
					if err != nil {
						b.Fatal(err)
					}
					if _, err := st.Put(ctx, data); err != nil {
						b.Fatal(err)
					}
				} else if _, err := repo.Put(ctx, typ, payload(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkRepoPutEach puts 1000 distinct nodes of about 1 KiB per
// operation with Repo.PutEach (what uwf cas put --batch does per chunk) over
// the disk store with DurabilityNone, and over a memory store (the CPU
// part alone).
func BenchmarkRepoPutEach(b *testing.B) {
	for _, mem := range []bool{false, true} {
		name := "disk"
		if mem {
			name = "mem"
		}
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			repo, _ := benchRepo(b, disk.DurabilityNone, mem)
			typ, err := repo.PutSchema(ctx, "bench", plainSchema)
			if err != nil {
				b.Fatal(err)
			}
			const batch = 1000
			nodes := make([]cas.Node, batch)
			b.SetBytes(batch * 1024)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for k := range nodes {
					nodes[k] = cas.Node{Type: typ, Payload: map[string]any{"id": float64(n), "text": benchText}}
					n++
				}
				if _, err := repo.PutNodes(ctx, nodes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/node")
		})
	}
}

// bigBench skips b unless UWF_BENCH_BIG=1: its setup writes hundreds of
// thousands of files.
func bigBench(b *testing.B) {
	b.Helper()
	if os.Getenv("UWF_BENCH_BIG") != "1" {
		b.Skip("set UWF_BENCH_BIG=1 to run (its setup writes 200,000 files)")
	}
}

// gcClock is a store clock that tests move by hand.
type gcClock struct{ t atomic.Int64 }

func (c *gcClock) Now() time.Time      { return time.Unix(0, c.t.Load()) }
func (c *gcClock) Set(t time.Time)     { c.t.Store(t.UnixNano()) }
func (c *gcClock) Add(d time.Duration) { c.t.Add(int64(d)) }

// BenchmarkGC200k collects a disk store (DurabilityNone) of 200,000 nodes
// of which half are unreachable: 100 index nodes named by refs, each with
// 999 content nodes as edges, and 100 more index nodes with their 999
// contents that nothing names. All are older than the grace period (the
// default, one hour). One operation is one Repo.GC, which must delete
// exactly the 100,000 unreachable nodes; run it with -benchtime=1x (each
// further iteration puts the garbage back first, untimed). Reported: the
// peak Go heap (live and garbage objects, sampled every millisecond with
// runtime/metrics) and the peak resident set (VmHWM, reset before the
// GC), both in MB. Gated behind UWF_BENCH_BIG=1.
func BenchmarkGC200k(b *testing.B) {
	bigBench(b)
	const (
		indexes = 100 // of each kind
		fanout  = 999 // contents per index
	)
	ctx := b.Context()
	clock := &gcClock{}
	clock.Set(time.Now().Add(-2 * time.Hour))
	opts := &disk.Options{Durability: disk.DurabilityNone, Now: clock.Now}
	s, err := disk.Create(filepath.Join(b.TempDir(), "store"), opts)
	if err != nil {
		b.Fatal(err)
	}
	repo, err := cas.Open(ctx, s, s.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	typ, err := repo.PutSchema(ctx, "index", map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "string", "format": "cas_ref"}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	// putIndex stores one index node and its contents (children first, in
	// one batch) and returns the index's hash.
	putIndex := func(kind string, k int) cas.Hash {
		nodes := make([]cas.Node, 0, fanout+1)
		items := make([]any, 0, fanout)
		for j := range fanout {
			text := fmt.Sprintf("%s content %d/%d: %s", kind, k, j, benchText[:64])
			n := cas.Node{Type: cas.ContentSchema, Payload: text}
			data, err := n.Encode()
			if err != nil {
				b.Fatal(err)
			}
			nodes = append(nodes, n)
			items = append(items, cas.Sum(data).String())
		}
		nodes = append(nodes, cas.Node{Type: typ, Payload: map[string]any{"kind": kind, "n": float64(k), "items": items}})
		hs, err := repo.PutNodes(ctx, nodes)
		if err != nil {
			b.Fatal(err)
		}
		return hs[len(hs)-1]
	}
	putGarbage := func() {
		for k := range indexes {
			putIndex("garbage", k)
		}
	}
	for k := range indexes {
		h := putIndex("live", k)
		if err := repo.Refs().CompareAndSwap(ctx, "bench/live-"+strconv.Itoa(k), 0, h, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	putGarbage()
	clock.Add(2 * time.Hour) // now everything is older than the grace period
	const want = indexes * (fanout + 1)

	b.ReportAllocs()
	var peakHeap, peakRSS, baseHeap uint64
	first := true
	for b.Loop() {
		if !first {
			b.StopTimer()
			clock.Add(-2 * time.Hour)
			putGarbage()
			clock.Add(2 * time.Hour)
			b.StartTimer()
		}
		first = false
		runtime.GC()
		baseHeap = memstat.HeapObjects()
		memstat.ResetPeakRSS()
		stop := memstat.SamplePeak(&peakHeap)
		st, err := repo.GC(ctx, nil)
		stop()
		peakRSS = max(peakRSS, memstat.PeakRSS())
		if err != nil {
			b.Fatal(err)
		}
		if st.Deleted != want || len(st.Failures) > 0 {
			b.Fatalf("GC deleted %d nodes (%d failures), want %d", st.Deleted, len(st.Failures), want)
		}
		if st.Scanned < 2*want {
			b.Fatalf("GC scanned %d nodes, want at least %d", st.Scanned, 2*want)
		}
	}
	const mb = 1 << 20
	b.ReportMetric(float64(peakHeap)/mb, "peak-heap-MB")
	b.ReportMetric(float64(baseHeap)/mb, "heap-before-MB")
	b.ReportMetric(float64(peakRSS)/mb, "peak-RSS-MB")
}

// BenchmarkGCCache collects a disk store (DurabilityNone) of 20,000
// content nodes, half of them named by a ref's index node and half
// garbage, with no derived-cache entry or one per node (half of them of
// garbage: the GC drops those), so the two sub-benchmarks, run side by
// side, give what the derived cache's phase adds to a GC. One operation is
// one Repo.GC; each further iteration puts the garbage and its entries back
// first, untimed. Reported: the share of GC's time in its phase "cache".
func BenchmarkGCCache(b *testing.B) {
	for _, entries := range []bool{false, true} {
		b.Run(fmt.Sprintf("entries=%v", entries), func(b *testing.B) { benchGCCache(b, entries) })
	}
}

func benchGCCache(b *testing.B, entries bool) {
	const half = 10_000
	ctx := b.Context()
	clock := &gcClock{}
	clock.Set(time.Now().Add(-2 * time.Hour))
	s, err := disk.Create(filepath.Join(b.TempDir(), "store"), &disk.Options{Durability: disk.DurabilityNone, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	repo, err := cas.Open(ctx, s, s.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	typ, err := repo.PutSchema(ctx, "index", map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"properties": map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"type": "string", "format": "cas_ref"}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	entry := []byte(benchText[:300])
	put := func(kind string) []any {
		nodes := make([]cas.Node, half)
		for i := range nodes {
			nodes[i] = cas.Node{Type: cas.ContentSchema, Payload: fmt.Sprintf("%s content %d", kind, i)}
		}
		hs, err := repo.PutNodes(ctx, nodes)
		if err != nil {
			b.Fatal(err)
		}
		items := make([]any, len(hs))
		for i, h := range hs {
			items[i] = h.String()
			if entries {
				if err := s.PutDerived(ctx, "chain/"+h.String(), entry); err != nil {
					b.Fatal(err)
				}
			}
		}
		return items
	}
	idx, err := repo.Put(ctx, typ, map[string]any{"items": put("live")})
	if err != nil {
		b.Fatal(err)
	}
	if err := repo.Refs().CompareAndSwap(ctx, "bench/live", 0, idx, "bench"); err != nil {
		b.Fatal(err)
	}
	put("garbage")
	clock.Add(2 * time.Hour)
	var began, ended time.Time
	pctx := cas.WithProgress(ctx, func(p cas.Progress) {
		if p.Phase == "cache" && began.IsZero() {
			began = time.Now()
		}
		if p.Phase == "cache" && p.Final {
			ended = time.Now()
		}
	})
	var share float64
	first := true
	for b.Loop() {
		if !first {
			b.StopTimer()
			clock.Add(-2 * time.Hour)
			put("garbage")
			clock.Add(2 * time.Hour)
			b.StartTimer()
		}
		first = false
		began = time.Time{}
		st, err := repo.GC(pctx, nil)
		if err != nil || st.Deleted != half || len(st.Failures) > 0 {
			b.Fatalf("GC: %+v, %v; want %d deleted", st, err, half)
		}
		// Entries kept in their nodes' attributes go with the nodes and
		// are not counted; kept as files, each garbage node's is dropped.
		if want := map[bool]int{false: 0, true: half}[entries]; st.DerivedDropped != want && st.DerivedDropped != 0 {
			b.Fatalf("GC dropped %d cache entries, want %d (or none, kept in attributes)", st.DerivedDropped, want)
		}
		share += ended.Sub(began).Seconds() / st.Duration.Seconds()
	}
	b.ReportMetric(share/float64(b.N), "cache-share")
}
