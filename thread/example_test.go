package thread_test

import (
	"context"
	"fmt"
	"os"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

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
