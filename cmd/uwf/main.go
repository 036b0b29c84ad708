// Command uwf is the command line of the uwf store: it parses flags, calls
// the library and prints. docs/CLI.md describes every command.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args)
	stop()
	os.Exit(exitCode(os.Stderr, err))
}
