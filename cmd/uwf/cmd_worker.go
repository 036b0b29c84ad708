package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
	"github.com/uncaged/uwf/worker"
)

// workerCommand is "uwf worker": the long-running claim loop, and the
// store-wide maxRunning of a workflow.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run queued threads from the store, with others, until stopped",
		Description: `Claims queued threads (thread start --queue, run --detach, queue) under a
lease and steps each until it is done, suspended or failed, then takes the
next. Workers on any number of machines may share a store (PostgreSQL for
many machines); each takes only threads whose working folder exists on its
machine and whose agents it can build, and records on the others why
(thread show). A failed step is retried with backoff (--retries times,
from --backoff, doubling), then the run is failed. A run taken over more
than --max-takeovers times (every worker running it died or froze: an
agent that kills or hangs its worker) is failed too; thread queue queues
it again. SIGTERM or SIGINT
drains: no new claims, running steps finish up to --drain, then what runs
is ended and handed back to the queue; exit 0. Logs (structured, stderr)
at info unless --log-level says otherwise.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "run up to `N` threads at once", Value: 1},
			&cli.StringSliceFlag{Name: "workflow", Usage: "take only threads of workflow `W` (repeatable)"},
			&cli.DurationFlag{Name: "lease", Usage: "the lease length `D`, renewed every third", Value: thread.DefaultLeaseLength},
			&cli.IntFlag{Name: "retries", Usage: "retry a failed step `N` times before failing the run", Value: worker.DefaultRetries},
			&cli.IntFlag{Name: "max-takeovers", Usage: "fail a run taken over more than `N` times (0: never)", Value: thread.DefaultMaxTakeovers},
			&cli.DurationFlag{Name: "backoff", Usage: "the first retry's delay `D`, doubled at each failure", Value: worker.DefaultBackoff},
			&cli.DurationFlag{Name: "drain", Usage: "on SIGTERM, let running steps finish for up to `D`", Value: worker.DefaultDrain},
			&cli.StringFlag{Name: "id", Usage: "the worker's name `ID` in leases and logs (default: host-pid-random)"},
			&cli.StringFlag{Name: "agent", Usage: "the agent `A` of runs queued without one (default: the config's)"},
		},
		Subcommands: []*cli.Command{
			{
				Name:      "max-running",
				Usage:     "show or set a workflow's cap on running threads, for every worker",
				ArgsUsage: "<workflow> [N]",
				Description: `With N, sets the cap: N slot refs slots/<workflow>/0..N-1 in the store, each
taken and given back by compare-and-swap, so every worker sharing the store
obeys it (0 removes it). Without N, prints the cap (0: none).`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 2, "<workflow> [N]"); err != nil {
						return err
					}
					return runMaxRunning(c, s)
				}),
			},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			return runWorker(c, s)
		}),
	}
}

func runWorker(c *cli.Context, s *session) error {
	ctx := c.Context
	if n := c.Int("concurrency"); n < 1 || n > 1000 {
		return usageErrorf(s.cmd, "invalid --concurrency %d: want 1 to 1000", n)
	}
	if d := c.Duration("lease"); d < time.Second {
		return usageErrorf(s.cmd, "invalid --lease %s: want at least 1s", d)
	}
	if c.Int("retries") < 0 {
		return usageErrorf(s.cmd, "invalid --retries %d: want 0 or more", c.Int("retries"))
	}
	if c.Int("max-takeovers") < 0 {
		return usageErrorf(s.cmd, "invalid --max-takeovers %d: want 0 (no cap) or more", c.Int("max-takeovers"))
	}
	if c.Duration("backoff") <= 0 || c.Duration("drain") <= 0 {
		return usageErrorf(s.cmd, "--backoff and --drain must be positive")
	}
	for _, wf := range c.StringSlice("workflow") {
		if !registry.ValidName(wf) {
			return usageErrorf(s.cmd, "invalid --workflow %q: not a workflow name", wf)
		}
	}
	log := s.serviceLog(c)
	opts, err := runOptions(c, s, nil)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	retries := c.Int("retries")
	if retries == 0 {
		retries = -1 // none
	}
	maxTakeovers := c.Int("max-takeovers")
	if maxTakeovers == 0 {
		maxTakeovers = -1 // no cap
	}
	w := worker.New(s.engine(repo), worker.Options{
		ID: c.String("id"), Build: strings.Trim(version(), "()"), Concurrency: c.Int("concurrency"), Workflows: c.StringSlice("workflow"),
		Lease: c.Duration("lease"), Retries: retries, MaxTakeovers: maxTakeovers, Backoff: c.Duration("backoff"), Drain: c.Duration("drain"),
		Run: *opts, Logger: log,
	})
	log.Info("store", "url", s.printableStoreURL())
	return w.Run(ctx)
}

func runMaxRunning(c *cli.Context, s *session) error {
	ctx, w := c.Context, c.App.Writer
	wf := c.Args().Get(0)
	if !registry.ValidName(wf) {
		return usageErrorf(s.cmd, "invalid workflow %q: not a workflow name", wf)
	}
	n := -1
	if c.NArg() == 2 {
		v, err := strconv.Atoi(c.Args().Get(1))
		if err != nil || v < 0 || v > thread.MaxMaxRunning {
			return usageErrorf(s.cmd, "invalid N %q: want 0 to %d", c.Args().Get(1), thread.MaxMaxRunning)
		}
		n = v
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	if n >= 0 {
		if err := e.SetMaxRunning(ctx, wf, n); err != nil {
			return err
		}
	}
	got, err := e.MaxRunning(ctx, wf)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, map[string]any{"workflow": wf, "maxRunning": got})
	}
	_, err = fmt.Fprintf(w, "%s maxRunning %d\n", wf, got)
	return err
}
