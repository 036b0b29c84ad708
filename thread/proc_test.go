package thread_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/thread"
)

// TestMain runs a helper instead of the tests when UWF_THREAD_HELPER is
// set: the test binary becomes a process that commits steps to a thread of
// a disk store.
func TestMain(m *testing.M) {
	if mode := os.Getenv("UWF_THREAD_HELPER"); mode != "" {
		if err := helper(mode, os.Args[len(os.Args)-3:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if benchRoot != "" { // the big benchmark fixtures (bench_test.go)
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

// diskRepo opens a Repo over the disk store in dir.
func diskRepo(ctx context.Context, dir string, d disk.Durability) (*cas.Repo, *disk.Store, error) {
	st, err := disk.OpenOrCreate(dir, &disk.Options{Durability: d})
	if err != nil {
		return nil, nil, err
	}
	repo, err := cas.Open(ctx, st, st.Refs(), nil)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return repo, st, nil
}

// commitOnce tries to append one step to thread id; it reports whether it
// won the race.
func commitOnce(ctx context.Context, e *thread.Engine, repo *cas.Repo, id, role string, out, det cas.Hash) (bool, error) {
	head, err := e.Head(ctx, id)
	if err != nil {
		return false, err
	}
	c, err := e.Next(ctx, head)
	if err != nil {
		return false, err
	}
	s := &thread.Step{Chain: c, Role: role, Output: out, Detail: det, Agent: "proc", StartedAt: time.Now().UnixMilli()}
	h, err := repo.Put(ctx, cas.StepSchema, s.Payload())
	if err != nil {
		return false, err
	}
	return commitStep(ctx, e, id, h, role)
}

// commitBatch tries to append one step to thread id as `thread step` does:
// its new nodes (an output and the run's content, unique to this attempt)
// and the step in one batch, then the ref move. It reports whether it won
// the race.
func commitBatch(ctx context.Context, e *thread.Engine, repo *cas.Repo, id, role string, attempt int) (bool, error) {
	head, err := e.Head(ctx, id)
	if err != nil {
		return false, err
	}
	c, err := e.Next(ctx, head)
	if err != nil {
		return false, err
	}
	nodes := []cas.Node{
		{Type: cas.ContentSchema, Payload: fmt.Sprintf("prompt of %s, attempt %d", role, attempt)},
		{Type: cas.ContentSchema, Payload: fmt.Sprintf("raw output of %s, attempt %d", role, attempt)},
		{Type: cas.ContentSchema, Payload: fmt.Sprintf("output of %s, attempt %d", role, attempt)},
	}
	var hs [3]cas.Hash
	for i, n := range nodes {
		if hs[i], err = n.Hash(); err != nil {
			return false, err
		}
	}
	d := &thread.Detail{Prompt: hs[0], Raw: hs[1], Attempts: []cas.Hash{}, EdgePrompt: "go", DurationMs: 1}
	det := cas.Node{Type: cas.DetailSchema, Payload: d.Payload()}
	dh, err := det.Hash()
	if err != nil {
		return false, err
	}
	s := &thread.Step{Chain: c, Role: role, Output: hs[2], Detail: dh, Agent: "proc", StartedAt: time.Now().UnixMilli()}
	stored, err := repo.PutNodes(ctx, append(nodes, det, cas.Node{Type: cas.StepSchema, Payload: s.Payload()}))
	if err != nil {
		return false, err
	}
	return commitStep(ctx, e, id, stored[len(stored)-1], role)
}

// commitStep moves thread id to the step h; it reports whether it won the
// race.
func commitStep(ctx context.Context, e *thread.Engine, id string, h cas.Hash, role string) (bool, error) {
	err := e.Commit(ctx, id, h, "step "+role)
	var ce *thread.ConflictError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ce):
		return false, nil
	}
	return false, err
}

// helper is a child process: args are the store dir, the thread id and a
// count ("forever" to loop until killed). It prints "wins losses".
func helper(mode string, args []string) error {
	if mode == "compose" {
		return composeHelper(args)
	}
	ctx := context.Background()
	d := disk.DurabilityNone
	if mode == "crash" {
		d = disk.DurabilityStrict
	}
	repo, st, err := diskRepo(ctx, args[0], d)
	if err != nil {
		return err
	}
	defer st.Close()
	e := thread.New(repo, nil)
	out, _ := repo.Put(ctx, cas.ContentSchema, "output")
	det, _ := repo.Put(ctx, cas.ContentSchema, "detail")
	n, _ := strconv.Atoi(args[2])
	if mode == "crash" {
		fmt.Println("ready") // the parent kills at a random point from now on
	}
	wins, losses := 0, 0
	for i := 0; mode == "crash" || i < n; i++ {
		role := fmt.Sprintf("p%d", os.Getpid())
		var won bool
		var err error
		if mode == "crash" {
			// A strict step's whole write path: a batch, then the move.
			won, err = commitBatch(ctx, e, repo, args[1], role, i)
		} else {
			won, err = commitOnce(ctx, e, repo, args[1], role, out, det)
		}
		if err != nil {
			return err
		}
		if won {
			wins++
		} else {
			losses++
		}
	}
	fmt.Println(wins, losses)
	return nil
}

// startDiskThread creates a disk store in a temp dir with a thread.
func startDiskThread(t *testing.T, d disk.Durability) (string, string, *cas.Repo, *thread.Engine) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	repo, st, err := diskRepo(t.Context(), dir, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := thread.New(repo, nil)
	wf, err := repo.Put(t.Context(), cas.WorkflowSchema, map[string]any{"name": "t", "roles": map[string]any{}, "graph": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := e.Start(t.Context(), wf, "p", "/")
	if err != nil {
		t.Fatal(err)
	}
	return dir, id, repo, e
}

// checkLinear walks the chain from the head: depths go down one by one to
// the start; it returns the depth.
func checkLinear(t *testing.T, e *thread.Engine, id string) int {
	t.Helper()
	head, err := e.Head(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	depth := -1
	for n, err := range e.NewestFirst(t.Context(), head) {
		if err != nil {
			t.Fatal(err)
		}
		if depth >= 0 && n.Depth() != depth-1 {
			t.Fatalf("chain not linear: depth %d after %d", n.Depth(), depth)
		}
		depth = n.Depth()
		if depth == 0 {
			break
		}
	}
	hn, _ := e.Node(t.Context(), head)
	return hn.Depth()
}

func fsckClean(t *testing.T, repo *cas.Repo) {
	t.Helper()
	rep, err := repo.Fsck(t.Context(), thread.FsckOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
}

// TestCommitsFromProcesses: 8 goroutines and 4 OS processes commit steps to
// one thread: exactly one winner per prev, the chain linear, losers get the
// conflict error, successes = depth.
func TestCommitsFromProcesses(t *testing.T) {
	dir, id, repo, e := startDiskThread(t, disk.DurabilityNone)
	const per = 30
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 4 {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$", dir, id, strconv.Itoa(per))
		cmd.Env = append(os.Environ(), "UWF_THREAD_HELPER=commit")
		var o strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &o
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &o)
	}
	out, _ := repo.Put(t.Context(), cas.ContentSchema, "output")
	det, _ := repo.Put(t.Context(), cas.ContentSchema, "detail")
	var wins, losses atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := thread.New(repo, nil)
			for range per {
				won, err := commitOnce(t.Context(), e, repo, id, fmt.Sprintf("g%d", g), out, det)
				if err != nil {
					t.Error(err)
					return
				}
				if won {
					wins.Add(1)
				} else {
					losses.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		var w, l int64
		if _, err := fmt.Sscan(outs[i].String(), &w, &l); err != nil || w+l != per {
			t.Fatalf("process %d printed %q", i, outs[i])
		}
		wins.Add(w)
		losses.Add(l)
	}
	depth := checkLinear(t, e, id)
	if int64(depth) != wins.Load() || wins.Load()+losses.Load() != 12*per {
		t.Errorf("depth %d, wins %d, losses %d (of %d attempts)", depth, wins.Load(), losses.Load(), 12*per)
	}
	log, err := e.Log(t.Context(), id)
	if err != nil || int64(len(log)) != wins.Load()+1 {
		t.Errorf("log: %d entries, %v; want %d", len(log), err, wins.Load()+1)
	}
	fsckClean(t, repo)
}

// TestCommitCrash kills a process committing strict steps (each a batch of
// nodes, then the ref move, as `thread step` writes them) at random points,
// 50 times: the head is always a whole node (the old one or the new one),
// the ref agrees with its log, and fsck is clean.
func TestCommitCrash(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	dir, id, repo, e := startDiskThread(t, disk.DurabilityStrict)
	rng := rand.New(rand.NewPCG(1, 2))
	prev := 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$", dir, id, "0")
		cmd.Env = append(os.Environ(), "UWF_THREAD_HELPER=crash")
		var o strings.Builder
		cmd.Stderr = &o
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the helper is committing, then kill it at a random
		// point of its loop.
		ready := make([]byte, 6)
		if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the helper did not start: %q %v %s", round, ready, err, o.String())
		}
		time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if strings.Contains(o.String(), "helper:") {
			t.Fatalf("round %d: the helper failed: %s", round, o.String())
		}
		// Reopen as a new process would: the head is present and decodes.
		repo2, st2, err := diskRepo(t.Context(), dir, disk.DurabilityNone)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		e2 := thread.New(repo2, nil)
		depth := checkLinear(t, e2, id)
		if depth < prev {
			t.Fatalf("round %d: the thread went back from depth %d to %d", round, prev, depth)
		}
		prev = depth
		head, _ := e2.Head(t.Context(), id)
		log, err := e2.Log(t.Context(), id)
		if err != nil || log[len(log)-1].New != head {
			t.Fatalf("round %d: head %v, log's newest %v (%v)", round, head, log[len(log)-1].New, err)
		}
		if round%10 == 9 {
			fsckClean(t, repo2)
		}
		st2.Close()
	}
	if prev == 0 {
		t.Errorf("only %d steps landed in %d rounds: the kills came too early to test much", prev, rounds)
	}
	t.Logf("%d steps committed across %d kills", prev, rounds)
	fsckClean(t, repo)
	_ = e
}
