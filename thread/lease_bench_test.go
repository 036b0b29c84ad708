package thread_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/thread"
)

// BenchmarkLeaseCycle: one lease's life (claim, keep, give back, queue
// again) on an engine that keeps 32 other leases meanwhile, as a worker of
// high concurrency does: each kept lease follows its run record, so the
// cost of a lease's watch (opening one, being woken by every change of
// runs/) shows. On disk (durability none) and PostgreSQL (when
// UWF_TEST_POSTGRES is set).
func BenchmarkLeaseCycle(b *testing.B) {
	for _, backend := range []string{"disk", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			var st cas.Store
			var refs cas.Refs
			switch backend {
			case "disk":
				s, err := disk.Create(filepath.Join(b.TempDir(), "store"), &disk.Options{Durability: disk.DurabilityNone})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				st, refs = s, s.Refs()
			case "postgres":
				url := pgtest.URL(b)
				sep := "?"
				if strings.Contains(url, "?") {
					sep = "&"
				}
				s, err := postgres.Open(b.Context(), fmt.Sprintf("%s%sschema=%s", url, sep, pgtest.Schema(b, "leasebench")), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(s.Close)
				st, refs = s, s.Refs()
			}
			repo, err := cas.Open(b.Context(), st, refs, nil)
			if err != nil {
				b.Fatal(err)
			}
			e := thread.New(repo, nil)
			ctx := b.Context()
			wf, err := repo.Put(ctx, cas.WorkflowSchema, map[string]any{"name": "bench", "roles": map[string]any{}, "graph": map[string]any{}})
			if err != nil {
				b.Fatal(err)
			}
			start := func(i int) string {
				id, _, err := e.Start(ctx, wf, fmt.Sprintf("prompt %d", i), "/tmp")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Enqueue(ctx, id, thread.EnqueueOptions{}); err != nil {
					b.Fatal(err)
				}
				return id
			}
			opts := &thread.LeaseOptions{Length: time.Minute}
			for i := range 32 {
				l, err := e.Claim(ctx, start(i), "bg", opts)
				if err != nil {
					b.Fatal(err)
				}
				_, stop := l.Keep(ctx)
				b.Cleanup(stop)
			}
			id := start(-1)
			b.ResetTimer()
			for b.Loop() {
				l, err := e.Claim(ctx, id, "w", opts)
				if err != nil {
					b.Fatal(err)
				}
				_, stop := l.Keep(ctx)
				stop()
				if err := l.Release(ctx, "done"); err != nil {
					b.Fatal(err)
				}
				if _, err := e.Enqueue(ctx, id, thread.EnqueueOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
