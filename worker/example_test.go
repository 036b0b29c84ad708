package worker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
	"github.com/uncaged/uwf/worker"
)

// A worker in this process runs a queued thread to its end; cancelling its
// context drains it.
func Example() {
	ctx := context.Background()
	mem := cas.NewMemStore(nil)
	repo, _ := cas.Open(ctx, mem, mem.Refs(), nil)
	eng := thread.New(repo, nil)
	w, _ := registry.Parse("solo.yaml", []byte(soloYAML))
	res, _ := eng.Registry().Put(ctx, w)
	id, _, _ := eng.Start(ctx, res.Hash, "task", "/")
	if _, err := eng.Enqueue(ctx, id, thread.EnqueueOptions{Agent: "synth"}); err != nil {
		panic(err)
	}

	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.New(eng, worker.Options{ID: "example", Lease: 5 * time.Second}).Run(wctx) }()
	for {
		info, _ := eng.Show(ctx, id)
		if info.Status == thread.StatusDone && info.Run == nil {
			fmt.Println(info.Status, info.Depth, thread.RunState(info.Run))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	fmt.Println(<-done)
	// Output:
	// done 3 none
	// <nil>
}
