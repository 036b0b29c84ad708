// Command uwf is the command line of the uwf store: it parses flags, calls
// the library and prints. docs/CLI.md describes every command.
package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

func main() { os.Exit(run()) }

// run runs the command line in os.Args and returns the exit code.
func run() int {
	ctx := newSignalContext(os.Interrupt, syscall.SIGTERM)
	err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args)
	ctx.stop()
	return exitCode(os.Stderr, err)
}

// signalsAsked reports whether this process asked for SIGINT and SIGTERM
// (TestStartupLazy reads it).
var signalsAsked atomic.Bool

// signalContext is the context a command runs under: cancelled by the
// signals it was made with, as signal.NotifyContext's is, but it asks the
// runtime for them only when the command first consults it (Done, Err,
// AfterFunc, or deriving a context from it, which calls one of those).
// signal.Notify starts two OS threads (the runtime's signal-mask thread,
// locked, and the template thread), which cost every start about as much
// as a hello-world's whole run on a loaded machine (issue 13); a command
// that never looks at its context (--version, --help, completion) has
// nothing to stop gracefully. Until the first look a signal has its default
// action, as it has before main: the process ends, and the store is as
// crash-safe as against SIGKILL.
type signalContext struct {
	context.Context // Background: no deadline, no values
	sigs            []os.Signal

	once      sync.Once
	notified  context.Context
	stopWatch context.CancelFunc
}

func newSignalContext(sigs ...os.Signal) *signalContext {
	return &signalContext{Context: context.Background(), sigs: sigs}
}

// watch asks for the signals, once, and returns the context they cancel.
func (c *signalContext) watch() context.Context {
	c.once.Do(func() {
		signalsAsked.Store(true)
		c.notified, c.stopWatch = signal.NotifyContext(context.Background(), c.sigs...)
	})
	return c.notified
}

func (c *signalContext) Done() <-chan struct{} { return c.watch().Done() }
func (c *signalContext) Err() error            { return c.watch().Err() }

// AfterFunc lets context.WithCancel and context.AfterFunc on c register
// with the signals' context instead of starting a goroutine each.
func (c *signalContext) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.watch(), f)
}

// stop stops the signals' delivery, if they were asked for; c is not
// watched after it.
func (c *signalContext) stop() {
	c.once.Do(func() { c.notified = context.Background() })
	if c.stopWatch != nil {
		c.stopWatch()
	}
}
