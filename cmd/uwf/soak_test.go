package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// The GC soak test: writer processes of four kinds work on one store while
// the test runs "uwf cas gc" over and over, at the default grace, with
// --grace 0, and with --grace 0 --log-retention 0; afterwards fsck finds
// nothing wrong (above all, no missing edge or ref target).
//
// The CI variant runs each backend for soakCI (the writers' time, plus
// setup and the final checks: well under 60 s under -race on two cores);
// UWF_SOAK=1 runs the full size (two writers of each kind for soakFull),
// and UWF_SOAK=<duration> (say 20m) for that long.
const (
	soakCI   = 8 * time.Second
	soakFull = 3 * time.Minute
)

// soakKinds are the writer processes' kinds:
//
//	fork   start a thread, step it, fork it at depth 1, step the fork to the
//	       end, remove the original (the fork shares its first nodes)
//	notes  put notes linking old, unreferenced content (and the previous
//	       note), half of them then named by a ref
//	refs   move refs onto old nodes (notes and content it put long ago),
//	       delete some
//	run    run threads to the end, remove every other one
//
// Start prompts repeat, so threads of different processes share start
// nodes.
var soakKinds = []string{"fork", "notes", "refs", "run"}

const soakNoteSchema = `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string","format":"cas_ref"},` +
	`"links":{"type":"array","items":{"type":"string","format":"cas_ref"}}},"required":["title","body"],"additionalProperties":false}`

// soakWorker is a writer process (UWF_TEST_SOAK=<kind>): args are the
// store, the worker's number and the deadline (Unix ms). What a writer may
// meet is part of the game: GC taking a node this writer had not named by
// a ref (with --grace 0 a node put but not yet named may go, and so may old
// content nothing names), seen as a *cas.EdgeError from a Put linking it or
// as the failed touch of a ref move onto it (see gcTook); and losing a race
// (cas.ErrConflict, thread.ErrNotActive). Any other error, above all a
// node of a committed thread going missing while StepN or ForkAt reads it,
// ends the process with status 1. It prints "<ops> <lost> <conflicts>".
func soakWorker(kind string, args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("soak worker: want store, number and deadline, got %q", args)
	}
	store := args[0]
	w, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	ms, err := strconv.ParseInt(args[2], 10, 64)
	if err != nil {
		return err
	}
	deadline := time.UnixMilli(ms)
	ctx := context.Background()
	repo, closeStore, err := workerSession(os.Getenv("UWF_HOME"), store).open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := thread.New(repo, nil)
	rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	wf, err := repo.Refs().Get(ctx, "workflows/review-loop")
	if err != nil {
		return err
	}
	note, err := repo.Refs().Get(ctx, "schemas/soaknote")
	if err != nil {
		return err
	}
	opts := &thread.RunOptions{Agent: "synth"}
	var ops, lost, conflicts int
	// tally sorts an operation's outcome; it returns the error to stop on.
	tally := func(err error) error {
		var gl *gcLoss
		switch {
		case err == nil:
			ops++
		case errors.As(err, &gl):
			lost++
		case errors.Is(err, cas.ErrConflict), errors.Is(err, thread.ErrNotActive):
			conflicts++
		default:
			return err
		}
		return nil
	}
	content := func(i int) (cas.Hash, error) {
		return repo.Put(ctx, cas.ContentSchema, fmt.Sprintf("soak content %d of %s", i, kind))
	}
	// Old content, put once at the start and named by nothing.
	pool := make([]cas.Hash, 16)
	for i := range pool {
		if pool[i], err = content(i); err != nil {
			return err
		}
	}
	var lastNote cas.Hash
	for n := 0; time.Now().Before(deadline); n++ {
		var err error
		switch kind {
		case "fork":
			var id, fork string
			id, _, err = e.Start(ctx, wf, fmt.Sprintf("soak prompt %d", n%3), "/")
			err = gcTook(err, nil, true)
			if err == nil {
				_, err = e.StepN(ctx, id, 2, opts)
				err = gcTook(err, stepEdge, true)
			}
			if err == nil {
				// The node forked from is the thread's: named, never lost.
				fork, _, err = e.ForkAt(ctx, id, 1)
			}
			if err == nil {
				_, err = e.StepN(ctx, fork, 0, opts)
				err = gcTook(err, stepEdge, true)
			}
			if err == nil {
				err = e.Remove(ctx, id)
			}
		case "notes":
			i := rnd.IntN(len(pool))
			p := map[string]any{"title": fmt.Sprintf("note %d", n), "body": pool[i].String()}
			if !lastNote.IsZero() && n%2 == 0 {
				p["links"] = []any{lastNote.String()}
			}
			var h cas.Hash
			h, err = repo.Put(ctx, note, p)
			// The body and the last note may be named by nothing; the
			// schema is named by its ref.
			err = gcTook(err, func(path string) bool { return path == "payload/body" || path == "payload/links/0" }, false)
			if errors.As(err, new(*gcLoss)) {
				// GC took the content (or the last note): put it again.
				lastNote = 0
				if pool[i], err = content(i); err == nil {
					err = &gcLoss{errors.New("the content or the last note")}
				}
			}
			if err == nil {
				lastNote = h
				if n%2 == 0 {
					name := fmt.Sprintf("soak/notes/%d-%d", w, n%5)
					err = gcTook(moveRef(ctx, repo, name, h), nil, true)
				}
			}
		case "refs":
			name := fmt.Sprintf("soak/refs/%d-%d", w, n%4)
			if n%7 == 6 {
				err = moveRef(ctx, repo, name, 0)
			} else {
				err = gcTook(moveRef(ctx, repo, name, pool[rnd.IntN(len(pool))]), nil, true)
			}
			if errors.As(err, new(*gcLoss)) {
				i := rnd.IntN(len(pool))
				if pool[i], err = content(i); err == nil {
					err = &gcLoss{errors.New("old content")}
				}
			}
		case "run":
			var id string
			id, _, err = e.Run(ctx, wf, fmt.Sprintf("soak prompt %d", n%3), "/", opts)
			err = gcTook(err, stepEdge, true)
			if err == nil && n%2 == 1 {
				err = e.Remove(ctx, id)
			}
		default:
			return fmt.Errorf("soak worker: unknown kind %q", kind)
		}
		if err := tally(err); err != nil {
			return fmt.Errorf("%s worker %d, operation %d: %w", kind, w, n, err)
		}
	}
	fmt.Println(ops, lost, conflicts)
	return nil
}

