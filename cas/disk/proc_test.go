package disk_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
	"github.com/uncaged/uwf/cas/disk"
)

// The test binary re-executes itself as a helper process when helperEnv is
// set: TestMain runs the helper named by it instead of the tests.
const (
	helperEnv = "UWF_DISK_TEST_HELPER"
	dirEnv    = "UWF_DISK_TEST_DIR"
	argEnv    = "UWF_DISK_TEST_ARG"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode, os.Getenv(dirEnv), os.Getenv(argEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testExe = exe
	os.Exit(m.Run())
}

// testExe is this test binary, which helper processes run.
var testExe string

func runHelper(mode, dir, arg string) error {
	ctx := context.Background()
	switch mode {
	case "increment":
		// arg: "<goroutines> <increments each>"
		var g, n int
		if _, err := fmt.Sscan(arg, &g, &n); err != nil {
			return err
		}
		s, err := disk.Open(dir, &disk.Options{Durability: disk.DurabilityNone})
		if err != nil {
			return err
		}
		errs := make(chan error, g)
		for range g {
			go func() { errs <- increment(ctx, s, "counter", n) }()
		}
		for range g {
			if err := <-errs; err != nil {
				return err
			}
		}
		return nil
	case "move":
		// arg: a ref to create, then move once.
		s, err := disk.Open(dir, nil)
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.Refs().CompareAndSwap(ctx, arg, 0, 1, "from another process"); err != nil {
			return err
		}
		return s.Refs().CompareAndSwap(ctx, arg, 1, 2, "moved by another process")
	case "open-or-create":
		// arg: the barrier file to wait for.
		fmt.Println("ready")
		waitFor(arg)
		s, err := disk.OpenOrCreate(dir, nil)
		if err != nil {
			return err
		}
		_, err = s.Put(ctx, []byte("from "+strconv.Itoa(os.Getpid())))
		return err
	case "create-ref":
		// arg: "<rounds> <process index>"; round r waits for <dir>/go-r.
		var rounds, p int
		if _, err := fmt.Sscan(arg, &rounds, &p); err != nil {
			return err
		}
		s, err := disk.Open(dir, nil)
		if err != nil {
			return err
		}
		fmt.Println("ready")
		for r := range rounds {
			waitFor(filepath.Join(dir, "go-"+strconv.Itoa(r)))
			name := raceNames(r)[p%len(raceNames(r))]
			err := s.Refs().CompareAndSwap(ctx, name, 0, cas.Sum([]byte(name)), "race")
			var ce *cas.ConflictError
			switch {
			case err == nil:
				fmt.Printf("%d won %s\n", r, name)
			case errors.As(err, &ce):
				fmt.Printf("%d lost %s\n", r, name)
			default:
				return err
			}
		}
		return nil
	case "crash":
		return crashLoop(ctx, dir)
	}
	return fmt.Errorf("unknown helper %q", mode)
}

// raceNames are names that pairwise clash (case, or folder).
func raceNames(r int) []string {
	return []string{
		fmt.Sprintf("race%d/x", r), fmt.Sprintf("RACE%d/X", r), fmt.Sprintf("race%d/x/child", r),
		fmt.Sprintf("Race%d", r), fmt.Sprintf("race%d/X", r),
	}
}

// waitFor polls until path exists.
func waitFor(path string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// helper returns a command that runs this test binary as helper mode, and
// the buffer that collects its standard error.
func helper(t *testing.T, mode, dir, arg string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(testExe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, dirEnv+"="+dir, argEnv+"="+arg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// startReady starts cmd and waits for its "ready" line; the rest of its
// output is returned by the function it returns, once cmd has exited.
func startReady(t *testing.T, cmd *exec.Cmd) (wait func() (string, error)) {
	t.Helper()
	wait, err := start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return wait
}

// start is startReady for any goroutine: it returns an error instead of
// failing the test.
func start(cmd *exec.Cmd) (wait func() (string, error), err error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("helper did not get ready: %q, %v", line, err)
	}
	return func() (string, error) {
		rest, _ := io.ReadAll(br)
		return string(rest), cmd.Wait()
	}, nil
}

func TestMultiProcessIncrements(t *testing.T) {
	procs, goroutines, each := 4, 4, 8
	if testing.Short() {
		each = 4
	}
	s := newStore(t, &disk.Options{Durability: disk.DurabilityNone})
	initCounter(t, s, "counter")
	var cmds []*exec.Cmd
	var errbufs []*bytes.Buffer
	for range procs {
		cmd, stderr := helper(t, "increment", s.Dir(), fmt.Sprint(goroutines, each))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		errbufs = append(errbufs, stderr)
	}
	// This process takes part too.
	if err := increment(t.Context(), s, "counter", goroutines*each); err != nil {
		t.Error(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v: %s", i, err, errbufs[i])
		}
	}
	if t.Failed() {
		return
	}
	checkCounter(t, s, "counter", (procs+1)*goroutines*each)
}

func TestMultiProcessOpenOrCreate(t *testing.T) {
	const procs = 6
	base := t.TempDir()
	dir := filepath.Join(base, "store")
	barrier := filepath.Join(base, "go")
	var waits []func() (string, error)
	var errbufs []*bytes.Buffer
	for range procs {
		cmd, stderr := helper(t, "open-or-create", dir, barrier)
		waits = append(waits, startReady(t, cmd))
		errbufs = append(errbufs, stderr)
	}
	if err := os.WriteFile(barrier, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, wait := range waits {
		if _, err := wait(); err != nil {
			t.Errorf("process %d: %v: %s", i, err, errbufs[i])
		}
	}
	s, err := disk.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := verifyObjects(t, s); n != procs {
		t.Errorf("%d objects, want %d", n, procs)
	}
	if got := tempFiles(t, s); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
}

func TestMultiProcessClashingCreates(t *testing.T) {
	const procs = 6
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	s := newStore(t, nil)
	var waits []func() (string, error)
	var errbufs []*bytes.Buffer
	for p := range procs {
		cmd, stderr := helper(t, "create-ref", s.Dir(), fmt.Sprint(rounds, p))
		waits = append(waits, startReady(t, cmd))
		errbufs = append(errbufs, stderr)
	}
	for r := range rounds {
		os.WriteFile(filepath.Join(s.Dir(), "go-"+strconv.Itoa(r)), nil, 0o644)
		time.Sleep(20 * time.Millisecond)
	}
	won := map[int][]string{}
	for p, wait := range waits {
		out, err := wait()
		if err != nil {
			t.Fatalf("process %d: %v: %s", p, err, errbufs[p])
		}
		for line := range strings.Lines(out) {
			var r int
			var result, name string
			fmt.Sscan(line, &r, &result, &name)
			if result == "won" {
				won[r] = append(won[r], name)
			}
		}
	}
	var refs []string
	for ref, err := range s.Refs().List(t.Context(), "") {
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref.Name)
	}
	for r := range rounds {
		if len(won[r]) != 1 {
			t.Errorf("round %d: winners %v, want exactly one", r, won[r])
			continue
		}
		if !slices.Contains(refs, won[r][0]) {
			t.Errorf("round %d: winner %s is not a ref", r, won[r][0])
		}
	}
	if len(refs) != rounds {
		t.Errorf("refs = %v, want one per round", refs)
	}
}

// crashLoop writes objects and moves refs until it is killed.
func crashLoop(ctx context.Context, dir string) error {
	s, err := disk.OpenOrCreate(dir, nil)
	if err != nil {
		return err
	}
	r := s.Refs()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	data := func() []byte {
		b := make([]byte, 1+rng.IntN(3000))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	fmt.Println("ready")
	for {
		unlock, err := s.Lock(ctx, false)
		if err != nil {
			return err
		}
		var h cas.Hash
		if rng.IntN(3) == 0 {
			batch := make([][]byte, 1+rng.IntN(20))
			for k := range batch {
				batch[k] = data()
			}
			hs, err := s.PutBatch(ctx, batch)
			if err != nil {
				return err
			}
			h = hs[len(hs)-1]
		} else if h, err = s.Put(ctx, data()); err != nil {
			return err
		}
		name := fmt.Sprintf("refs/r%d", rng.IntN(4))
		cur, err := r.Get(ctx, name)
		switch {
		case errors.Is(err, cas.ErrNotFound):
			err = r.CompareAndSwap(ctx, name, 0, h, "create")
		case err != nil:
		case rng.IntN(5) == 0:
			err = r.CompareAndSwap(ctx, name, cur, 0, "delete")
		default:
			err = r.CompareAndSwap(ctx, name, cur, h, "move")
		}
		unlock()
		if err != nil && !errors.Is(err, cas.ErrConflict) { // other helpers move the refs too
			return err
		}
		if rng.IntN(10) == 0 {
			gc, err := s.LockGC(ctx)
			if errors.Is(err, cas.ErrLocked) {
				continue // another helper holds it
			}
			if err != nil {
				return err
			}
			gc()
		}
	}
}

// TestCrashRecovery kills writers at random points (SIGKILL, 0-30 ms after
// they start writing), three at a time on one store, and checks after each
// round that the store recovered.
func TestCrashRecovery(t *testing.T) {
	kills, procs := 51, 3
	if testing.Short() {
		kills = 12
	}
	dir := filepath.Join(t.TempDir(), "store")
	if _, err := disk.Create(dir, nil); err != nil {
		t.Fatal(err)
	}
	for round := 0; round*procs < kills; round++ {
		done := make(chan error, procs)
		for range procs {
			go func() {
				cmd, stderr := helper(t, "crash", dir, "")
				wait, err := start(cmd)
				if err != nil {
					done <- err
					return
				}
				time.Sleep(time.Duration(rand.IntN(31)) * time.Millisecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					done <- err
					return
				}
				out, err := wait()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					err = fmt.Errorf("the helper ended with %v before it was killed: %s%s", err, out, stderr)
				} else {
					err = nil
				}
				done <- err
			}()
		}
		for range procs {
			if err := <-done; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		checkRecovered(t, dir, round)
		if t.Failed() {
			return
		}
	}
}

// checkRecovered reopens a store after a crash and checks its invariants.
func checkRecovered(t *testing.T, dir string, i int) {
	t.Helper()
	opts := &disk.Options{}
	disk.SetStaleTempAge(opts, 0) // no writer is alive: every temp is stale
	s, err := disk.Open(dir, opts)
	if err != nil {
		t.Fatalf("round %d: reopen: %v", i, err)
	}
	ctx := t.Context()
	if got := tempFiles(t, s); len(got) != 0 {
		t.Errorf("round %d: temporary files left after Open: %v", i, got)
	}
	verifyObjects(t, s)
	r := s.Refs()
	live := map[string]bool{}
	for ref, err := range r.List(ctx, "") {
		if err != nil {
			t.Fatalf("round %d: List: %v", i, err)
		}
		live[ref.Name] = true
		if ok, err := s.Has(ctx, ref.Hash); !ok || err != nil {
			t.Errorf("round %d: ref %s points at a missing object %s", i, ref.Name, ref.Hash)
		}
		log, err := r.Log(ctx, ref.Name)
		if err != nil || log[len(log)-1].New != ref.Hash {
			t.Errorf("round %d: ref %s = %s disagrees with its log %+v (%v)", i, ref.Name, ref.Hash, log, err)
		}
	}
	for name, err := range r.Logs(ctx) {
		if err != nil {
			t.Fatalf("round %d: Logs: %v", i, err)
		}
		if live[name] {
			continue
		}
		// A deleted ref's log ends with its deletion, or with a creation
		// the kill interrupted: with no ref file, that line is kept (it
		// looks like a ref file deleted by hand after its creation).
		log, err := r.Log(ctx, name)
		if err != nil || !log[len(log)-1].New.IsZero() && !log[len(log)-1].Old.IsZero() {
			t.Errorf("round %d: deleted ref %s has a log ending %+v (%v)", i, name, log, err)
		}
	}
	checkWatchRecovered(t, r, i)
	lockCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	unlock, err := s.Lock(lockCtx, true)
	if err != nil {
		t.Fatalf("round %d: the store lock is left held: %v", i, err)
	}
	unlock()
	gc, err := s.LockGC(ctx)
	if err != nil {
		t.Fatalf("round %d: the GC lock is left held: %v", i, err)
	}
	gc()
}

// checkWatchRecovered checks that a watch of a store recovered from
// crashes delivers each ref's log once, in order, except the creations
// that a kill interrupted (a log line with no ref file, or followed by
// another creation of the name), and none of the changes that never
// committed.
func checkWatchRecovered(t *testing.T, r *disk.Refs, round int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// A change of a ref of its own marks the end.
	sentinel := fmt.Sprintf("sentinel/%d", round)
	if err := r.CompareAndSwap(ctx, sentinel, 0, 1, "end"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.CompareAndSwap(ctx, sentinel, 1, 0, "done"); err != nil {
			t.Fatal(err)
		}
	}()
	events := map[string][]cas.LogEntry{}
	for e, err := range r.Watch(ctx, "", "") {
		if err != nil {
			t.Fatalf("round %d: Watch: %v", round, err)
		}
		if e.Ref == sentinel {
			break
		}
		if !strings.HasPrefix(e.Ref, "sentinel/") {
			events[e.Ref] = append(events[e.Ref], e.Entry())
		}
	}
	for name, err := range r.Logs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "sentinel/") {
			continue
		}
		log, err := r.Log(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		_, gerr := r.Get(ctx, name)
		live := gerr == nil
		got := events[name]
		j := 0
		for k, e := range log {
			if j < len(got) && got[j] == e {
				j++
				continue
			}
			interrupted := e.Old.IsZero() && (k+1 < len(log) && log[k+1].Old.IsZero() || k == len(log)-1 && !live)
			if !interrupted {
				t.Errorf("round %d: %s: log entry %d %+v was not delivered (events %+v)", round, name, k, e, got)
			}
		}
		if j < len(got) {
			t.Errorf("round %d: %s: events beyond its log: %+v (log %+v)", round, name, got[j:], log)
		}
		delete(events, name)
	}
	for name, evs := range events {
		t.Errorf("round %d: events of %s, which has no log: %+v", round, name, evs)
	}
}

// TestMultiProcessWatch: a watcher is woken by changes another process
// makes, in order, within castest.WatchWakeBound.
func TestMultiProcessWatch(t *testing.T) {
	s := newStore(t, nil)
	r := s.Refs()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	head, err := r.WatchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan cas.Event, 10)
	go func() {
		for e, err := range r.Watch(ctx, "proc/", head) {
			if err != nil {
				return
			}
			got <- e
		}
	}()
	time.Sleep(50 * time.Millisecond) // let it wait
	cmd, stderr := helper(t, "move", s.Dir(), "proc/x")
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v: %s", err, stderr)
	}
	for i, want := range []string{"from another process", "moved by another process"} {
		select {
		case e := <-got:
			if e.Ref != "proc/x" || e.Message != want {
				t.Errorf("event %d = %+v, want %q", i, e, want)
			}
		case <-time.After(castest.WatchWakeBound):
			t.Fatalf("event %d: nothing within %v", i, castest.WatchWakeBound)
		}
	}
}
