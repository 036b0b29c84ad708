//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignalContext checks the context commands run under: a signal it was
// made with cancels it, and every context derived from it, once it has been
// consulted; stopped before that, it never asks for the signal.
func TestSignalContext(t *testing.T) {
	t.Run("signal cancels", func(t *testing.T) {
		c := newSignalContext(syscall.SIGUSR1)
		defer c.stop()
		if err := c.Err(); err != nil { // asks for the signal
			t.Fatalf("a fresh context: Err() = %v", err)
		}
		child, cancel := context.WithCancel(c)
		defer cancel()
		after := make(chan struct{})
		context.AfterFunc(c, func() { close(after) })
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			name string
			ch   <-chan struct{}
		}{{"the context", c.Done()}, {"a derived context", child.Done()}, {"an AfterFunc", after}} {
			select {
			case <-w.ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s was not cancelled by SIGUSR1", w.name)
			}
		}
		if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
			t.Errorf("after SIGUSR1: Err() = %v, derived %v; want context.Canceled", c.Err(), child.Err())
		}
	})
	t.Run("stopped unconsulted", func(t *testing.T) {
		c := newSignalContext(syscall.SIGUSR2)
		c.stop()
		if c.Done() != nil || c.Err() != nil {
			t.Errorf("a context stopped before any use: Done() = %v, Err() = %v; want nil, nil (never cancelled)", c.Done(), c.Err())
		}
		if c.notified != context.Background() {
			t.Errorf("a context stopped before any use asked for its signal")
		}
	})
}
