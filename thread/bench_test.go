package thread_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/memstat"
	"github.com/uncaged/uwf/thread"
)

// Benchmarks of the thread engine over the disk store. Big fixtures (a
// 100,000-step thread, 10,000 threads) are built once per test binary,
// straight into the store (no validation, like fastChain), and only when
// UWF_BENCH_BIG=1; see bench/README.md.

func bigBench(b *testing.B) {
	b.Helper()
	if os.Getenv("UWF_BENCH_BIG") != "1" {
		b.Skip("set UWF_BENCH_BIG=1 to run (its setup writes 10,000s of files)")
	}
}

// fixture is a disk store holding one workflow, output and detail node for
// steps to name.
type fixture struct {
	dir          string
	wf, out, det cas.Hash
	chain        []cas.Hash // a chain built by buildChain: index d is the node at depth d
	threads      []string   // thread IDs built by buildThreads, oldest first
}

// open opens the fixture's store with durability d; the repo reads
// through a counting wrapper.
func (f *fixture) open(b *testing.B, d disk.Durability) (*disk.Store, *countingStore, *cas.Repo) {
	b.Helper()
	st, err := disk.Open(f.dir, &disk.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	cnt := &countingStore{Store: st}
	repo, err := cas.Open(context.Background(), cnt, st.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return st, cnt, repo
}

// newFixture creates a store (DurabilityNone) under dir.
func newFixture(b *testing.B, dir string) *fixture {
	b.Helper()
	ctx := context.Background()
	st, err := disk.Create(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	f := &fixture{dir: dir}
	put := func(typ cas.Hash, payload any) cas.Hash {
		h, err := repo.Put(ctx, typ, payload)
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	f.wf = put(cas.WorkflowSchema, map[string]any{"name": "bench", "roles": map[string]any{}, "graph": map[string]any{}})
	f.out = put(cas.ContentSchema, "output")
	d := &thread.Detail{Prompt: put(cas.ContentSchema, "prompt"), Raw: put(cas.ContentSchema, "---\nstatus: done\n---\nthe body"), EdgePrompt: "do it", DurationMs: 5}
	f.det = put(cas.DetailSchema, d.Payload())
	return f
}

// step encodes the step at depth d of the chain hs (hs[0] the start node,
// hs[1..d-1] filled), with its skip pointers.
func (f *fixture) step(hs []cas.Hash, d int) []byte {
	c := thread.Chain{Start: hs[0], Depth: d}
	if d > 1 {
		c.Prev = hs[d-1]
	}
	for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
		c.Skip = append(c.Skip, hs[d-(1<<k)])
	}
	s := &thread.Step{Chain: c, Role: "r" + strconv.Itoa(d%3), Output: f.out, Detail: f.det, Agent: "bench", StartedAt: int64(d), CompletedAt: int64(d) + 1}
	data, err := cas.Node{Type: cas.StepSchema, Payload: s.Payload()}.Encode()
	if err != nil {
		panic(err)
	}
	return data
}

// putAll stores encoded nodes in batches of 4096.
func putAll(b *testing.B, st *disk.Store, data [][]byte) {
	b.Helper()
	for len(data) > 0 {
		n := min(len(data), 4096)
		if _, err := st.PutBatch(context.Background(), data[:n]); err != nil {
			b.Fatal(err)
		}
		data = data[n:]
	}
}

// buildChain stores a thread of n steps and names its head with a thread
// ref.
func (f *fixture) buildChain(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	st, err := disk.Open(f.dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	start := &thread.Start{Workflow: f.wf, Prompt: "a long thread", Cwd: "/tmp"}
	sdata, err := cas.Node{Type: cas.StartSchema, Payload: start.Payload()}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	hs := make([]cas.Hash, n+1)
	hs[0] = cas.Sum(sdata)
	data := [][]byte{sdata}
	for d := 1; d <= n; d++ {
		data = append(data, f.step(hs, d))
		hs[d] = cas.Sum(data[len(data)-1])
		if len(data) == 4096 {
			putAll(b, st, data)
			data = data[:0]
		}
	}
	putAll(b, st, data)
	id := ulid.MustNew(1, nil).String()
	if err := st.Refs().CompareAndSwap(ctx, thread.ThreadPrefix+id, 0, hs[n], "bench chain"); err != nil {
		b.Fatal(err)
	}
	f.chain = hs
}

// buildThreads stores n threads, each a start node and one step, created
// in ULID order.
func (f *fixture) buildThreads(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	st, err := disk.Open(f.dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	heads := make([]cas.Hash, n)
	var data [][]byte
	for i := range n {
		start := &thread.Start{Workflow: f.wf, Prompt: fmt.Sprintf("task %d", i), Cwd: "/tmp"}
		sdata, err := cas.Node{Type: cas.StartSchema, Payload: start.Payload()}.Encode()
		if err != nil {
			b.Fatal(err)
		}
		hs := []cas.Hash{cas.Sum(sdata)}
		step := f.step(hs, 1)
		heads[i] = cas.Sum(step)
		data = append(data, sdata, step)
	}
	putAll(b, st, data)
	base := uint64(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	for i := range n {
		id := ulid.MustNew(base+uint64(i), nil).String()
		if err := st.Refs().CompareAndSwap(ctx, thread.ThreadPrefix+id, 0, heads[i], "bench thread"); err != nil {
			b.Fatal(err)
		}
		f.threads = append(f.threads, id)
	}
}

// Shared fixtures, built on first use in benchRoot (a temporary folder
// TestMain removes).
var (
	fixtureMu sync.Mutex
	fixtures  = map[string]*fixture{}
	benchRoot string
)

// sharedFixture returns the fixture named name, building it with build on
// first use. With UWF_BENCH_KEEP=<dir> fixtures are kept in dir (and not
// removed at exit) so other tools, such as the uwf CLI, can use them.
func sharedFixture(b *testing.B, name string, build func(*fixture)) *fixture {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if f, ok := fixtures[name]; ok {
		return f
	}
	root := os.Getenv("UWF_BENCH_KEEP")
	if root == "" {
		if benchRoot == "" {
			d, err := os.MkdirTemp("", "uwf-thread-bench-")
			if err != nil {
				b.Fatal(err)
			}
			benchRoot = d
		}
		root = benchRoot
	}
	dir := filepath.Join(root, name)
	os.RemoveAll(dir)
	t := time.Now()
	f := newFixture(b, dir)
	build(f)
	b.Logf("built fixture %s in %s", dir, time.Since(t).Round(time.Millisecond))
	fixtures[name] = f
	return f
}

func chainFixture(b *testing.B, n int) *fixture {
	return sharedFixture(b, fmt.Sprintf("chain-%d", n), func(f *fixture) { f.buildChain(b, n) })
}

func threadsFixture(b *testing.B, n int) *fixture {
	return sharedFixture(b, fmt.Sprintf("threads-%d", n), func(f *fixture) { f.buildThreads(b, n) })
}

// maxAncestorReads is the target for Ancestor(head, 1) on a 100,000-step
// thread: SPEC §5 says distance/1024 + 10 reads.
const maxAncestorReads = 120

// BenchmarkAncestor100k finds the node at depth 1 from the head of a
// 100,000-step thread on the disk store (DurabilityNone) with no engine
// cache, so every node is read from the store. It fails if a call reads
// more than maxAncestorReads nodes, and reports reads/op.
func BenchmarkAncestor100k(b *testing.B) {
	bigBench(b)
	const n = 100_000
	f := chainFixture(b, n)
	_, cnt, repo := f.open(b, disk.DurabilityNone)
	e := thread.New(repo, &thread.Options{CacheSize: -1})
	ctx := b.Context()
	head := f.chain[n]
	b.ReportAllocs()
	var reads int64
	for b.Loop() {
		before := cnt.gets.Load()
		a, err := e.Ancestor(ctx, head, 1)
		if err != nil {
			b.Fatal(err)
		}
		r := cnt.gets.Load() - before
		if r > maxAncestorReads {
			b.Fatalf("Ancestor(head, 1) read %d nodes, want at most %d", r, maxAncestorReads)
		}
		if a.Hash != f.chain[1] {
			b.Fatalf("Ancestor(head, 1) = %s, want %s", a.Hash, f.chain[1])
		}
		reads = r
	}
	b.ReportMetric(float64(reads), "reads/op")
}

// BenchmarkSteps iterates a thread oldest first (what uwf thread steps
// does) on the disk store, with a new engine per operation (a cold cache,
// as in one CLI run). Before timing, one untimed pass measures memory: the
// peak growth of the live heap over the pass (runtime.GC and a reading
// every 256 nodes), and the peak of all heap objects (live or not yet
// collected; sampled every millisecond). OldestFirst keeps about n/1024
// checkpoints plus one segment of at most 1024 nodes, so both should be
// about the same for 1,000 and 100,000 steps. The 100,000-step thread is
// gated behind UWF_BENCH_BIG=1.
func BenchmarkSteps(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run("steps="+strconv.Itoa(n), func(b *testing.B) {
			if n > 1000 {
				bigBench(b)
			}
			f := chainFixture(b, n)
			_, _, repo := f.open(b, disk.DurabilityNone)
			ctx := b.Context()
			head := f.chain[n]
			iterate := func(every func(i int)) {
				e := thread.New(repo, nil)
				i := 0
				for _, err := range e.OldestFirst(ctx, head) {
					if err != nil {
						b.Fatal(err)
					}
					if every != nil {
						every(i)
					}
					i++
				}
				if i != n+1 {
					b.Fatalf("OldestFirst yielded %d nodes, want %d", i, n+1)
				}
			}

			// Memory, untimed.
			runtime.GC()
			base := memstat.HeapObjects()
			var peakLive uint64
			iterate(func(i int) {
				if i%256 == 0 {
					runtime.GC()
					peakLive = max(peakLive, memstat.HeapObjects())
				}
			})
			runtime.GC()
			base2 := memstat.HeapObjects()
			var peakAll uint64
			stop := memstat.SamplePeak(&peakAll)
			iterate(nil)
			stop()

			b.ReportAllocs()
			for b.Loop() {
				iterate(nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
			b.ReportMetric(float64(peakLive-min(base, peakLive))/1024, "live-growth-KB")
			b.ReportMetric(float64(peakAll-min(base2, peakAll))/1024, "heap-growth-KB")
		})
	}
}

// BenchmarkCommit commits a step on one thread of a store holding 10
// threads and, side by side, on one thread of a store holding 10,000
// threads (both on disk). Every operation stores one step on each thread
// (untimed: Engine.Next and Repo.Put) and times each Engine.Commit; the
// order alternates. It reports each store's commit latency and
// ratio = latency(10,000) / latency(10); the target is ratio <= 1.2. The
// 10,000-thread store is gated behind UWF_BENCH_BIG=1.
func BenchmarkCommit(b *testing.B) {
	for _, d := range []disk.Durability{disk.DurabilityNone, disk.DurabilityStrict} {
		b.Run(d.String(), func(b *testing.B) {
			bigBench(b)
			type side struct {
				f    *fixture
				repo *cas.Repo
				e    *thread.Engine
				id   string
				head cas.Hash
				took time.Duration
			}
			var sides []*side
			for _, n := range []int{10, 10_000} {
				f := threadsFixture(b, n)
				_, _, repo := f.open(b, d)
				id := f.threads[n/2]
				e := thread.New(repo, nil)
				head, err := e.Head(b.Context(), id)
				if err != nil {
					b.Fatal(err)
				}
				sides = append(sides, &side{f: f, repo: repo, e: e, id: id, head: head})
			}
			ctx := b.Context()
			commit := func(s *side) {
				c, err := s.e.Next(ctx, s.head)
				if err != nil {
					b.Fatal(err)
				}
				st := &thread.Step{Chain: c, Role: "r", Output: s.f.out, Detail: s.f.det, Agent: "bench", StartedAt: 1, CompletedAt: 2}
				h, err := s.repo.Put(ctx, cas.StepSchema, st.Payload())
				if err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if err := s.e.Commit(ctx, s.id, h, "step r"); err != nil {
					b.Fatal(err)
				}
				s.took += time.Since(t)
				s.head = h
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				commit(sides[i%2])
				commit(sides[1-i%2])
			}
			small := float64(sides[0].took.Nanoseconds()) / float64(b.N)
			big := float64(sides[1].took.Nanoseconds()) / float64(b.N)
			b.ReportMetric(small, "commit10-ns")
			b.ReportMetric(big, "commit10k-ns")
			b.ReportMetric(big/small, "ratio")
		})
	}
}

// BenchmarkList lists the newest 50 threads (Engine.List with Limit 50,
// what uwf thread list --limit 50 does) of a disk store holding 10 or
// 10,000 threads, with a new engine per operation (a cold cache, as in one
// CLI run). The 10,000-thread store is gated behind UWF_BENCH_BIG=1.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run("threads="+strconv.Itoa(n), func(b *testing.B) {
			if n > 10 {
				bigBench(b)
			}
			f := threadsFixture(b, n)
			_, _, repo := f.open(b, disk.DurabilityNone)
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				infos, err := thread.New(repo, nil).List(ctx, thread.ListOptions{Limit: 50})
				if err != nil {
					b.Fatal(err)
				}
				if want := min(n, 50); len(infos) != want || infos[0].ID != f.threads[n-1] {
					b.Fatalf("List returned %d threads, want %d, newest first", len(infos), want)
				}
			}
		})
	}
}
