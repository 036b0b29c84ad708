//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/thread"
)

// The worker benchmarks (bench/README.md, "Workers"): each runs its
// workload once per backend (use -benchtime=1x) and reports its figures
// with b.ReportMetric.

// agentStarts reads the agent's start times: thread -> depth -> unix ns.
func (f *farm) agentStarts() map[string]map[int]int64 {
	out := map[string]map[int]int64{}
	data, err := os.ReadFile(f.times)
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		d, _ := strconv.Atoi(fs[1])
		ns, _ := strconv.ParseInt(fs[2], 10, 64)
		if out[fs[0]] == nil {
			out[fs[0]] = map[int]int64{}
		}
		if _, seen := out[fs[0]][d]; !seen {
			out[fs[0]][d] = ns
		}
	}
	return out
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkWorkerLatency: 8 idle worker processes; threads queued one at a
// time; the time from the claim (the runs/ log's entry, store clock) and
// from the enqueue call to the first agent start, median and p99.
func BenchmarkWorkerLatency(b *testing.B) {
	for _, backend := range []string{"disk", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			f := newFarm(b, backend)
			f.sleep = "0"
			f.times = filepath.Join(f.dir, "times")
			var ws []*wproc
			for i := range 8 {
				ws = append(ws, f.start(fmt.Sprintf("idle%d", i)))
			}
			time.Sleep(500 * time.Millisecond) // all idle, watching
			const n = 40
			var claimToAgent, enqueueToAgent []float64
			cwd := b.TempDir()
			b.ResetTimer()
			for i := range n {
				id, _, err := f.eng.Start(b.Context(), f.wf, fmt.Sprintf("latency %d", i), cwd)
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if _, err := f.eng.Enqueue(b.Context(), id, thread.EnqueueOptions{Agent: "tester"}); err != nil {
					b.Fatal(err)
				}
				var at int64
				waitUntil(b, 30*time.Second, "the agent to start", func() bool {
					at = f.agentStarts()[id][1]
					return at != 0
				})
				log, err := f.eng.Repo().Refs().Log(b.Context(), thread.RunPrefix+id)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range log {
					if strings.HasPrefix(e.Message, "claim by") {
						claimToAgent = append(claimToAgent, float64(at-e.Time*int64(time.Millisecond))/1e6)
						break
					}
				}
				enqueueToAgent = append(enqueueToAgent, float64(at-t0.UnixNano())/1e6)
				time.Sleep(100 * time.Millisecond) // the workers idle again
			}
			b.StopTimer()
			b.ReportMetric(quantile(claimToAgent, 0.5), "claim-to-agent-ms-p50")
			b.ReportMetric(quantile(claimToAgent, 0.99), "claim-to-agent-ms-p99")
			b.ReportMetric(quantile(enqueueToAgent, 0.5), "enqueue-to-agent-ms-p50")
			b.ReportMetric(quantile(enqueueToAgent, 0.99), "enqueue-to-agent-ms-p99")
			for _, w := range ws {
				f.signal(w, 15)
				<-w.done
			}
		})
	}
}

// BenchmarkWorkerThroughput: 100 threads of three steps with an instant
// command agent, run by 8 worker processes, and the same run by 8
// concurrent `uwf thread run` processes (100 in all); steps per second of
// each, side by side.
func BenchmarkWorkerThroughput(b *testing.B) {
	const threads = 100
	const steps = threads * 4 // three steps and the done mark each
	for _, backend := range []string{"disk", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			f := newFarm(b, backend)
			f.sleep = "0"
			// 8 workers, started idle.
			var ws []*wproc
			for i := range 8 {
				ws = append(ws, f.start(fmt.Sprintf("tp%d", i)))
			}
			time.Sleep(300 * time.Millisecond)
			cwd := b.TempDir()
			var ids []string
			for i := range threads {
				id, _, err := f.eng.Start(b.Context(), f.wf, fmt.Sprintf("tp %d", i), cwd)
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, id)
			}
			b.ResetTimer()
			t0 := time.Now()
			for _, id := range ids {
				if _, err := f.eng.Enqueue(b.Context(), id, thread.EnqueueOptions{Agent: "tester"}); err != nil {
					b.Fatal(err)
				}
			}
			// One listing per poll (not a read of every thread): the runs
			// are given back as the threads end.
			waitUntil(b, 300*time.Second, "the queue to empty", func() bool {
				for range f.eng.Repo().Refs().List(b.Context(), thread.RunPrefix) {
					return false
				}
				return true
			})
			workers := time.Since(t0)
			f.waitDone(ids, time.Second)
			for _, w := range ws {
				f.signal(w, 15)
				<-w.done
			}
			// 8 `uwf thread run` processes at a time, 100 runs.
			home := f.home("runner")
			t1 := time.Now()
			var wg sync.WaitGroup
			next := make(chan int)
			go func() {
				for i := range threads {
					next <- i
				}
				close(next)
			}()
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						cmd := exec.Command(os.Args[0], "thread", "run", "chain", "-p", fmt.Sprintf("run %d", i), "--agent", "tester", "--cwd", cwd)
						cmd.Env = f.env(home, "runner")
						if out, err := cmd.CombinedOutput(); err != nil {
							b.Errorf("thread run: %v\n%s", err, out)
							return
						}
					}
				}()
			}
			wg.Wait()
			runs := time.Since(t1)
			b.StopTimer()
			b.ReportMetric(float64(steps)/workers.Seconds(), "worker-steps/s")
			b.ReportMetric(float64(steps)/runs.Seconds(), "thread-run-steps/s")
			b.ReportMetric(runs.Seconds()/workers.Seconds(), "workers-speedup")
		})
	}
}