// gcLoss is an error a writer legitimately meets while GC runs: GC took a
// node the writer had not named by a ref.
type gcLoss struct{ err error }

func (e *gcLoss) Error() string { return "lost to GC: " + e.err.Error() }
func (e *gcLoss) Unwrap() error { return e.err }

// gcTook returns err as a *gcLoss if it is GC taking a node the writer had
// not named: a *cas.EdgeError whose path edge accepts (nil: none), or, if
// move, the failed touch of a ref move's new target (a node the writer put
// but had not yet named, or old content). Any other error, a missing node
// read by Get above all, is returned as it is.
func gcTook(err error, edge func(path string) bool, move bool) error {
	var ee *cas.EdgeError
	var oe *cas.ObjectError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		if edge != nil && edge(ee.Path) {
			return &gcLoss{err}
		}
	case move && errors.As(err, &oe) && oe.Op == "touch" && errors.Is(oe.Err, cas.ErrNotFound):
		return &gcLoss{err}
	}
	return err
}

// stepEdge reports whether an edge at path of a node a step or start puts
// points at a node the same step put and has not named yet (its output,
// detail, prompt, raw output, stderr, failed attempts), not at the
// thread's named chain (prev, start, skip) or workflow, or the node's type.
func stepEdge(path string) bool {
	switch path {
	case "payload/output", "payload/detail", "payload/prompt", "payload/raw", "payload/stderr":
		return true
	}
	return strings.HasPrefix(path, "payload/attempts/")
}

// moveRef sets ref name to h (zero: deletes it), whatever it held.
func moveRef(ctx context.Context, repo *cas.Repo, name string, h cas.Hash) error {
	cur, err := repo.Refs().Get(ctx, name)
	switch {
	case errors.Is(err, cas.ErrNotFound):
		cur = 0
	case err != nil:
		return err
	}
	if cur == h {
		return nil
	}
	return repo.Refs().CompareAndSwap(ctx, name, cur, h, "soak")
}

// soakSize reads UWF_SOAK: the writers per kind and how long they write.
func soakSize(t *testing.T) (perKind int, d time.Duration) {
	t.Helper()
	switch v := os.Getenv("UWF_SOAK"); v {
	case "":
		if testing.Short() {
			return 1, soakCI / 2
		}
		return 1, soakCI
	case "1":
		return 2, soakFull
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("UWF_SOAK=%q: want 1 or a duration such as 20m", v)
		}
		return 2, d
	}
}

