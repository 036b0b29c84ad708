package thread_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// deepFixture is a disk store (durability none) holding one thread of the
// ping workflow (with maxSteps 50) at each depth of ns, as an older build
// would have left them (see deepThreadIn), and every shard folder made. It
// returns the threads' ids.
func deepFixture(b *testing.B, dir string, ns []int) []string {
	b.Helper()
	st, err := disk.Create(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	// Every shard folder up front, as a store in use has them: a young
	// store's puts would otherwise make folders the old one's do not.
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	for _, x := range crockford {
		for _, y := range crockford {
			if err := os.MkdirAll(filepath.Join(dir, "objects", string(x)+string(y)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 256 {
		if err := os.MkdirAll(filepath.Join(dir, "cache", fmt.Sprintf("%02x", i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var ids []string
	for _, n := range ns {
		ids = append(ids, deepThreadIn(b, st, st.Refs(), n))
	}
	return ids
}

// deepThreadIn stores one thread of the ping workflow (with maxSteps 50)
// at depth n in st, as an older build would have left it: its nodes stored
// straight (no validation), its ref log n+1 entries long (imported in one
// go), no derived-cache entry.
func deepThreadIn(b *testing.B, st cas.Store, refs cas.Refs, n int) string {
	b.Helper()
	ctx := context.Background()
	repo, err := cas.Open(ctx, st, refs, nil)
	if err != nil {
		b.Fatal(err)
	}
	wf, err := registry.Parse("ping.yaml", []byte(strings.Replace(pingWorkflow, "maxSteps: 4", "maxSteps: 50", 1)))
	if err != nil {
		b.Fatal(err)
	}
	res, err := registry.New(repo).Put(ctx, wf)
	if err != nil {
		b.Fatal(err)
	}
	put := func(typ cas.Hash, payload any) cas.Hash {
		h, err := repo.Put(ctx, typ, payload)
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	stored, err := registry.New(repo).LoadStored(ctx, res.Hash)
	if err != nil {
		b.Fatal(err)
	}
	out := put(stored.Schemas["worker"], map[string]any{"status": "s1"})
	raw := put(cas.ContentSchema, "---\nstatus: s1\n---\n")
	det := put(cas.DetailSchema, (&thread.Detail{Prompt: put(cas.ContentSchema, "prompt"), Raw: raw, EdgePrompt: "Again.", DurationMs: 5}).Payload())
	start := put(cas.StartSchema, (&thread.Start{Workflow: res.Hash, Prompt: fmt.Sprintf("deep %d", n), Cwd: "/tmp"}).Payload())
	hs := make([]cas.Hash, n+1)
	hs[0] = start
	log := []cas.LogEntry{{New: start, Time: 1, Message: "start"}}
	var data [][]byte
	for d := 1; d <= n; d++ {
		c := thread.Chain{Start: start, Depth: d}
		if d > 1 {
			c.Prev = hs[d-1]
		}
		for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
			c.Skip = append(c.Skip, hs[d-(1<<k)])
		}
		s := &thread.Step{Chain: c, Role: "worker", Output: out, Detail: det, Agent: "synth", StartedAt: int64(d), CompletedAt: int64(d) + 1}
		enc, err := cas.Node{Type: cas.StepSchema, Payload: s.Payload()}.Encode()
		if err != nil {
			b.Fatal(err)
		}
		hs[d] = cas.Sum(enc)
		data = append(data, enc)
		log = append(log, cas.LogEntry{Old: hs[d-1], New: hs[d], Time: int64(d) + 1, Message: "step worker"})
		if len(data) == 4096 || d == n {
			if _, err := cas.PutBatch(ctx, st, data); err != nil {
				b.Fatal(err)
			}
			data = data[:0]
		}
	}
	id := ulid.MustNew(uint64(n), nil).String() // one id per depth: a store may hold several
	if err := refs.ImportLog(ctx, thread.ThreadPrefix+id, log); err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkStepDepth times, side by side in one run, `thread show` and one
// `thread step` (the instant synth agent) on a thread 100 deep and one
// 100,000 deep (each with a ref log as long), in one store: on disk the
// two sides' new files then come from the same folders (most of a step's
// time is the filesystem allocating them; with a store each, the ratio
// moved with where ext4 put each store's tmp/, 0.45–1.84, not with depth:
// bench/README.md, section I), on the disk store
// (durability none: the flushes, the same at any depth, would hide the
// rest) and on the memory store (no filesystem: what the engine itself
// reads and computes), each operation on a new engine over the open store (cold
// in-process caches, as one CLI run). The operations alternate between the
// depths, each depth first every other time. It reports the median wall
// time per operation and the ratios of the medians, deep/shallow, for wall
// time and for the process's CPU time (steadier on a shared machine); the
// target is at most 1.1. Before timing, one untimed show and resume per
// thread fill the derived cache (lazily: the store is as an older build
// left it); a step that meets the step limit (maxSteps 50) is followed by
// an untimed resume, one that ends the thread (synth routes to $END at
// every 20th run) by an untimed move of the thread's ref 20 nodes back.
// The 100,000-deep thread is gated behind UWF_BENCH_BIG=1
// (UWF_BENCH_DEPTH sets another depth).
func BenchmarkStepDepth(b *testing.B) {
	deep := 100_000
	if s := os.Getenv("UWF_BENCH_DEPTH"); s != "" {
		var err error
		if deep, err = strconv.Atoi(s); err != nil || deep < 200 {
			b.Fatalf("UWF_BENCH_DEPTH=%q: want a number of at least 200", s)
		}
	} else {
		bigBench(b)
	}
	for _, backend := range []string{"disk", "memory"} {
		b.Run(backend, func(b *testing.B) { benchStepDepth(b, backend, []int{100, deep}) })
	}
}

func benchStepDepth(b *testing.B, backend string, depths []int) {
	ctx := b.Context()
	root := b.TempDir()
	type side struct {
		repo             *cas.Repo
		id               string
		show, step       []time.Duration // per operation, wall time
		showCPU, stepCPU []time.Duration // per operation, the process's CPU time
	}
	var sides []*side
	var ds *disk.Store
	var ids []string
	if backend == "disk" {
		t0 := time.Now()
		dir := filepath.Join(root, "store")
		ids = deepFixture(b, dir, depths)
		var err error
		if ds, err = disk.Open(dir, &disk.Options{Durability: disk.DurabilityNone}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ds.Close() })
		b.Logf("disk, depths %v: built in %s", depths, time.Since(t0).Round(time.Millisecond))
	}
	for i, n := range depths {
		t0 := time.Now()
		var st cas.Store
		var refs cas.Refs
		var id string
		if backend == "disk" {
			st, refs, id = ds, ds.Refs(), ids[i]
		} else {
			ms := cas.NewMemStore(nil)
			st, refs = ms, ms.Refs()
			id = deepThreadIn(b, st, refs, n)
		}
		repo, err := cas.Open(ctx, st, refs, nil)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		e := thread.New(repo, nil)
		if _, err := e.Show(ctx, id); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Resume(ctx, id, "go on"); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s, depth %d: built in %s, cache filled in %s", backend, n, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		sides = append(sides, &side{repo: repo, id: id})
	}
	opts := &thread.RunOptions{Agent: "synth"}
	i := 0
	for b.Loop() {
		// Alternate which depth goes first.
		order := []*side{sides[i%2], sides[1-i%2]}
		i++
		for _, s := range order {
			t0, c0 := time.Now(), cpuTime()
			if _, err := thread.New(s.repo, nil).Show(ctx, s.id); err != nil {
				b.Fatal(err)
			}
			s.show = append(s.show, time.Since(t0))
			s.showCPU = append(s.showCPU, cpuTime()-c0)
		}
		for _, s := range order {
			t0, c0 := time.Now(), cpuTime()
			r, err := thread.New(s.repo, nil).Step(ctx, s.id, opts)
			s.step = append(s.step, time.Since(t0))
			s.stepCPU = append(s.stepCPU, cpuTime()-c0)
			if err != nil {
				b.Fatal(err)
			}
			switch r.Kind {
			case thread.EventLimit:
				if _, err := thread.New(s.repo, nil).Resume(ctx, s.id, "go on"); err != nil {
					b.Fatal(err)
				}
			case thread.EventDone:
				// Move the thread back 20 nodes (as uwf cas ref set
				// would), so synth's run count is 20 lower.
				back, err := thread.New(s.repo, nil).Ancestor(ctx, r.Head, r.Depth-20)
				if err == nil {
					err = s.repo.Refs().CompareAndSwap(ctx, thread.ThreadPrefix+s.id, r.Head, back.Hash, "back 20")
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	median := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e6
	}
	for i, s := range sides {
		b.ReportMetric(median(s.show), fmt.Sprintf("show-%d-ms", depths[i]))
		b.ReportMetric(median(s.step), fmt.Sprintf("step-%d-ms", depths[i]))
	}
	b.ReportMetric(median(sides[1].show)/median(sides[0].show), "show-ratio")
	b.ReportMetric(median(sides[1].step)/median(sides[0].step), "step-ratio")
	b.ReportMetric(median(sides[1].showCPU)/median(sides[0].showCPU), "show-cpu-ratio")
	b.ReportMetric(median(sides[1].stepCPU)/median(sides[0].stepCPU), "step-cpu-ratio")
	b.ReportMetric(0, "ns/op")
}
