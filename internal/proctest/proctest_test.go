package proctest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/proctest"
	"github.com/uncaged/uwf/thread"
)

func TestSyncBuffer(t *testing.T) {
	var b proctest.SyncBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Errorf("%d bytes written, want 800", n)
	}
}

// TestPeakRunning holds leases on three threads in several orders and
// checks the peak replayed from the runs/ logs.
func TestPeakRunning(t *testing.T) {
	tests := []struct {
		name string
		ops  []string // "+i" takes thread i's lease, "-i" gives it back
		want int
	}{
		{"one after another", []string{"+0", "-0", "+1", "-1", "+2", "-2"}, 1},
		{"two overlap", []string{"+0", "+1", "-0", "+2", "-1", "-2"}, 2},
		{"all three", []string{"+0", "+1", "+2", "-2", "-1", "-0"}, 3},
		{"never given back", []string{"+0", "+1"}, 2},
		{"released at once", []string{"+0", "-0", "+1"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			eng, ids := newThreads(t, 3)
			leases := map[byte]*thread.Lease{}
			var err error
			used := map[string]bool{}
			for _, op := range tc.ops {
				time.Sleep(2 * time.Millisecond) // the log's times are milliseconds
				i := op[1]
				used[ids[i-'0']] = true
				if op[0] == '+' {
					if leases[i], err = eng.Acquire(ctx, ids[i-'0'], "w"+string(i), nil); err != nil {
						t.Fatal(err)
					}
				} else if err := leases[i].Release(ctx, "done"); err != nil {
					t.Fatal(err)
				}
			}
			got, err := proctest.PeakRunning(ctx, eng, slices.DeleteFunc(ids, func(id string) bool { return !used[id] }))
			if err != nil || got != tc.want {
				t.Errorf("PeakRunning = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// A thread that was never queued has no runs/ log: an error, not a peak.
func TestPeakRunningNoLog(t *testing.T) {
	eng, ids := newThreads(t, 1)
	id := ids[0]
	if _, err := proctest.PeakRunning(context.Background(), eng, ids); err == nil || !strings.Contains(err.Error(), "runs/"+id) {
		t.Errorf("PeakRunning of a never-queued thread: %v, want an error naming runs/%s", err, id)
	}
}

// newThreads starts n threads on a new memory store.
func newThreads(t *testing.T, n int) (*thread.Engine, []string) {
	t.Helper()
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	eng := thread.New(repo, nil)
	wf, err := repo.Put(ctx, cas.WorkflowSchema, map[string]any{"name": "w", "roles": map[string]any{}, "graph": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range n {
		id, _, err := eng.Start(ctx, wf, "task", "/tmp")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return eng, ids
}