func soak(t *testing.T, store string) {
	ctx := t.Context()
	home := t.TempDir()
	perKind, d := soakSize(t)
	repo, closeStore, err := workerSession(home, store).open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	data, _ := examples.FS.ReadFile("review-loop.yaml")
	wf, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	e := thread.New(repo, nil)
	if _, err := e.Registry().Put(ctx, wf); err != nil {
		t.Fatal(err)
	}
	doc, err := cas.ParseJSON([]byte(soakNoteSchema))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.PutSchema(ctx, "soaknote", doc); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(d)
	type worker struct {
		name string
		cmd  *exec.Cmd
		out  bytes.Buffer
	}
	var workers []*worker
	for i := range perKind * len(soakKinds) {
		kind := soakKinds[i%len(soakKinds)]
		wk := &worker{name: fmt.Sprintf("%s worker %d", kind, i)}
		wk.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$", store, strconv.Itoa(i), strconv.FormatInt(deadline.UnixMilli(), 10))
		wk.cmd.Env = append(os.Environ(), "UWF_TEST_SOAK="+kind, "UWF_HOME="+home)
		wk.cmd.Stdout, wk.cmd.Stderr = &wk.out, &wk.out
		if err := wk.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, wk)
	}

	// GC, over and over, in other processes, until the writers are done;
	// then once more of each kind.
	gcArgs := [][]string{nil, {"--grace", "0"}, {"--grace", "0", "--log-retention", "0"}}
	runGC := func(k int) {
		args := append([]string{"--store", store, "--log-level", "debug", "cas", "gc"}, gcArgs[k%len(gcArgs)]...)
		r := runProcess(t, uwfProcess(t, home, args...))
		if r.code != 0 {
			log := r.stderr
			if len(log) > 8000 {
				log = "...\n" + log[len(log)-8000:]
			}
			t.Errorf("uwf %s: exit %d\nstdout:\n%s\nstderr (the decision log's end):\n%s", strings.Join(args, " "), r.code, r.stdout, log)
		}
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	gcs := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; ; k++ {
			select {
			case <-done:
				return
			default:
			}
			runGC(k)
			gcs++
		}
	}()
	for _, wk := range workers {
		if err := wk.cmd.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", wk.name, err, wk.out.String())
			continue
		}
		var ops, lost, conflicts int
		if _, err := fmt.Sscan(wk.out.String(), &ops, &lost, &conflicts); err != nil {
			t.Errorf("%s printed %q", wk.name, wk.out.String())
		}
		t.Logf("%s: %d operations, %d lost a node to GC, %d lost a race", wk.name, ops, lost, conflicts)
		if ops == 0 {
			t.Errorf("%s did nothing", wk.name)
		}
	}
	close(done)
	wg.Wait()
	for k := range gcArgs {
		runGC(k)
	}
	t.Logf("%d GC runs while %d writers wrote for %s", gcs, len(workers), d)
	if gcs < 2 {
		t.Errorf("only %d GC runs overlapped the writers", gcs)
	}

	rep, err := repo.Fsck(ctx, thread.FsckOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
	t.Logf("fsck: %d objects, %d refs", rep.Objects, rep.Refs)
}

// TestSoakGCDisk: writer processes and repeated GC on one disk store.
func TestSoakGCDisk(t *testing.T) {
	soak(t, filepath.Join(t.TempDir(), "store"))
}

// TestSoakGCPostgres: the same on one PostgreSQL store.
func TestSoakGCPostgres(t *testing.T) {
	soak(t, freshSchema(postgresURL(t)))
}

// TestSoakLossesAccepted: the soak writers accept as "lost to GC" only the
// errors GC may legitimately cause; a missing node of a named chain, or
// any node a read misses, fails the soak.
func TestSoakLossesAccepted(t *testing.T) {
	const h = cas.Hash(12345)
	touch := fmt.Errorf("move ref threads/X to %s: %w", h, &cas.ObjectError{Op: "touch", Hash: h, Err: cas.ErrNotFound})
	get := fmt.Errorf("thread X: head: %w", &cas.ObjectError{Op: "get", Hash: h, Err: cas.ErrNotFound})
	edge := func(path string) error { return fmt.Errorf("put step: %w", &cas.EdgeError{Edge: h, Path: path}) }
	for _, tc := range []struct {
		name string
		err  error
		edge func(string) bool
		move bool
		lost bool
	}{
		{"none", nil, stepEdge, true, false},
		{"a step's fresh output", edge("payload/output"), stepEdge, true, true},
		{"a fresh failed attempt", edge("payload/attempts/2"), stepEdge, true, true},
		{"the thread's head", edge("payload/prev"), stepEdge, true, false},
		{"a skip pointer", edge("payload/skip/0"), stepEdge, true, false},
		{"the start", edge("payload/start"), stepEdge, true, false},
		{"the workflow", edge("payload/workflow"), stepEdge, true, false},
		{"the type", edge("type"), stepEdge, true, false},
		{"an edge where none may go", edge("payload/output"), nil, true, false},
		{"a ref move's fresh target", touch, stepEdge, true, true},
		{"a fork's target", touch, nil, false, false},
		{"a read of a committed node", get, stepEdge, true, false},
		{"a bare not found", cas.ErrNotFound, stepEdge, true, false},
		{"a conflict", &cas.ConflictError{Name: "threads/X"}, stepEdge, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gcTook(tc.err, tc.edge, tc.move)
			var gl *gcLoss
			if lost := errors.As(got, &gl); lost != tc.lost || !errors.Is(got, tc.err) && tc.err != nil {
				t.Errorf("gcTook(%v) = %v: lost %v, want %v (and the error kept)", tc.err, got, lost, tc.lost)
			}
		})
	}
}
