package wake

import (
	"sync"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestSignal: a channel taken before a Broadcast is closed by it, one
// taken after is not, and many waiters all wake.
func TestSignal(t *testing.T) {
	var s Signal
	s.Broadcast() // nobody waits: nothing to close, no panic
	before := s.Wait()
	if closed(before) {
		t.Fatal("a fresh channel is closed")
	}
	s.Broadcast()
	if !closed(before) {
		t.Fatal("Broadcast did not close the channel taken before it")
	}
	if after := s.Wait(); closed(after) {
		t.Fatal("a channel taken after Broadcast is already closed")
	}
	var wg sync.WaitGroup
	for range 50 {
		ch := s.Wait()
		wg.Go(func() {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Error("a waiter was not woken")
			}
		})
	}
	s.Broadcast()
	wg.Wait()
}
