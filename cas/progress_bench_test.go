package cas_test

import (
	"context"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
)

// BenchmarkProgress measures what progress reporting costs GC and Walk on
// the memory store, where per-item work is smallest: "off" runs without a
// ProgressFunc (the default), "on" with a no-op one. bench/README.md
// gives the ratios.
func BenchmarkProgress(b *testing.B) {
	const n = 20000
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	mem := cas.NewMemStore(&cas.MemOptions{Now: func() time.Time { return now }})
	repo, err := cas.Open(context.Background(), mem, mem.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	doc, err := cas.ParseJSON([]byte(`{"type":"object","properties":{"n":{"type":"integer"},"prev":{"type":"string","format":"cas_ref"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	typ, err := repo.PutSchema(ctx, "bench-chain", doc)
	if err != nil {
		b.Fatal(err)
	}
	var head cas.Hash
	for i := range n {
		p := map[string]any{"n": i}
		if !head.IsZero() {
			p["prev"] = head.String()
		}
		if head, err = repo.Put(ctx, typ, p); err != nil {
			b.Fatal(err)
		}
	}
	if err := repo.Refs().CompareAndSwap(ctx, "bench/head", 0, head, "bench"); err != nil {
		b.Fatal(err)
	}
	walk := func(ctx context.Context) error {
		return repo.Walk(ctx, []cas.Hash{head}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil })
	}
	gc := func(ctx context.Context) error {
		// Everything is reachable: GC lists, marks the whole chain and
		// deletes nothing, so each round does the same work.
		_, err := repo.GC(ctx, &cas.GCOptions{Grace: -1})
		return err
	}
	reports := 0
	on := cas.WithProgress(ctx, func(cas.Progress) { reports++ })
	for _, op := range []struct {
		name string
		run  func(context.Context) error
	}{{"walk", walk}, {"gc", gc}} {
		// off and on alternate within each round, so both see the same
		// load; the metrics are each one's mean and their ratio.
		b.Run(op.name, func(b *testing.B) {
			var off, with time.Duration
			i := 0
			for b.Loop() {
				for k := range 2 {
					c := ctx
					if (i+k)%2 == 1 {
						c = on
					}
					t0 := time.Now()
					if err := op.run(c); err != nil {
						b.Fatal(err)
					}
					if c == on {
						with += time.Since(t0)
					} else {
						off += time.Since(t0)
					}
				}
				i++
			}
			b.ReportMetric(float64(off.Nanoseconds())/float64(i), "off-ns/op")
			b.ReportMetric(float64(with.Nanoseconds())/float64(i), "on-ns/op")
			b.ReportMetric(float64(with)/float64(off), "on/off")
		})
	}
	if reports == 0 {
		b.Fatal("no progress reported")
	}
}
