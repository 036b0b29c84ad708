package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// postgresURL returns the test database, or skips the test.
func postgresURL(t testing.TB) string {
	t.Helper()
	return pgtest.URL(t)
}

// freshSchema returns url with a new SQL schema of its own.
func freshSchema(url string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%sschema=t%d", url, sep, time.Now().UnixNano())
}

// workerSession is a session on store (a path or a URL), as a worker
// process or a test uses it; a disk store's durability is the one its
// ?durability= names, none by default.
func workerSession(home, store string) *session {
	durability := "none"
	if strings.Contains(store, "?durability=") || strings.HasPrefix(store, "postgres") {
		durability = ""
	}
	return &session{cmd: "worker", home: home, store: store, durability: durability, log: slog.New(slog.DiscardHandler)}
}

// stepWorker is a worker process (UWF_TEST_WORKER=1): it steps the threads
// named in args (after the store) with the synth agent until all are no
// longer active, treating a lost race as nothing but a retry. It prints the
// steps it committed.
func stepWorker(args []string) error {
	ctx := context.Background()
	s := workerSession(os.Getenv("UWF_HOME"), args[0])
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := thread.New(repo, nil)
	ids := args[1:]
	committed, conflicts := 0, 0
	for {
		active := 0
		for _, id := range ids {
			info, err := e.Show(ctx, id)
			if err != nil {
				return err
			}
			if info.Status != thread.StatusActive {
				continue
			}
			active++
			_, err = e.Step(ctx, id, &thread.RunOptions{Agent: "synth"})
			switch {
			case err == nil:
				committed++
			case errors.Is(err, cas.ErrConflict):
				conflicts++
			case errors.Is(err, thread.ErrNotActive):
			default:
				return err
			}
		}
		if active == 0 {
			fmt.Println(committed, conflicts)
			return nil
		}
	}
}

// countWorkerArgs is how many of a worker process's arguments are its own:
// all after "-test.run=^$".
func countWorkerArgs() int {
	for i, a := range os.Args {
		if a == "-test.run=^$" {
			return len(os.Args) - i - 1
		}
	}
	return 0
}

// runWorkers starts n worker processes on store over ids, rotated so they
// collide, and waits for them; it returns the steps committed.
func runWorkers(t testing.TB, home, store string, ids []string, n int) int {
	t.Helper()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for w := range n {
		rot := append(slices.Clone(ids[w*len(ids)/n:]), ids[:w*len(ids)/n]...)
		cmd := exec.CommandContext(t.Context(), os.Args[0], append([]string{"-test.run=^$", store}, rot...)...)
		cmd.Env = append(os.Environ(), "UWF_TEST_WORKER=1", "UWF_HOME="+home)
		var o bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &o
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &o)
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
		}
		var c, k int
		if _, err := fmt.Sscan(outs[i].String(), &c, &k); err != nil {
			t.Fatalf("worker %d printed %q", i, outs[i])
		}
		total += c
	}
	return total
}

// workload starts 100 review-loop threads on store, has 8 worker processes
// step them all to the end, and checks every chain. It returns the commits
// per second.
func workload(t testing.TB, store string) float64 {
	ctx := t.Context()
	home := t.TempDir()
	s := workerSession(home, store)
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	e := thread.New(repo, nil)
	data, _ := examples.FS.ReadFile("review-loop.yaml")
	wf, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Registry().Put(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	n := 100
	if testing.Short() {
		n = 20
	}
	var ids []string
	for i := range n {
		id, _, err := e.Start(ctx, res.Hash, fmt.Sprintf("task %d", i), "/")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	began := time.Now()
	committed := runWorkers(t, home, store, ids, 8)
	took := time.Since(began)
	want := []string{"planner:done", "developer:done", "reviewer:rejected", "developer:done", "reviewer:approved", "mark:done"}
	for _, id := range ids {
		head, err := e.Head(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		depth := 0
		for n, err := range e.OldestFirst(ctx, head) {
			if err != nil {
				t.Fatal(err)
			}
			if n.Depth() != depth {
				t.Fatalf("thread %s: depth %d after %d", id, n.Depth(), depth-1)
			}
			depth++
			switch n.Kind {
			case thread.KindStep:
				out, err := repo.Get(ctx, n.Step.Output)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, n.Step.Role+":"+out.Payload.(map[string]any)["status"].(string))
			case thread.KindMark:
				got = append(got, "mark:"+n.Mark.Mark)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("thread %s: %q, want %q (a step lost or duplicated)", id, got, want)
		}
		log, _ := e.Log(ctx, id)
		if len(log) != len(want)+1 {
			t.Errorf("thread %s: %d log entries, want %d", id, len(log), len(want)+1)
		}
	}
	if committed != n*len(want) {
		t.Errorf("workers committed %d steps and marks, want %d", committed, n*len(want))
	}
	rep, err := repo.Fsck(ctx, thread.FsckOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
	rate := float64(committed) / took.Seconds()
	t.Logf("8 workers, %d threads: %d commits in %s: %.0f commits/s", n, committed, took.Round(time.Millisecond), rate)
	return rate
}

// BenchmarkWorkers runs the workload of TestWorkersDisk and
// TestWorkersPostgres side by side, in rounds alternating the backends: a
// disk store without fsync, a strict (fsyncing) one, and PostgreSQL at the
// server's full durability. It reports the median of each one's commits/s
// and the medians of PostgreSQL's ratio to each disk store within a round
// (a loaded machine moves whole rounds; ratios within one move less).
//
//	UWF_TEST_POSTGRES=... go test ./cmd/uwf -run '^$' -bench '^BenchmarkWorkers$' -benchtime 5x
func BenchmarkWorkers(b *testing.B) {
	pg := postgresURL(b)
	var none, strict, postgres []float64
	for b.Loop() {
		none = append(none, workload(b, filepath.Join(b.TempDir(), "store")+"?durability=none"))
		strict = append(strict, workload(b, filepath.Join(b.TempDir(), "store")+"?durability=strict"))
		postgres = append(postgres, workload(b, freshSchema(pg)))
	}
	var vsNone, vsStrict []float64
	for i := range postgres {
		vsNone = append(vsNone, postgres[i]/none[i])
		vsStrict = append(vsStrict, postgres[i]/strict[i])
	}
	b.ReportMetric(median(none), "disk-none-commits/s")
	b.ReportMetric(median(strict), "disk-strict-commits/s")
	b.ReportMetric(median(postgres), "postgres-commits/s")
	b.ReportMetric(median(vsNone), "postgres/disk-none")
	b.ReportMetric(median(vsStrict), "postgres/disk-strict")
	b.Logf("postgres/disk-none by round: %.2f", vsNone)
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestServiceLogLevel: uwf worker and uwf serve log at info unless
// --log-level says otherwise.
func TestServiceLogLevel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool // the start's info line on stderr
	}{
		{[]string{"worker"}, true},
		{[]string{"worker", "--log-level", "warn"}, false},
		{[]string{"serve", "--addr", "127.0.0.1:0"}, true},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "error"}, false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			r := e.runContext(ctx, strings.NewReader(""), tc.args...)
			if got := strings.Contains(r.stderr, "level=INFO"); got != tc.want {
				t.Errorf("info lines on stderr: %v, want %v\n%v", got, tc.want, r)
			}
		})
	}
}
