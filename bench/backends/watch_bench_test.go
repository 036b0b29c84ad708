package backends_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
)

// Watch delay: writers and watchers, each side on its own instance of the
// store (as two processes would be).
const (
	watchWriters = 4
	// watchPace is the pause between one writer's changes: the benchmark
	// measures delay, not throughput.
	watchPace = 5 * time.Millisecond
)

// BenchmarkWatchDelay measures the delay from a ref move to its delivery:
// 4 writers move their own refs (a CompareAndSwap every 5 ms each) through
// one instance of the store, and 4 (or 100) watchers follow every change
// through another instance (for disk, another Store on the folder, woken by
// inotify; for PostgreSQL, another pool, woken by its LISTEN connection).
// The delay of an event runs from just before its CompareAndSwap was
// called to its arrival at a watcher; it is reported as p50-ms and p99-ms
// over all watchers, beside cas-ms, the median CompareAndSwap itself.
func BenchmarkWatchDelay(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) (writer, watcher cas.Refs)
	}{
		{"disk-strict", func(b *testing.B) (cas.Refs, cas.Refs) { return openDiskTwice(b, disk.DurabilityStrict) }},
		{"disk-none", func(b *testing.B) (cas.Refs, cas.Refs) { return openDiskTwice(b, disk.DurabilityNone) }},
		{"postgres", openPostgresTwice},
	}
	for _, be := range backends {
		for _, watchWatchers := range []int{4, 100} {
			b.Run(fmt.Sprintf("%s/watchers=%d", be.name, watchWatchers), func(b *testing.B) {
				benchWatchDelay(b, be.open, watchWatchers)
			})
		}
	}
}

// benchWatchDelay is one run of BenchmarkWatchDelay.
func benchWatchDelay(b *testing.B, open func(b *testing.B) (writer, watcher cas.Refs), watchWatchers int) {
	w, r := open(b)
	watcher := r.(cas.Watcher)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	head, err := watcher.WatchHead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	per := max(1, b.N/watchWriters)
	total := per * watchWriters
	delays := make([][]time.Duration, watchWatchers)
	var ready, done sync.WaitGroup
	for k := range watchWatchers {
		ready.Add(1)
		done.Go(func() {
			n := 0
			first := true
			for e, err := range watcher.Watch(ctx, "bench/", head) {
				if first {
					ready.Done()
					first = false
				}
				if err != nil {
					b.Error(err)
					return
				}
				sent, _ := strconv.ParseInt(e.Message, 10, 64)
				delays[k] = append(delays[k], time.Since(time.Unix(0, sent)))
				if n++; n == total {
					return
				}
			}
		})
	}
	// The watchers are waiting once each has read the journal or
	// the log up to head: one warm-up change makes sure.
	warm := cas.Hash(1 << 40)
	if err := w.CompareAndSwap(ctx, "bench/warm", 0, warm, strconv.FormatInt(time.Now().UnixNano(), 10)); err != nil {
		b.Fatal(err)
	}
	ready.Wait()
	total++ // the warm-up
	casTimes := make([][]time.Duration, watchWriters)
	b.ResetTimer()
	var writers sync.WaitGroup
	for k := range watchWriters {
		writers.Go(func() {
			name := fmt.Sprintf("bench/w%d", k)
			var cur cas.Hash
			for i := range per {
				next := cas.Hash(uint64(k)<<32 | uint64(i+1))
				t0 := time.Now()
				if err := w.CompareAndSwap(ctx, name, cur, next, strconv.FormatInt(t0.UnixNano(), 10)); err != nil {
					b.Error(err)
					return
				}
				casTimes[k] = append(casTimes[k], time.Since(t0))
				cur = next
				time.Sleep(watchPace)
			}
		})
	}
	writers.Wait()
	done.Wait()
	b.StopTimer()
	var all, cas []time.Duration
	for _, d := range delays {
		all = append(all, d[1:]...) // without the warm-up
	}
	for _, d := range casTimes {
		cas = append(cas, d...)
	}
	if len(all) == 0 {
		b.Fatal("no events")
	}
	slices.Sort(all)
	slices.Sort(cas)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	b.ReportMetric(ms(cas[len(cas)/2]), "cas-ms")
	b.ReportMetric(0, "ns/op")
}

func openDiskTwice(b *testing.B, d disk.Durability) (cas.Refs, cas.Refs) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "store")
	one, err := disk.Create(dir, &disk.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { one.Close() })
	two, err := disk.Open(dir, &disk.Options{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { two.Close() })
	return one.Refs(), two.Refs()
}

func openPostgresTwice(b *testing.B) (cas.Refs, cas.Refs) {
	b.Helper()
	url := pgtest.URL(b)
	schema := pgtest.Schema(b, "uwf_bench_")
	var out [2]cas.Refs
	for i := range out {
		st, err := postgres.Open(b.Context(), url, &postgres.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(st.Close)
		out[i] = st.Refs()
	}
	return out[0], out[1]
}
