package thread_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// A process that runs a thread without the queue (a parallel branch's
// runner, say) takes a lease with Acquire, keeps it while it works, and
// gives it back; a second holder is refused while the lease lasts.
func ExampleEngine_Acquire() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, _ := cas.Open(ctx, mem, mem.Refs(), nil)
	eng := thread.New(repo, nil)
	wf, _ := repo.Put(ctx, cas.WorkflowSchema, map[string]any{"name": "w", "roles": map[string]any{}, "graph": map[string]any{}})
	id, _, _ := eng.Start(ctx, wf, "task", "/tmp")

	l, err := eng.Acquire(ctx, id, "runner-1", nil)
	if err != nil {
		panic(err)
	}
	lctx, stop := l.Keep(ctx) // renewed in the background; lctx ends if the lease is lost
	_ = lctx                  // step the thread under lctx: commits are fenced by the lease

	var held *thread.LeaseHeldError
	_, err = eng.Claim(ctx, id, "runner-2", nil)
	fmt.Println("second holder refused:", errors.As(err, &held), held.Worker)

	stop()
	fmt.Println("released:", l.Release(ctx, "done") == nil)
	run, _ := eng.RunOf(ctx, id)
	fmt.Println("run:", thread.RunState(run))
	// Output:
	// second holder refused: true runner-1
	// released: true
	// run: none
}

// Queue a thread for workers, and see its run apart from its status.
func ExampleEngine_Enqueue() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, _ := cas.Open(ctx, mem, mem.Refs(), nil)
	eng := thread.New(repo, nil)
	wf, _ := repo.Put(ctx, cas.WorkflowSchema, map[string]any{"name": "w", "roles": map[string]any{}, "graph": map[string]any{}})
	id, _, _ := eng.Start(ctx, wf, "task", "/tmp")

	if _, err := eng.Enqueue(ctx, id, thread.EnqueueOptions{Agent: "synth"}); err != nil {
		panic(err)
	}
	info, _ := eng.Show(ctx, id)
	fmt.Println(info.Status, thread.RunState(info.Run), info.Run.Agent)
	v, _ := repo.FormatVersion(ctx)
	fmt.Println("format version", v)
	// Output:
	// active queued synth
	// format version 2
}
