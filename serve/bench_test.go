package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/thread"
)

// The API benchmarks compare each route's latency with the library reading
// the same data directly, in the same run, alternating one request and one
// direct read so both see the same machine. They build their fixtures
// straight into a disk store (no validation; the nodes are what the thread
// engine writes). The full sizes of the issue, a 100,000-step thread and
// 10,000 threads, need UWF_BENCH_BIG=1; the default sizes are small. See
// bench/README.md.

func benchSize(small, big int) int {
	if os.Getenv("UWF_BENCH_BIG") == "1" {
		return big
	}
	return small
}

// benchStore creates a disk store under dir holding a workflow, an output
// and a detail for steps to name; it returns the store and the three.
func benchStore(b *testing.B, dir string) (*disk.Store, cas.Hash, cas.Hash, cas.Hash) {
	b.Helper()
	st, err := disk.Create(dir, &disk.Options{Durability: disk.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	repo, err := cas.Open(b.Context(), st, st.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	put := func(typ cas.Hash, payload any) cas.Hash {
		h, err := repo.Put(b.Context(), typ, payload)
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	wf := put(cas.WorkflowSchema, map[string]any{"name": "bench", "roles": map[string]any{}, "graph": map[string]any{}})
	out := put(cas.ContentSchema, "output")
	d := &thread.Detail{Prompt: put(cas.ContentSchema, "prompt"), Raw: put(cas.ContentSchema, "---\nstatus: done\n---\nthe body"),
		EdgePrompt: "do it", DurationMs: 5, Attempts: []cas.Hash{}}
	return st, wf, out, put(cas.DetailSchema, d.Payload())
}

func encode(b *testing.B, typ cas.Hash, payload any) []byte {
	data, err := cas.Node{Type: typ, Payload: payload}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// stepData encodes the step at depth d of chain hs.
func stepData(b *testing.B, hs []cas.Hash, d int, out, det cas.Hash) []byte {
	c := thread.Chain{Start: hs[0], Depth: d}
	if d > 1 {
		c.Prev = hs[d-1]
	}
	for k := 1; k <= thread.MaxSkip && d-(1<<k) >= 1; k++ {
		c.Skip = append(c.Skip, hs[d-(1<<k)])
	}
	s := &thread.Step{Chain: c, Role: "r" + strconv.Itoa(d%3), Output: out, Detail: det, Agent: "bench", StartedAt: int64(d), CompletedAt: int64(d) + 1}
	return encode(b, cas.StepSchema, s.Payload())
}

func putAll(b *testing.B, st *disk.Store, data [][]byte) {
	for len(data) > 0 {
		n := min(len(data), 4096)
		if _, err := st.PutBatch(context.Background(), data[:n]); err != nil {
			b.Fatal(err)
		}
		data = data[n:]
	}
}

// benchServer serves repo on loopback for the benchmark.
func benchServer(b *testing.B, repo *cas.Repo) string {
	srv, err := serve.New(repo, &serve.Options{Token: testToken, ExplicitToken: true, Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

// latencies collects samples and reports their median and p99.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func report(b *testing.B, api, lib latencies) {
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		a, l := api.pct(q.p), lib.pct(q.p)
		b.ReportMetric(float64(a.Microseconds()), "api-"+q.name+"-us")
		b.ReportMetric(float64(l.Microseconds()), "lib-"+q.name+"-us")
		b.ReportMetric(float64(a)/float64(l), "ratio-"+q.name)
	}
}

func get(b *testing.B, client *http.Client, url string) {
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s", url, resp.Status)
	}
}

// BenchmarkThreadPage: one thread page (GET the thread, GET its newest 50
// steps) of a long thread (1,000 steps; 100,000 with UWF_BENCH_BIG=1)
// whose ref log has an entry per step, against Engine.Show and
// Engine.Page on the same store.
func BenchmarkThreadPage(b *testing.B) {
	n := benchSize(1_000, 100_000)
	st, wf, out, det := benchStore(b, filepath.Join(b.TempDir(), "store"))
	start := &thread.Start{Workflow: wf, Prompt: "a long thread", Cwd: "/tmp"}
	sdata := encode(b, cas.StartSchema, start.Payload())
	hs := make([]cas.Hash, n+1)
	hs[0] = cas.Sum(sdata)
	data := [][]byte{sdata}
	for d := 1; d <= n; d++ {
		data = append(data, stepData(b, hs, d, out, det))
		hs[d] = cas.Sum(data[len(data)-1])
		if len(data) == 4096 {
			putAll(b, st, data)
			data = data[:0]
		}
	}
	putAll(b, st, data)
	// The thread's log holds an entry per step, as a real one does
	// (imported: the ref is created at the head with its history).
	id := ulid.MustNew(1, nil).String()
	log := make([]cas.LogEntry, n+1)
	log[0] = cas.LogEntry{New: hs[0], Time: 1, Message: "start"}
	for d := 1; d <= n; d++ {
		log[d] = cas.LogEntry{Old: hs[d-1], New: hs[d], Time: int64(d + 1), Message: "step r" + strconv.Itoa(d%3)}
	}
	if err := st.Refs().ImportLog(b.Context(), thread.ThreadPrefix+id, log); err != nil {
		b.Fatal(err)
	}
	repo, err := cas.Open(b.Context(), st, st.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	base := benchServer(b, repo)
	eng := thread.New(repo, nil)
	// A thread an older build wrote: its first show caches its origin
	// (one the engine started has it from the start).
	if info, err := eng.Show(b.Context(), id); err != nil || info.Depth != n {
		b.Fatalf("Show: %v", err)
	}
	client := &http.Client{}
	ctx := b.Context()
	var api, lib latencies
	for b.Loop() {
		t0 := time.Now()
		get(b, client, base+"/api/v1/threads/"+id)
		get(b, client, base+"/api/v1/threads/"+id+"/steps?limit=50")
		api = append(api, time.Since(t0))
		t0 = time.Now()
		if _, err := eng.Show(ctx, id); err != nil {
			b.Fatal(err)
		}
		p, err := eng.Page(ctx, id, 0, 50)
		if err != nil || len(p.Steps) != 50 {
			b.Fatalf("Page: %v", err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
		lib = append(lib, time.Since(t0))
	}
	report(b, api, lib)
}

// BenchmarkThreadList: the first page of the thread list (50 threads) of a
// store of 500 threads (10,000 with UWF_BENCH_BIG=1) against Engine.List.
func BenchmarkThreadList(b *testing.B) {
	n := benchSize(500, 10_000)
	st, wf, out, det := benchStore(b, filepath.Join(b.TempDir(), "store"))
	heads := make([]cas.Hash, n)
	var data [][]byte
	for i := range n {
		start := &thread.Start{Workflow: wf, Prompt: fmt.Sprintf("task %d", i), Cwd: "/tmp"}
		sdata := encode(b, cas.StartSchema, start.Payload())
		hs := []cas.Hash{cas.Sum(sdata)}
		step := stepData(b, hs, 1, out, det)
		heads[i] = cas.Sum(step)
		data = append(data, sdata, step)
	}
	putAll(b, st, data)
	t0 := uint64(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	for i := range n {
		id := ulid.MustNew(t0+uint64(i), nil).String()
		if err := st.Refs().CompareAndSwap(b.Context(), thread.ThreadPrefix+id, 0, heads[i], "bench thread"); err != nil {
			b.Fatal(err)
		}
	}
	repo, err := cas.Open(b.Context(), st, st.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	base := benchServer(b, repo)
	eng := thread.New(repo, nil)
	client := &http.Client{}
	ctx := b.Context()
	var api, lib latencies
	for b.Loop() {
		t0 := time.Now()
		get(b, client, base+"/api/v1/threads?limit=50")
		api = append(api, time.Since(t0))
		t0 = time.Now()
		infos, err := eng.List(ctx, thread.ListOptions{Limit: 51})
		if err != nil || len(infos) != 51 {
			b.Fatalf("List: %d, %v", len(infos), err)
		}
		js := make([]thread.InfoJSON, 0, 50)
		for _, info := range infos[:50] {
			js = append(js, info.JSON())
		}
		if _, err := json.Marshal(js); err != nil {
			b.Fatal(err)
		}
		lib = append(lib, time.Since(t0))
	}
	report(b, api, lib)
}

// BenchmarkEvents: 100 events subscribers and 8 writers on each backend;
// the delay from each ref move (the compare-and-swap call) to its delivery
// to each subscriber, median and p99. A backend whose refs cannot be
// watched yet is skipped.
func BenchmarkEvents(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			repo, _ := openRepo(b, backend, &clock{t: time.Now()})
			if _, err := repo.WatchHead(b.Context()); errors.Is(err, cas.ErrWatchUnsupported) {
				b.Skipf("this backend's refs cannot be watched yet: %v", err)
			}
			benchEvents(b, repo)
		})
	}
}

func benchEvents(b *testing.B, repo *cas.Repo) {
	const subscribers, writers, moves = 100, 8, 25
	var err error
	base := benchServer(b, repo)
	targets := make([]cas.Hash, moves)
	for i := range targets {
		if targets[i], err = repo.Put(b.Context(), cas.ContentSchema, fmt.Sprint("target ", i)); err != nil {
			b.Fatal(err)
		}
	}
	transport := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: subscribers}
	client := &http.Client{Transport: transport}
	var all latencies
	var casMu sync.Mutex
	var casTimes latencies
	round := 0
	for b.Loop() {
		round++
		var sent sync.Map // "ref new" -> time.Time
		ctx, cancel := context.WithCancel(b.Context())
		var wg sync.WaitGroup
		delays := make([]latencies, subscribers)
		ready := make(chan struct{}, subscribers)
		for s := range subscribers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events", nil)
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					ready <- struct{}{}
					return
				}
				defer resp.Body.Close()
				evs := make(chan sseEvent, 1024)
				go readSSE(resp.Body, evs)
				for ev := range evs {
					if ev.event == "ready" {
						ready <- struct{}{}
						continue
					}
					if ev.event != "ref" {
						continue
					}
					var d serve.EventJSON
					if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
						b.Error(err)
						return
					}
					at, ok := sent.Load(d.Ref + " " + d.New.String())
					if !ok {
						b.Errorf("event of a move not sent: %s", ev.data)
						return
					}
					delays[s] = append(delays[s], time.Since(at.(time.Time)))
					if len(delays[s]) == writers*moves {
						return
					}
				}
			}()
		}
		for range subscribers {
			<-ready
		}
		var ww sync.WaitGroup
		for w := range writers {
			ww.Add(1)
			go func() {
				defer ww.Done()
				ref := fmt.Sprintf("bench/r%d/writer%d", round, w)
				var old cas.Hash
				for _, h := range targets {
					t0 := time.Now()
					sent.Store(ref+" "+h.String(), t0)
					if err := repo.Refs().CompareAndSwap(ctx, ref, old, h, "bench"); err != nil {
						b.Error(err)
						return
					}
					casMu.Lock()
					casTimes = append(casTimes, time.Since(t0))
					casMu.Unlock()
					old = h
					time.Sleep(time.Millisecond)
				}
			}()
		}
		ww.Wait()
		wg.Wait()
		cancel()
		for _, d := range delays {
			if len(d) != writers*moves {
				b.Fatalf("a subscriber got %d events, want %d", len(d), writers*moves)
			}
			all = append(all, d...)
		}
	}
	b.ReportMetric(float64(all.pct(0.5).Microseconds()), "delay-p50-us")
	b.ReportMetric(float64(all.pct(0.99).Microseconds()), "delay-p99-us")
	b.ReportMetric(float64(casTimes.pct(0.5).Microseconds()), "cas-p50-us")
}
