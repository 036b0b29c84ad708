package rwlock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedAndExclusive(t *testing.T) {
	var l RW
	ctx := context.Background()
	u1, err := l.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := l.Lock(ctx, false)
	if err != nil {
		t.Fatal("a second shared holder waited:", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(short, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive while shared held = %v, want a timeout", err)
	}
	u1()
	u1() // idempotent: must not release u2's hold
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if _, err := l.Lock(short2, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive while one shared holder remains = %v, want a timeout", err)
	}
	u2()
	u3, err := l.Lock(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	u3()
}

// TestWriterPreferred: once an exclusive request waits, new shared requests
// queue behind it, so overlapping readers cannot starve it.
func TestWriterPreferred(t *testing.T) {
	var l RW
	ctx := context.Background()
	reader, _ := l.Lock(ctx, false)
	var got atomic.Bool
	go func() {
		u, err := l.Lock(ctx, true)
		if err == nil {
			got.Store(true)
			u()
		}
	}()
	time.Sleep(10 * time.Millisecond) // the writer is waiting
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(short, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a new reader got in ahead of a waiting writer: %v", err)
	}
	reader()
	deadline := time.Now().Add(time.Second)
	for !got.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !got.Load() {
		t.Fatal("the writer never got the lock")
	}
	// A cancelled waiting writer lets readers in again.
	w, _ := l.Lock(ctx, false)
	c, cancel3 := context.WithCancel(ctx)
	done := make(chan error)
	go func() { _, err := l.Lock(c, true); done <- err }()
	time.Sleep(10 * time.Millisecond)
	cancel3()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled writer = %v", err)
	}
	r2, err := l.Lock(ctx, false)
	if err != nil {
		t.Fatal("a reader was kept out by a cancelled writer:", err)
	}
	r2()
	w()
}
