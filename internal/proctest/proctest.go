// Package proctest holds what the tests of concurrent workers and servers
// share: a buffer that goroutines and child processes may write while the
// test reads it, whether an agent's process group still runs (on unix),
// and the most leases held at once, replayed from the run records' ref
// logs.
package proctest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/uncaged/uwf/thread"
)

// SyncBuffer is a bytes.Buffer safe for concurrent use: a server's
// goroutines or a child process write it while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// PeakRunning replays the runs/<id> ref logs of the threads ids and
// returns the most leases held at once. A lease is held from its claim's
// log time (the store's clock) to the first of the record's next change
// and its last expiry (a renewal moves the expiry, not the start); at one
// millisecond a lease's end comes before another's start.
func PeakRunning(ctx context.Context, eng *thread.Engine, ids []string) (int, error) {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, id := range ids {
		log, err := eng.Repo().Refs().Log(ctx, thread.RunPrefix+id)
		if err != nil {
			return 0, fmt.Errorf("log of %s%s: %w", thread.RunPrefix, id, err)
		}
		open := false
		var from, expiry int64
		closeAt := func(at int64) {
			if open {
				edges = append(edges, edge{from, 1}, edge{min(at, expiry), -1})
				open = false
			}
		}
		for _, e := range log {
			var r *thread.Run
			if !e.New.IsZero() {
				if r, err = eng.ReadRun(ctx, e.New); err != nil {
					return 0, fmt.Errorf("run record %s of %s: %w", e.New, id, err)
				}
			}
			switch {
			case r != nil && r.State == thread.RunRunning && strings.HasPrefix(e.Message, "renew"):
				expiry = r.Expiry
			case r != nil && r.State == thread.RunRunning:
				closeAt(e.Time)
				open, from, expiry = true, e.Time, r.Expiry
			default:
				closeAt(e.Time)
			}
		}
		closeAt(1 << 62)
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	cur, peak := 0, 0
	for _, e := range edges {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak, nil
}
