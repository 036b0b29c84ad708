//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// echoSpyContext records whether the terminal tty still echoed when the
// context was first consulted: the moment uwf asks for SIGINT and SIGTERM
// (see signalContext).
type echoSpyContext struct {
	context.Context
	tty  *os.File
	once sync.Once
	echo bool
}

func (c *echoSpyContext) look() {
	c.once.Do(func() {
		if t, err := unix.IoctlGetTermios(int(c.tty.Fd()), unix.TCGETS); err == nil {
			c.echo = t.Lflag&unix.ECHO != 0
		}
	})
}

func (c *echoSpyContext) Done() <-chan struct{} { c.look(); return c.Context.Done() }
func (c *echoSpyContext) Err() error            { c.look(); return c.Context.Err() }

// TestSecretWatchesSignalsBeforeRawMode checks that the key prompt
// consults its context, so that uwf takes over SIGINT and SIGTERM, before
// it puts the terminal in raw mode: a signal with its default action in
// between would end uwf with the terminal left without echo.
func TestSecretWatchesSignalsBeforeRawMode(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pseudo-terminal:", err)
	}
	defer master.Close()
	defer tty.Close()
	go io.WriteString(master, "sk-x\r")
	ctx := &echoSpyContext{Context: context.Background(), tty: tty}
	p := &prompter{ctx: ctx, in: tty, out: io.Discard}
	got, err := p.secret("API key: ")
	if err != nil || got != "sk-x" {
		t.Fatalf("secret = %q, %v; want sk-x", got, err)
	}
	if !ctx.echo {
		t.Errorf("the key prompt first consulted its context with the terminal in raw mode: a signal before that ends uwf without restoring it")
	}
}
