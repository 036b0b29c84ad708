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
)

// TestBackends runs the thread tests that take a store against the disk
// store and, when UWF_TEST_POSTGRES is set, against PostgreSQL; the plain
// tests run them against the memory store. (Tests that move the store's
// clock to exercise GC run on the memory store only.)
func TestBackends(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*testing.T, *tenv)
	}{
		{"SkipPointers", testSkipPointers},
		{"Ancestor", testAncestor},
		{"Iterators", testIterators},
		{"CommitConflicts", testCommitConflicts},
		{"ConcurrentCommits", testConcurrentCommits},
		{"MarksAndStatus", testMarksAndStatus},
		{"List", testList},
		{"ReadQuotaAndPaging", testReadQuotaAndPaging},
		{"FsckChainChecks", testFsckChainChecks},
		{"RunSynthReviewLoop", testRunSynthReviewLoop},
		{"ReplayIntoFork", testReplayIntoFork},
		{"ReplayUnderChangedWorkflow", testReplayUnderChangedWorkflow},
		{"ExternalAgentEndToEnd", testExternalAgentEndToEnd},
		{"SuspendAndResume", testSuspendAndResume},
		{"MaxSteps", testMaxSteps},
		{"MaxStepsLoop", testMaxStepsLoop},
		{"SessionDetail", testSessionDetail},
		{"ChildWorkflowRole", testChildWorkflowRole},
		{"ParallelReviewExample", testParallelReviewExample},
		{"ParallelFailureCollected", testParallelFailureCollected},
		{"RaceCancelsLosers", testRaceCancelsLosers},
		{"GCDropsStepCache", testGCDropsStepCache},
	}
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					st, refs := openBackend(t, backend, "thread")
					c := &clock{t: time.Now().UTC()}
					tc.fn(t, newTEnvOn(t, c, st, refs))
				})
			}
		})
	}
}

// openBackend opens a new, empty store of the backend (memory, disk or
// postgres: a schema of its own named after prefix, dropped after the
// test; skipped without UWF_TEST_POSTGRES).
func openBackend(t *testing.T, backend, prefix string) (cas.Store, cas.Refs) {
	t.Helper()
	switch backend {
	case "memory":
		mem := cas.NewMemStore(nil)
		return mem, mem.Refs()
	case "disk":
		st, err := disk.Create(filepath.Join(t.TempDir(), "store"), &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, st.Refs()
	case "postgres":
		url := pgtest.URL(t)
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		st, err := postgres.Open(t.Context(), fmt.Sprintf("%s%sschema=%s", url, sep, pgtest.Schema(t, prefix)), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st, st.Refs()
	}
	t.Fatalf("no backend %q", backend)
	return nil, nil
}
