// Command uwf is the command line of the uwf store: it parses flags, calls
// the library and prints. docs/CLI.md describes every command.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run()) }

// run runs the command line in os.Args and returns the exit code.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args)
	stop()
	return exitCode(os.Stderr, err)
}
