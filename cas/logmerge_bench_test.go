package cas_test

import (
	"fmt"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// BenchmarkMergeLog merges n imported entries into a live log of n/2: one
// linked run (an export of a thread), entries that link nowhere (strays
// before the creation), and creations that all go first.
func BenchmarkMergeLog(b *testing.B) {
	const n = 20000
	var run, loose, creates []cas.LogEntry
	for i := range n {
		run = append(run, le(uint64(i), uint64(i+1), int64(i), "run"))
		loose = append(loose, le(uint64(3*i+n), uint64(3*i+n+1), int64(i), "loose"))
		creates = append(creates, le(0, uint64(n+i), int64(n-i), "create"))
	}
	live := run[:n/2]
	for _, c := range []struct {
		name     string
		imported []cas.LogEntry
	}{{"run", run}, {"loose", loose}, {"creates", creates}} {
		b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
			for b.Loop() {
				if got := cas.MergeLog(live, c.imported, same, cas.Hash(n/2)); len(got) < n {
					b.Fatalf("merged %d entries", len(got))
				}
			}
		})
	}
}
