package thread_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/cas/postgres"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/internal/pgtest"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// campaignLease is the branches' lease in the kill -9 campaign: short, so
// a killed runner's branches are taken over soon.
var campaignLease = &thread.LeaseOptions{Length: 1500 * time.Millisecond}

// composeHelper is a child process of the kill -9 campaign: args are the
// store dir, the thread id and the agent config file. It steps the thread
// until it stops (or is killed).
func composeHelper(args []string) error {
	ctx := context.Background()
	repo, closeStore, err := campaignRepo(ctx, args[0])
	if err != nil {
		return err
	}
	defer closeStore()
	data, err := os.ReadFile(args[2])
	if err != nil {
		return err
	}
	cfg, err := config.Parse("config.yaml", data, agent.Builtins())
	if err != nil {
		return err
	}
	e := thread.New(repo, nil)
	_, err = e.StepN(ctx, args[1], 0, &thread.RunOptions{Config: cfg, BranchLease: campaignLease})
	return err
}

// TestKill9ParallelStage kills the process stepping a thread at random
// moments of a parallel stage, then steps it again from a new process,
// until it is done: no branch that had finished runs again, every branch
// has one step, fsck is clean. On the disk store and, when
// UWF_TEST_POSTGRES is set, on PostgreSQL. The CI variant runs one thread
// per backend (about 10 s, at most 40); UWF_COMPOSE_CAMPAIGN=N runs N.
func TestKill9ParallelStage(t *testing.T) {
	threads := 1
	if n, err := strconv.Atoi(os.Getenv("UWF_COMPOSE_CAMPAIGN")); err == nil && n > 0 {
		threads = n
	}
	for _, backend := range []string{"disk", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			for i := range threads {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					where := "disk:" + filepath.Join(t.TempDir(), "store")
					if backend == "postgres" {
						url := pgtest.URL(t)
						sep := "?"
						if strings.Contains(url, "?") {
							sep = "&"
						}
						where = fmt.Sprintf("postgres:%s%sschema=compose%d", url, sep, time.Now().UnixNano())
					}
					kill9Campaign(t, where, rand.New(rand.NewPCG(uint64(i), 16)))
				})
			}
		})
	}
}

// campaignRepo opens the store at where: "disk:<dir>" or
// "postgres:<url>".
func campaignRepo(ctx context.Context, where string) (*cas.Repo, func(), error) {
	if url, ok := strings.CutPrefix(where, "postgres:"); ok {
		st, err := postgres.Open(ctx, url, nil)
		if err != nil {
			return nil, nil, err
		}
		repo, err := cas.Open(ctx, st, st.Refs(), nil)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		return repo, st.Close, nil
	}
	repo, st, err := diskRepo(ctx, strings.TrimPrefix(where, "disk:"), disk.DurabilityNone)
	if err != nil {
		return nil, nil, err
	}
	return repo, func() { st.Close() }, nil
}

func kill9Campaign(t *testing.T, dir string, rng *rand.Rand) {
	repo, closeStore, err := campaignRepo(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	e := thread.New(repo, nil)
	log := t.TempDir()
	agentPath := script(t, t.TempDir(), "fake.sh", fakeAgentBody)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte("agents:\n  fake:\n    command: "+agentPath+"\n    env: {LOG: "+log+"}\ndefaultAgent: fake\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	members := []string{"fast1", "fast2", "fast3", "fast4", "fast5"}
	w, err := registry.Parse("w.yaml", []byte(stageWorkflow("parallel", members...)+"  # concurrency below\n"))
	if err != nil {
		t.Fatal(err)
	}
	w.Roles["stage"].Concurrency = 3
	res, err := e.Registry().Put(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := e.Start(t.Context(), res.Hash, "task", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	doneRuns := map[string]int{} // branch role -> its runs when first seen done
	deadline := time.Now().Add(40 * time.Second)
	kills := 0
	for round := 0; ; round++ {
		info, err := e.Show(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range info.Branches {
			if _, seen := doneRuns[b.Key]; !seen && b.Status == thread.StatusDone {
				doneRuns[b.Key] = runsOf(t, log, b.Key)
			}
		}
		if info.Status == thread.StatusDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %s not done after %d rounds (%d kills): %+v", id, round, kills, info)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$", dir, id, cfgPath)
		cmd.Env = append(os.Environ(), "UWF_THREAD_HELPER=compose")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wait := make(chan error, 1)
		go func() { wait <- cmd.Wait() }()
		// The first rounds are killed at a random moment (some end
		// first); then one runs to the end.
		if round < 12 {
			select {
			case <-time.After(time.Duration(50+rng.IntN(1000)) * time.Millisecond):
				_ = cmd.Process.Kill()
				kills++
				<-wait
			case <-wait:
			}
		} else {
			<-wait
		}
	}
	if kills == 0 {
		t.Log("no process was killed mid-stage")
	}
	for role, n := range doneRuns {
		if got := runsOf(t, log, role); got != n {
			t.Errorf("branch %s ran %d times, %d of them after it had finished", role, got, got-n)
		}
	}
	calls, err := e.Calls(t.Context(), id)
	if err != nil || len(calls) != 1 || calls[0].Join.IsZero() {
		t.Fatalf("calls = %+v, %v", calls, err)
	}
	for _, b := range calls[0].Branches {
		n := 0
		for bn, err := range e.NewestFirst(t.Context(), b.Head) {
			if err != nil {
				t.Fatal(err)
			}
			if bn.Step != nil {
				n++
			}
		}
		if n != 1 {
			t.Errorf("branch %s has %d steps, want 1", b.Key, n)
		}
	}
	fsckClean(t, repo)
	t.Logf("%d kills; runs per branch: %v", kills, doneRuns)
}
