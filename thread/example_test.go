package thread_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// exampleEngine opens an engine over a store in memory (store.Open opens
// one on disk or PostgreSQL the same way) and registers the bundled
// review-loop workflow, returning the engine and the workflow's hash.
func exampleEngine(ctx context.Context) (*thread.Engine, cas.Hash) {
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	data, err := fs.ReadFile(examples.FS, "review-loop.yaml")
	if err != nil {
		panic(err)
	}
	w, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		panic(err)
	}
	res, err := registry.New(repo).Put(ctx, w)
	if err != nil {
		panic(err)
	}
	return thread.New(repo, nil), res.Hash
}

// Run starts a thread and steps it to its end; here every role is played by
// the offline synth agent, whose reviewer rejects once.
func ExampleEngine_Run() {
	ctx := context.Background()
	e, wf := exampleEngine(ctx)
	id, results, err := e.Run(ctx, wf, "Add a --json flag", "/", &thread.RunOptions{Agent: "synth"})
	if err != nil {
		panic(err)
	}
	for _, r := range results {
		fmt.Println(strings.Join(strings.Fields(fmt.Sprintln(r.Depth, r.Kind, r.Role, r.Status)), " "))
	}
	info, _ := e.Show(ctx, id)
	fmt.Println(info.Status, info.Depth)
	// Output:
	// 1 step planner done
	// 2 step developer done
	// 3 step reviewer rejected
	// 4 step developer done
	// 5 step reviewer approved
	// 6 done
	// done 6
}

// ForkAt starts a new thread sharing the first steps of another (nothing
// is copied); the fork is then stepped on its own.
func ExampleEngine_ForkAt() {
	ctx := context.Background()
	e, wf := exampleEngine(ctx)
	id, _, err := e.Run(ctx, wf, "Add a --json flag", "/", &thread.RunOptions{Agent: "synth"})
	if err != nil {
		panic(err)
	}
	fork, at, err := e.ForkAt(ctx, id, 2)
	if err != nil {
		panic(err)
	}
	n, _ := e.Node(ctx, at)
	fmt.Println("forked at depth", n.Depth(), "after", n.Step.Role)
	results, err := e.StepN(ctx, fork, 0, &thread.RunOptions{Agent: "synth", Seed: 7})
	if err != nil {
		panic(err)
	}
	last := results[len(results)-1]
	info, _ := e.Show(ctx, fork)
	fmt.Println(info.Status, last.Kind, info.Origin.ForkThread == id)
	// Output:
	// forked at depth 2 after developer
	// done done true
}

// Read renders a thread as markdown, newest entries within a quota of
// characters; Steps lists its chain.
func ExampleEngine_Read() {
	ctx := context.Background()
	e, wf := exampleEngine(ctx)
	id, _, err := e.Run(ctx, wf, "Add a --json flag", "/", &thread.RunOptions{Agent: "synth"})
	if err != nil {
		panic(err)
	}
	r, err := e.Read(ctx, id, thread.ReadOptions{})
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(r.Text, "\n") {
		if strings.HasPrefix(line, "## ") {
			heading, _, _ := strings.Cut(line, " · 20") // without the time
			fmt.Println(heading)
		}
	}
	for n, err := range e.Steps(ctx, id) {
		if err != nil {
			panic(err)
		}
		if n.Step != nil {
			fmt.Print(n.Step.Role, ":", n.Status, " ")
		}
	}
	fmt.Println()
	// Output:
	// ## 0 · start
	// ## 1 · planner · agent synth
	// ## 2 · developer · agent synth
	// ## 3 · reviewer · agent synth
	// ## 4 · developer · agent synth
	// ## 5 · reviewer · agent synth
	// ## 6 · done
	// planner:done developer:done reviewer:rejected developer:done reviewer:approved
}

// Follow watches a thread from its start as it is stepped, here by a
// goroutine; another process stepping it through the same store would be
// seen the same way.
func ExampleEngine_Follow() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, wf := exampleEngine(ctx)
	id, _, err := e.Start(ctx, wf, "Add a --json flag", "/")
	if err != nil {
		panic(err)
	}
	go e.StepN(ctx, id, 0, &thread.RunOptions{Agent: "synth"})
	for n, err := range e.Follow(ctx, id, 0) {
		if err != nil {
			panic(err)
		}
		switch {
		case n.Step != nil:
			fmt.Println(n.Depth(), n.Step.Role, n.Status)
		case n.Mark != nil:
			fmt.Println(n.Depth(), n.Mark.Mark)
		default:
			fmt.Println(n.Depth(), "start")
		}
		if n.Mark != nil && n.Mark.Mark == thread.MarkDone {
			break
		}
	}
	// Output:
	// 0 start
	// 1 planner done
	// 2 developer done
	// 3 reviewer rejected
	// 4 developer done
	// 5 reviewer approved
	// 6 done
}

// A workflow that composes: two planners race, two reviewers review in
// parallel. Each stage is a call, a branch thread per member and a join.
func ExampleEngine_Run_composition() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(ctx, mem, mem.Refs(), nil)
	if err != nil {
		panic(err)
	}
	e := thread.New(repo, nil)
	data, _ := examples.FS.ReadFile("parallel-review.yaml")
	w, err := registry.Parse("parallel-review.yaml", data)
	if err != nil {
		panic(err)
	}
	res, err := e.Registry().Put(ctx, w)
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "uwf-example-")
	defer os.RemoveAll(dir)
	id, _, err := e.Run(ctx, res.Hash, "Add a --json flag", dir, &thread.RunOptions{Agent: "synth"})
	if err != nil {
		panic(err)
	}
	calls, err := e.Calls(ctx, id)
	if err != nil {
		panic(err)
	}
	for _, c := range calls {
		fmt.Printf("%s (%s):", c.Role, c.Mode)
		for _, b := range c.Branches {
			fmt.Printf(" %s", b.Key)
		}
		fmt.Println()
	}
	v, _ := repo.FormatVersion(ctx)
	fmt.Println("format version", v)
	// Output:
	// plan (race): quick-planner careful-planner
	// review (parallel): security-reviewer style-reviewer
	// format version 2
}
