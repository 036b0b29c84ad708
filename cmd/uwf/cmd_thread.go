package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/progress"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
	"github.com/uncaged/uwf/worker"
)

// threadCommand is "uwf thread": start, step, inspect, fork and replay
// threads.
func threadCommand() *cli.Command {
	// The built-in agents as package agent lists them: "human, llm, ... or synth".
	builtins := agent.Builtins().String()
	if i := strings.LastIndex(builtins, ", "); i >= 0 {
		builtins = builtins[:i] + " or " + builtins[i+len(", "):]
	}
	agentFlag := &cli.StringFlag{Name: "agent", Usage: "run every role with agent `A` (a configured agent, " + builtins + ")"}
	seedFlag := &cli.Int64Flag{Name: "seed", Usage: "seed `N` of the synth agent"}
	inputFlag := &cli.StringFlag{Name: "input", Usage: "the human agent's answer, from `FILE` (for scripts)"}
	queueFlag := &cli.BoolFlag{Name: "queue", Usage: "queue it for workers (uwf worker), at runs/<thread>"}
	// start and run take the same thread flags; run adds the step loop's.
	startFlags := func(more ...cli.Flag) []cli.Flag {
		return append([]cli.Flag{
			&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "the task, `TEXT` (- reads stdin)"},
			&cli.StringFlag{Name: "cwd", Usage: "agents' working `DIR`"},
		}, more...)
	}
	return &cli.Command{
		Name:  "thread",
		Usage: "start, step, inspect, fork and replay threads",
		Subcommands: []*cli.Command{
			{
				Name:      "start",
				Usage:     "start a thread (runs nothing)",
				ArgsUsage: "<workflow> -p <prompt>",
				Description: `The workflow is a file (validated and registered first), a registered name,
or a hash. Stores the start node, creates threads/<id> and prints the id.
--cwd sets the folder agents run in (default: the current one). --queue
also queues it for "uwf worker"s (runs/<id>), with --agent if given.
--key K starts at most one thread per key (for cron jobs and retried
scripts): the thread is recorded under the ref keys/<K>; when K is taken,
the thread started under it is printed and nothing is started (with
--queue, a thread the key's first start left unqueued and unstepped is
queued). rm of the thread frees K.`,
				Flags: startFlags(agentFlag, queueFlag, &cli.StringFlag{Name: "key", Usage: "start once per key `K`: if a thread was started under K, print it and start nothing"}),
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<workflow>"); err != nil {
						return err
					}
					return runThreadStart(c, s, false)
				}),
			},
			{
				Name:      "run",
				Usage:     "start a thread and step it until done, suspended or failed",
				ArgsUsage: "<workflow> -p <prompt>",
				Description: `Like start, then step until the thread is done, suspended or a step fails,
printing a line per step (a live line on a terminal; with --json one event
per line). The step limit (the workflow's maxSteps, 100 without one)
suspends the thread with a "limit" line (event) and exits 1. An agent that
cannot run (--agent unknown, no agent for a role) is refused before the
thread is created. --detach queues the thread for "uwf worker"s instead of
running it here (as start --queue) and prints its id.`,
				Flags: startFlags(agentFlag, seedFlag, inputFlag, &cli.BoolFlag{Name: "detach", Usage: "queue it for workers instead of running it here"}),
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<workflow>"); err != nil {
						return err
					}
					return runThreadStart(c, s, true)
				}),
			},
			{
				Name:      "step",
				Usage:     "run the next step(s) of a thread",
				ArgsUsage: "<thread>",
				Description: `One cycle: moderator -> agent -> extract -> store -> move the head. -n N runs
up to N cycles (0: until done, suspended or failed). A failed step moves
nothing and records a failure node (see show). The step limit (the
workflow's maxSteps, 100 without one) suspends the thread with a "limit"
line (event) and exits 1. Exit 4 if the thread moved meanwhile, or if a
worker holds its lease (the error names the worker; --force steps anyway,
and the head's compare-and-swap still keeps the two from both committing).`,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "n", Usage: "run up to `N` steps (0: until the thread stops)", Value: 1},
					agentFlag, seedFlag, inputFlag,
					&cli.BoolFlag{Name: "force", Usage: "step even if a worker holds the thread's lease"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					if c.Int("n") < 0 {
						return usageErrorf(s.cmd, "invalid -n %d: want 0 or more", c.Int("n"))
					}
					return runThreadStep(c, s, c.Args().First(), c.Int("n"))
				}),
			},
			{
				Name:        "show",
				Usage:       "show a thread's status, workflow, depth, head, origin and last failure",
				ArgsUsage:   "<thread>",
				Description: `With --json, an object with the same fields.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadShow(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:  "list",
				Usage: "list threads, newest first",
				Description: `Prints "<id> <status> <run> <depth> <workflow> <created>" per thread, newest
first: the status is the head's (active, done, killed, suspended), the run
the work queue's (queued, running, retrying, failed, none). On a terminal,
a table instead: a header, the age and the prompt's first line, the newest
20 unless --limit is given. --status keeps the threads whose status or run
is S, --workflow one workflow (a name or a version's hash), --since the
threads created since T (a duration ago: 90m, 24h, 7d; a date,
2026-11-25, UTC; or a time, 2026-11-25T06:00:00Z). Branch threads (those a
call runs) are listed under their parent, not on their own; --parent P
lists P's children instead: the branches of every call on its chain, joined
ones too, newest call first.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "status", Usage: "only threads whose status or run is `S`"},
					&cli.StringFlag{Name: "workflow", Usage: "only threads of workflow `W` (a name or a version's hash)"},
					&cli.StringFlag{Name: "since", Usage: "only threads created since `T` (24h, 7d, 2026-11-25, 2026-11-25T06:00:00Z)"},
					&cli.IntFlag{Name: "limit", Usage: "at most `N` threads (0: all)"},
					&cli.IntFlag{Name: "offset", Usage: "skip the first `N`"},
					&cli.StringFlag{Name: "parent", Usage: "only the children of thread `P`, joined ones too"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 0, ""); err != nil {
						return err
					}
					opts := thread.ListOptions{Status: c.String("status"), Limit: c.Int("limit"), Offset: c.Int("offset")}
					if wf := c.String("workflow"); wf != "" {
						if h, err := cas.ParseHash(wf); err == nil {
							opts.Workflow = h.String()
						} else if registry.ValidName(wf) {
							opts.Workflow = wf
						} else {
							return usageErrorf(s.cmd, "invalid --workflow %q: want a workflow name or a hash", wf)
						}
					}
					if since := c.String("since"); c.IsSet("since") {
						t, err := parseSince(since, s.clock())
						if err != nil {
							return usageErrorf(s.cmd, "invalid --since %q: %v", since, err)
						}
						opts.Since = t
					}
					if c.IsSet("parent") {
						if c.IsSet("since") {
							return usageErrorf(s.cmd, "--parent and --since do not go together: a thread's children are listed by its calls")
						}
						id, err := threadArg(s, c.String("parent"))
						if err != nil {
							return err
						}
						opts.Parent = id
					}
					if err := thread.CheckListStatus(opts.Status); err != nil {
						return usageErrorf(s.cmd, "invalid --status %q: %v", opts.Status, err)
					}
					if opts.Limit < 0 || opts.Offset < 0 {
						return usageErrorf(s.cmd, "--limit and --offset must not be negative")
					}
					return runThreadList(c.Context, c.App.Writer, s, opts, c.IsSet("limit"))
				}),
			},
			{
				Name:      "steps",
				Usage:     "list a thread's chain, oldest first",
				ArgsUsage: "<thread>",
				Description: `Prints "<depth> <hash> <kind> <details>" per chain node: the start, each step
(role, agent, output status) and each mark (kind, reason).`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadSteps(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "read",
				Usage:     "render a thread as markdown",
				ArgsUsage: "<thread>",
				Description: `Prints the thread for people and agents: each step's role, edge prompt, output
and body, newest kept within --quota characters, with a hint line naming the
--before hash that pages back. With --json, {"text","shown","more","oldest"}.`,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "quota", Usage: "keep about `N` characters of entries", Value: thread.DefaultQuota},
					&cli.StringFlag{Name: "before", Usage: "show what is older than chain node `H`"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					opts := thread.ReadOptions{Quota: c.Int("quota")}
					if c.Int("quota") <= 0 {
						return usageErrorf(s.cmd, "invalid --quota %d: want a positive number", c.Int("quota"))
					}
					if c.IsSet("before") {
						var err error
						if opts.Before, err = parseHashArg(s.cmd, c.String("before")); err != nil {
							return err
						}
					}
					return runThreadRead(c.Context, c.App.Writer, s, c.Args().First(), opts)
				}),
			},
			{
				Name:      "fork",
				Usage:     "start a thread from any node of another (nothing is copied)",
				ArgsUsage: "<hash> | <thread> --at <depth>",
				Description: `Forks at a start, step or mark node given by hash, or at the node at --at
<depth> of a thread (0: its start). Prints the new thread's id; its log says
where it came from.`,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "at", Usage: "fork at `DEPTH` of the thread"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<hash>|<thread>"); err != nil {
						return err
					}
					return runThreadFork(c, s, c.Args().First())
				}),
			},
			{
				Name:      "kill",
				Usage:     "append a killed mark",
				ArgsUsage: "<thread>",
				Description: `Prints the mark's hash. A done or killed thread cannot be killed; a killed
thread can be resumed. Its run record is dropped: a worker running it loses
its lease and ends its agent.`,
				Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, `TEXT`"}},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadMark(c.Context, c.App.Writer, s, c.Args().First(), func(e *thread.Engine, id string) (cas.Hash, error) {
						return e.Kill(c.Context, id, c.String("reason"))
					})
				}),
			},
			{
				Name:      "suspend",
				Usage:     "append a suspended mark (resume goes on)",
				ArgsUsage: "<thread>",
				Description: `Prints the mark's hash. Only an active thread can be suspended; resume
goes on from its last step.`,
				Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, `TEXT`"}},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadMark(c.Context, c.App.Writer, s, c.Args().First(), func(e *thread.Engine, id string) (cas.Hash, error) {
						return e.Suspend(c.Context, id, c.String("reason"))
					})
				}),
			},
			{
				Name:      "resume",
				Usage:     "append a resumed mark (runs nothing)",
				ArgsUsage: "<thread> [-p <text>]",
				Description: `Prints the mark's hash. The text reaches the next step's prompt. After a
$SUSPEND the suspended role runs again; after maxSteps routing goes on from
the last step. Then use step, or --queue to queue it for "uwf worker"s. An
active thread takes a resume only with -p (a note for its next step); a done
one none (fork it to go on).`,
				Flags: []cli.Flag{&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "a note for the next step, `TEXT` (- reads stdin)"}, queueFlag},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					text, err := promptArg(c, s)
					if err != nil {
						return err
					}
					return runThreadMark(c.Context, c.App.Writer, s, c.Args().First(), func(e *thread.Engine, id string) (cas.Hash, error) {
						h, err := e.Resume(c.Context, id, text)
						if err == nil && c.Bool("queue") {
							if _, err := e.Enqueue(c.Context, id, thread.EnqueueOptions{}); err != nil {
								return h, fmt.Errorf("resumed (%s), but: %w", h, err)
							}
						}
						return h, err
					})
				}),
			},
			{
				Name:      "queue",
				Usage:     "queue a thread for workers (again, after its run failed)",
				ArgsUsage: "<thread>",
				Description: `Creates runs/<thread> (queued) for an active thread, with --agent if given;
a failed run is queued again with its failure count reset. A thread
already queued is left as it is, but --agent A naming another agent
gives its run agent A (and workers try it again); one a worker runs
exits 4.`,
				Flags: []cli.Flag{agentFlag},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadQueue(c, s, c.Args().First())
				}),
			},
			{
				Name:      "rm",
				Usage:     "delete a thread's ref, its run record and its failures ref",
				ArgsUsage: "<thread>",
				Description: `Their logs keep them for the log retention (30 days); then GC reclaims what
only they reached. A worker running the thread loses its lease and stops.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadRm(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "replay",
				Usage:     "re-route a thread's recorded outputs and report where routing diverges",
				ArgsUsage: "<thread>",
				Description: `Runs no agent: re-evaluates the moderator over each recorded output with the
thread's workflow or --workflow W (a file, name or hash), and reports the
first step where the target differs, routing fails, or the recorded output
no longer fits the role's schema. Exit 1 if it diverges. To re-execute
recorded raw outputs through extraction and routing, fork the thread and
step the fork with --agent replay:<thread>.`,
				Flags: []cli.Flag{&cli.StringFlag{Name: "workflow", Usage: "replay under workflow `W`"}},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					return runThreadReplay(c.Context, c.App.Writer, s, c.Args().First(), c.String("workflow"))
				}),
			},
			{
				Name:      "watch",
				Usage:     "follow a thread live, printing its steps as they land (from any process)",
				ArgsUsage: "<thread> | --latest",
				Description: `Prints the thread's last -n chain nodes, then each new one as it lands,
as "thread run" prints them (with --json one event per line), whichever
process steps the thread. Exits when the thread is done or killed; a
suspended thread is followed on (it may be resumed). --latest follows the
newest thread.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "latest", Usage: "follow the newest thread"},
					&cli.IntFlag{Name: "n", Usage: "first print the last `N` nodes (0: all)", Value: 10},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if c.Bool("latest") {
						if err := wantArgs(c, 0, 0, ""); err != nil {
							return err
						}
					} else if err := wantArgs(c, 1, 1, "<thread> (or --latest)"); err != nil {
						return err
					}
					if c.Int("n") < 0 {
						return usageErrorf(s.cmd, "invalid -n %d: want 0 or more", c.Int("n"))
					}
					return runThreadWatch(c, s, c.Args().First(), c.Int("n"))
				}),
			},
			{
				Name:        "log",
				Usage:       "show a thread's ref log",
				ArgsUsage:   "<thread>",
				Description: `As "uwf cas ref log threads/<thread>".`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					id, err := threadArg(s, c.Args().First())
					if err != nil {
						return err
					}
					return runRefLog(c.Context, c.App.Writer, s, thread.ThreadPrefix+id)
				}),
			},
		},
	}
}

func runThreadWatch(c *cli.Context, s *session, arg string, last int) error {
	ctx := c.Context
	var id string
	if arg != "" {
		var err error
		if id, err = threadArg(s, arg); err != nil {
			return err
		}
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	if id == "" {
		infos, err := e.List(ctx, thread.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(infos) == 0 {
			return fmt.Errorf("no thread to watch: %w", cas.ErrNotFound)
		}
		id = infos[0].ID
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return err
	}
	hn, err := e.Node(ctx, head)
	if err != nil {
		return err
	}
	from := 0
	if last > 0 {
		from = max(0, hn.Depth()-last+1)
	}
	if _, err := repo.WatchHead(ctx); err != nil {
		return err
	}
	pr := newProgress(c.App.Writer, c.App.ErrWriter, s.json)
	defer pr.finish()
	pr.begin(id)
	// The branches of a call are followed too, each as it lands (from
	// any process), until the join.
	var branches sync.WaitGroup
	var stops []context.CancelFunc
	defer func() {
		for _, stop := range stops {
			stop()
		}
		branches.Wait()
	}()
	for en, err := range e.Follow(ctx, id, from) {
		if err != nil {
			return err
		}
		if en.Join != nil && len(stops) > 0 {
			waitBranches(&branches, stops[len(stops)-1])
		}
		if stop := pr.node(id, en); stop {
			return nil
		}
		if en.Call != nil {
			bctx, stop := context.WithCancel(ctx)
			stops = append(stops, stop)
			for _, b := range en.Call.Branches {
				cid := thread.ChildID(id, en.Hash, en.Call.At, b.Key)
				role := b.Role
				if role == "" {
					role = en.Call.Role
				}
				branches.Add(1)
				go func() {
					defer branches.Done()
					watchBranch(bctx, e, pr, cid, b.Key, role, en.Depth())
				}()
			}
		}
	}
	return nil
}

// waitBranches waits for the branch followers of a call that joined to
// print what their threads did (they end at each branch's last node), at
// most 2 s, then stops them.
func waitBranches(wg *sync.WaitGroup, stop func()) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	stop()
	<-done
}

// watchBranch prints branch thread cid's nodes under its key as they land,
// until it ends (done, cancelled or killed), the join takes its ref, or
// ctx is done; on a terminal the live line shows it while it goes on.
func watchBranch(ctx context.Context, e *thread.Engine, pr *progressPrinter, cid, key, role string, depth int) {
	pr.going(cid, key, role, 1)
	for ctx.Err() == nil {
		for en, err := range e.Follow(ctx, cid, 1) {
			if err != nil {
				break
			}
			if pr.nodeOf(cid, key, en) || en.Mark != nil && en.Mark.Mark == thread.MarkCancelled {
				return
			}
			if en.Mark == nil || en.Mark.Mark == thread.MarkResumed {
				pr.going(cid, key, role, en.Depth()+1)
			}
		}
		// Not created yet (the call's runner starts it), or joined (its
		// ref is gone; its log names its head): look again, or stop.
		if _, err := e.Repo().Refs().Get(ctx, thread.ThreadPrefix+cid); errors.Is(err, cas.ErrNotFound) {
			if _, err := e.Head(ctx, cid); err == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// going shows branch key (thread cid, running role) as going on at depth
// on the live line of a terminal; nothing is printed otherwise.
func (p *progressPrinter) going(cid, key, role string, depth int) {
	if !p.live {
		return
	}
	p.event(thread.Event{Type: thread.EventRunning, Thread: cid, Branch: key, Depth: depth, Role: role, Agent: "branch"})
}

// node prints a chain node as the step loop's event for it, and reports
// whether the thread stopped for good (done or killed).
func (p *progressPrinter) node(id string, en *thread.StepEntry) bool {
	return p.nodeOf(id, "", en)
}

// nodeOf is node for a thread that is branch key of a call ("" for the
// thread watched itself).
func (p *progressPrinter) nodeOf(id, key string, en *thread.StepEntry) bool {
	ev := thread.Event{Thread: id, Depth: en.Depth(), Head: en.Hash, Branch: key}
	switch {
	case en.Call != nil:
		ev.Type, ev.Role, ev.Agent = thread.EventCall, en.Call.Role, en.Call.Mode
		p.mu.Lock()
		if p.modes == nil {
			p.modes, p.callAt = map[cas.Hash]string{}, map[cas.Hash]int64{}
		}
		p.modes[en.Hash], p.callAt[en.Hash] = en.Call.Mode, en.Call.At
		p.mu.Unlock()
	case en.Join != nil:
		// As the step loop prints it: the call's mode as the agent.
		ev.Type, ev.Role, ev.Agent, ev.Status = thread.EventStep, en.Join.Role, "join", en.Status
		p.mu.Lock()
		if m, ok := p.modes[en.Join.Call]; ok {
			ev.Agent = m
			ev.Elapsed = time.Duration(en.Join.At-p.callAt[en.Join.Call]) * time.Millisecond
		}
		p.mu.Unlock()
		ev.Ms = ev.Elapsed.Milliseconds()
	case en.Step != nil:
		st := en.Step
		ev.Type, ev.Role, ev.Agent, ev.Status = thread.EventStep, st.Role, st.Agent, en.Status
		ev.Elapsed = time.Duration(st.CompletedAt-st.StartedAt) * time.Millisecond
		ev.Ms = ev.Elapsed.Milliseconds()
	case en.Mark != nil:
		ev.Type, ev.Reason = en.Mark.Mark, en.Mark.Reason
	default:
		return false // the start: "thread <id>" was printed
	}
	switch ev.Type {
	case thread.MarkKilled, thread.MarkResumed, thread.MarkCancelled:
		// Marks the step loop never makes: printed here alike.
		p.mu.Lock()
		if p.json {
			writeJSON(p.w, ev)
		} else {
			if key != "" {
				fmt.Fprintf(p.w, "  [%s] ", key)
			}
			fmt.Fprintf(p.w, "%d %s: %s\n", ev.Depth, ev.Type, oneLine(ev.Reason))
		}
		p.mu.Unlock()
	default:
		p.event(ev)
	}
	return ev.Type == thread.MarkDone || ev.Type == thread.MarkKilled
}

// threadArg checks a thread id argument: a bad one is a usage error.
func threadArg(s *session, arg string) (string, error) {
	id, err := thread.ParseID(arg)
	if err != nil {
		return "", usageErrorf(s.cmd, "invalid thread id %q: %s", arg, badIDReason)
	}
	return id, nil
}

const badIDReason = "want a ULID, 26 characters of Crockford Base32 (as thread list prints them)"

// promptArg reads -p: the text, or stdin for "-".
func promptArg(c *cli.Context, s *session) (string, error) {
	p := c.String("prompt")
	if p != "-" {
		return p, nil
	}
	data, err := cas.ReadLimited(s.stdin, cas.DefaultMaxNodeSize)
	if err != nil {
		return "", fmt.Errorf("<stdin>: %w", err)
	}
	return string(data), nil
}

// runOptions builds the step loop's options from the flags and config.
func runOptions(c *cli.Context, s *session, progress func(thread.Event)) (*thread.RunOptions, error) {
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	home, err := s.homeDir()
	if err != nil {
		return nil, err
	}
	agentName := c.String("agent")
	if strings.HasPrefix(agentName, "replay:") {
		if _, err := thread.ParseID(strings.TrimPrefix(agentName, "replay:")); err != nil {
			return nil, usageErrorf(s.cmd, "invalid --agent %q: replay:<thread> needs a thread id: %s", agentName, badIDReason)
		}
	}
	if agentName != "" {
		// An unknown --agent is refused before the store is opened.
		if _, _, err := agent.Resolve(cfg, "", "", agentName); err != nil {
			return nil, err
		}
	}
	return &thread.RunOptions{
		Agent: agentName, Config: cfg, Home: home, Store: s.storeURL(), Durability: s.durability, Seed: c.Int64("seed"),
		HumanIn: s.stdin, HumanOut: c.App.ErrWriter, HumanInput: c.String("input"), Progress: progress,
	}, nil
}

func runThreadStart(c *cli.Context, s *session, run bool) error {
	ctx, w := c.Context, c.App.Writer
	if !c.IsSet("prompt") {
		return usageErrorf(s.cmd, "-p <prompt> is required")
	}
	if c.IsSet("key") && thread.ValidateKey(c.String("key")) != nil {
		return usageErrorf(s.cmd, "invalid --key %q: want 1-195 characters of '/'-separated segments, each a letter or digit then letters, digits, '.', '_' or '-'", c.String("key"))
	}
	prompt, err := promptArg(c, s)
	if err != nil {
		return err
	}
	cwd := c.String("cwd")
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	if cwd, err = filepath.Abs(cwd); err != nil {
		return err
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("--cwd %s: not a folder", cwd)
	}
	if !run && c.IsSet("agent") && !c.Bool("queue") {
		return usageErrorf(s.cmd, "--agent needs --queue: start runs nothing")
	}
	var opts *thread.RunOptions
	var pr *progressPrinter
	if c.IsSet("agent") && (c.Bool("queue") || c.Bool("detach")) {
		// Checked as the workers will resolve it: a name this config knows.
		if _, err := runOptions(c, s, nil); err != nil {
			return err
		}
	}
	if run && !c.Bool("detach") {
		pr = newProgress(w, c.App.ErrWriter, s.json)
		if opts, err = runOptions(c, s, pr.event); err != nil {
			return err
		}
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	res, err := e.Registry().Resolve(ctx, c.Args().First())
	if err != nil {
		return err
	}
	queue := c.Bool("queue") || c.Bool("detach")
	if !run && c.IsSet("key") {
		return runThreadStartKeyed(ctx, w, s, e, c.String("key"), res.Hash, prompt, cwd, queue, c.String("agent"))
	}
	if !run || queue {
		id, head, err := e.Start(ctx, res.Hash, prompt, cwd)
		if err != nil {
			return err
		}
		if queue {
			if _, err := e.Enqueue(ctx, id, thread.EnqueueOptions{Agent: c.String("agent")}); err != nil {
				return fmt.Errorf("thread %s started, but: %w", id, err)
			}
		}
		if s.json {
			return writeJSON(w, thread.StartJSON{Thread: id, Head: head, Workflow: res.Hash})
		}
		_, err = fmt.Fprintln(w, id)
		return err
	}
	id, rs, err := runWithProgress(ctx, e, pr, res.Hash, prompt, cwd, opts)
	if err != nil {
		return err
	}
	return limitOutcome(id, rs)
}

// runThreadStartKeyed is thread start --key: the thread started under
// key, started now or found.
//
// With queue, a thread started now is queued for workers (with agent), and
// so is a found one still at its start with no run record: the first
// start under the key stopped before queueing it.
func runThreadStartKeyed(ctx context.Context, w io.Writer, s *session, e *thread.Engine, key string, wf cas.Hash, prompt, cwd string, queue bool, agent string) error {
	id, head, existing, err := e.StartKeyed(ctx, key, wf, prompt, cwd)
	if err != nil {
		return err
	}
	if queue {
		enqueue := existing == nil
		if !enqueue {
			info, err := e.Show(ctx, id)
			enqueue = err == nil && info.Run == nil && info.Depth == 0 && info.Status == thread.StatusActive
		}
		if enqueue {
			if _, err := e.Enqueue(ctx, id, thread.EnqueueOptions{Agent: agent}); err != nil {
				return fmt.Errorf("thread %s started under key %s, but: %w", id, key, err)
			}
		}
	}
	out := thread.StartJSON{Thread: id, Head: head, Workflow: wf, Key: key}
	if existing != nil {
		out.Existing = true
		start, err := e.Node(ctx, existing.Start)
		if err != nil {
			return fmt.Errorf("thread %s, started under key %s: %w", id, key, err)
		}
		if start.Start != nil {
			out.Workflow = start.Start.Workflow
		}
		if !s.json { // --json says it with "existing"
			s.warnf("key %s is taken: thread %s was started under it at %s; nothing started",
				key, id, time.UnixMilli(existing.At).UTC().Format(time.RFC3339))
		}
	}
	if s.json {
		return writeJSON(w, out)
	}
	_, err = fmt.Fprintln(w, id)
	return err
}

// stepLimitError is a thread that stopped at its step limit: it is
// suspended, and uwf exits 1 saying so.
type stepLimitError struct {
	thread, reason string
}

func (e *stepLimitError) Error() string {
	return fmt.Sprintf("thread %s stopped: %s; it is suspended (uwf thread resume %s to go on)", e.thread, e.reason, e.thread)
}

// limitOutcome returns a *stepLimitError if the last result is a step
// limit.
func limitOutcome(id string, rs []*thread.StepResult) error {
	if len(rs) == 0 || rs[len(rs)-1].Kind != thread.EventLimit {
		return nil
	}
	return &stepLimitError{thread: id, reason: rs[len(rs)-1].Reason}
}

// runWithProgress runs a new thread of workflow wf to its end
// ([thread.Engine.Run]), printing its progress with pr: "thread <id>"
// first (known at the first event, or when Run returns if it failed before
// running anything), then a line per event.
func runWithProgress(ctx context.Context, e *thread.Engine, pr *progressPrinter, wf cas.Hash, prompt, cwd string, opts *thread.RunOptions) (string, []*thread.StepResult, error) {
	begun := false
	opts.Progress = func(ev thread.Event) {
		if !begun {
			begun = true
			pr.begin(ev.Thread)
		}
		pr.event(ev)
	}
	id, rs, err := e.Run(ctx, wf, prompt, cwd, opts)
	if !begun && id != "" {
		pr.begin(id)
	}
	pr.finish()
	return id, rs, err
}

func runThreadStep(c *cli.Context, s *session, arg string, n int) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	pr := newProgress(c.App.Writer, c.App.ErrWriter, s.json)
	opts, err := runOptions(c, s, pr.event)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(c.Context)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	if !c.Bool("force") {
		if err := e.CheckUnleased(c.Context, id); err != nil {
			if _, held := errors.AsType[*thread.LeaseHeldError](err); held {
				return fmt.Errorf("%w; use --force to step it anyway", err)
			}
			return err
		}
	}
	rs, err := e.StepN(c.Context, id, n, opts)
	pr.finish()
	if err != nil {
		return err
	}
	return limitOutcome(id, rs)
}

// progressPrinter prints step-loop events: plain lines, JSON lines, and on
// a terminal a live line with every running role (the thread's, or each
// running branch's of a call, by key) and its elapsed time.
type progressPrinter struct {
	w, errw io.Writer
	json    bool
	live    bool

	mu      sync.Mutex
	running map[string]*liveRun // by branch key; "" for the thread itself
	// A watch's calls seen, for their joins' lines: mode and time.
	modes  map[cas.Hash]string
	callAt map[cas.Hash]int64
	stop   chan struct{}
	done   chan struct{}
}

// liveRun is a role running, as the live line shows it.
type liveRun struct {
	ev    thread.Event
	since time.Time
}

func newProgress(w, errw io.Writer, asJSON bool) *progressPrinter {
	p := &progressPrinter{w: w, errw: errw, json: asJSON}
	if f, ok := errw.(*os.File); ok && !asJSON {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.live = true
			p.stop, p.done = make(chan struct{}), make(chan struct{})
			go p.tick()
		}
	}
	return p
}

func (p *progressPrinter) begin(id string) {
	if p.json {
		writeJSON(p.w, thread.Event{Type: "start", Thread: id})
		return
	}
	fmt.Fprintf(p.w, "thread %s\n", id)
}

func (p *progressPrinter) tick() {
	defer close(p.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if len(p.running) > 0 {
				fmt.Fprintf(p.errw, "\r\033[K%s", p.liveLine(time.Now(), progress.Width(p.errw)))
			}
			p.mu.Unlock()
		}
	}
}

func (p *progressPrinter) event(ev thread.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		writeJSON(p.w, ev)
		return
	}
	if ev.Type == thread.EventRunning {
		if p.running == nil {
			p.running = map[string]*liveRun{}
		}
		if r := p.running[ev.Branch]; r == nil || r.ev.Depth != ev.Depth || r.ev.Thread != ev.Thread {
			p.running[ev.Branch] = &liveRun{ev: ev, since: time.Now()}
		} else {
			r.ev = ev
		}
		return
	}
	if p.live {
		fmt.Fprint(p.errw, "\r\033[K")
	}
	// Whatever the thread (or branch) did next, it no longer runs that
	// role, nor do the branches under it (a call's branches end before
	// its join; a failed or suspended thread leaves none running here).
	for k := range p.running {
		if k == ev.Branch || ev.Branch == "" || strings.HasPrefix(k, ev.Branch+"/") {
			delete(p.running, k)
		}
	}
	elapsed := ev.Elapsed.Round(time.Millisecond)
	if ev.Branch != "" { // an event of a branch thread of a call
		fmt.Fprintf(p.w, "  [%s] ", ev.Branch)
	}
	switch ev.Type {
	case thread.EventCall:
		fmt.Fprintf(p.w, "%d %s: call (%s) -> %s\n", ev.Depth, ev.Role, ev.Agent, ev.Head)
	case thread.EventStep:
		fmt.Fprintf(p.w, "%d %s (%s) %s -> %s %s\n", ev.Depth, ev.Role, ev.Agent, ev.Status, ev.Head, elapsed)
	case thread.EventRetry:
		fmt.Fprintf(p.w, "%d %s (%s) retry: %s\n", ev.Depth, ev.Role, ev.Agent, oneLine(userMessage(ev.Error)))
	case thread.EventDone:
		fmt.Fprintf(p.w, "%d done: %s\n", ev.Depth, oneLine(ev.Reason))
	case thread.EventSuspended:
		fmt.Fprintf(p.w, "%d suspended: %s\n", ev.Depth, oneLine(ev.Reason))
	case thread.EventLimit:
		fmt.Fprintf(p.w, "%d limit: %s; suspended\n", ev.Depth, oneLine(ev.Reason))
	case thread.EventFailed:
		fmt.Fprintf(p.w, "%d %s (%s) failed after %s\n", ev.Depth, ev.Role, ev.Agent, elapsed)
	}
}

// liveLine renders the running roles for the live line at now, on a
// terminal of width columns (0: unknown): "  <depth> <role> (<agent>)
// <elapsed>" for the thread, "[<key>] ..." for each branch, by key, as
// many as fit, then "+N more".
func (p *progressPrinter) liveLine(now time.Time, width int) string {
	keys := slices.Sorted(maps.Keys(p.running))
	var b strings.Builder
	b.WriteString(" ")
	for i, k := range keys {
		r := p.running[k]
		part := fmt.Sprintf(" %d %s (%s) %s", r.ev.Depth, r.ev.Role, r.ev.Agent, now.Sub(r.since).Round(100*time.Millisecond))
		if k != "" {
			part = " [" + k + "]" + part
		}
		if i > 0 {
			part = " ·" + part
		}
		more := ""
		if rest := len(keys) - i - 1; rest > 0 {
			more = fmt.Sprintf(" · +%d more", rest)
		}
		if width > 0 && i > 0 && utf8.RuneCountInString(b.String()+part+more) >= width {
			fmt.Fprintf(&b, " · +%d more", len(keys)-i)
			break
		}
		b.WriteString(part)
	}
	return b.String()
}

func (p *progressPrinter) finish() {
	if p.live {
		close(p.stop)
		<-p.done
		p.mu.Lock()
		if len(p.running) > 0 {
			fmt.Fprint(p.errw, "\r\033[K")
		}
		p.mu.Unlock()
	}
}

func runThreadShow(ctx context.Context, w io.Writer, s *session, arg string) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	info, err := e.Show(ctx, id)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, info.ShowJSON())
	}
	hn, err := e.Node(ctx, info.Head)
	if err != nil {
		return err
	}
	what := hn.Kind
	switch {
	case hn.Step != nil:
		what = "step " + hn.Step.Role
	case hn.Mark != nil:
		what = "mark " + hn.Mark.Mark
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "thread:   %s\nstatus:   %s\nworkflow: %s (%s)\ndepth:    %d\nhead:     %s (%s)\ncreated:  %s\n",
		info.ID, info.Status, info.WorkflowName, info.Workflow, info.Depth, info.Head, what, info.Created.Format(time.RFC3339))
	if hn.Mark != nil && hn.Mark.Reason != "" {
		fmt.Fprintf(bw, "reason:   %s\n", oneLine(hn.Mark.Reason))
	}
	o := info.Origin
	switch {
	case o.Forked && o.ForkThread != "":
		fmt.Fprintf(bw, "origin:   forked from %s at %s (depth %d)\n", o.ForkThread, o.Node, o.Depth)
	case o.Forked:
		fmt.Fprintf(bw, "origin:   forked at %s (depth %d)\n", o.Node, o.Depth)
	default:
		fmt.Fprintf(bw, "origin:   started at %s\n", o.Node)
	}
	fmt.Fprintf(bw, "prompt:   %s\n", oneLine(info.Prompt))
	// The last run's session and the totals come with info (Engine.Show).
	if r := info.LastRun; r != nil {
		fmt.Fprintf(bw, "session:  %s (depth %d)\n", oneLine(r.Session.Summary()), r.Depth)
	}
	if info.Usage.Sessions > 0 {
		steps := strconv.Itoa(info.Steps) + " steps"
		if info.Steps == 1 {
			steps = "1 step"
		}
		fmt.Fprintf(bw, "totals:   %s (%s)\n", info.Usage.Summary(), steps)
	}
	if p := info.Parent; p != nil {
		fmt.Fprintf(bw, "parent:   %s, branch %s of call %s\n", p.Thread, p.Key, p.Call)
	}
	for _, b := range info.Branches {
		fmt.Fprintf(bw, "branch:   %s: thread %s, %s\n", b.Key, b.Thread, b.Status)
	}
	if info.ChildCount > 0 {
		fmt.Fprintf(bw, "children: %d", info.ChildCount)
		if more := info.ChildCount - len(info.Children); more > 0 {
			fmt.Fprintf(bw, " (the newest %d below; the rest: uwf thread list --parent %s --offset %d)", len(info.Children), info.ID, len(info.Children))
		}
		bw.WriteString("\n")
		for _, ch := range info.Children {
			fmt.Fprintf(bw, "  %s %-9s %s %s/%s at depth %d\n", ch.Thread, ch.Status, ch.Mode, ch.CallRole, ch.Key, ch.Depth)
		}
	}
	if f := info.LastFailure; f != nil {
		fmt.Fprintf(bw, "last failure: %s %s (agent %s) from head %s: %s (failure %s, detail %s)\n",
			time.UnixMilli(f.At).UTC().Format(time.RFC3339), f.Role, f.Agent, f.Head, oneLine(userMessage(f.Error)), info.FailureHash, f.Detail)
		if s := info.FailureSession; s != nil {
			fmt.Fprintf(bw, "failure session: %s\n", oneLine(s.Summary()))
		}
	}
	writeRun(bw, info.Run)
	return bw.Flush()
}

func runThreadList(ctx context.Context, w io.Writer, s *session, opts thread.ListOptions, limitSet bool) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	// Damaged threads are left out and reported (exit 1) after the others
	// are printed; threads of a kind this build does not know are named on
	// stderr.
	// On a terminal, a table of the newest threadTableRows unless --limit
	// says otherwise: one more is asked for, to say that there are more.
	table := !s.json && progress.IsTerminal(w)
	if table && !limitSet {
		opts.Limit = threadTableRows + 1
	}
	all, listErr := s.engine(repo).List(ctx, opts)
	if listErr != nil && all == nil {
		return listErr
	}
	more := false
	if table && !limitSet && len(all) > threadTableRows {
		all, more = all[:threadTableRows], true
	}
	// Threads that cannot be read are named on stderr; the others listed.
	var infos []*thread.Info
	for _, info := range all {
		if info.Err != nil {
			s.warnf("thread %s skipped: %v", info.ID, info.Err)
			continue
		}
		infos = append(infos, info)
	}
	if s.json {
		out := []thread.InfoJSON{}
		for _, info := range infos {
			out = append(out, info.JSON())
		}
		err = writeJSON(w, out)
	} else if table {
		err = printThreadTable(w, infos, more, s.clock())
	} else {
		bw := bufio.NewWriter(w)
		for _, info := range infos {
			fmt.Fprintf(bw, "%s %-9s %-8s %4d %s %s\n", info.ID, info.Status, thread.RunState(info.Run), info.Depth, info.WorkflowName, info.Created.Format(time.RFC3339))
			for _, b := range info.Branches { // a thread in a call: its branches under it
				fmt.Fprintf(bw, "  branch %s: %s %s\n", b.Key, b.Thread, b.Status)
			}
		}
		err = bw.Flush()
	}
	if err != nil {
		return err
	}
	if listErr != nil {
		return &leftOutError{fmt.Errorf("%w\n(uwf cas fsck reports every damaged ref and node; uwf cas ref restore repairs a ref from its log)", listErr)}
	}
	return nil
}

func runThreadSteps(ctx context.Context, w io.Writer, s *session, arg string) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	bw := bufio.NewWriterSize(w, 64<<10)
	first := true
	if s.json {
		bw.WriteByte('[')
	}
	for n, err := range s.engine(repo).Steps(ctx, id) {
		if err != nil {
			bw.Flush()
			return err
		}
		en := n.JSON()
		if s.json {
			if !first {
				bw.WriteString(",\n")
			}
			b, err := marshalJSON(en)
			if err != nil {
				return err
			}
			bw.Write(b)
		} else {
			switch n.Kind {
			case thread.KindStart:
				fmt.Fprintf(bw, "%d %s start\n", en.Depth, en.Hash)
			case thread.KindStep:
				fmt.Fprintf(bw, "%d %s step %s (%s) %s\n", en.Depth, en.Hash, en.Role, en.Agent, en.Status)
			case thread.KindMark:
				fmt.Fprintf(bw, "%d %s mark %s %s\n", en.Depth, en.Hash, en.Mark, oneLine(en.Reason))
			case thread.KindCall:
				fmt.Fprintf(bw, "%d %s call %s (%s)\n", en.Depth, en.Hash, en.Role, en.Mode)
			case thread.KindJoin:
				fmt.Fprintf(bw, "%d %s join %s %s\n", en.Depth, en.Hash, en.Role, en.Status)
			}
		}
		first = false
	}
	if s.json {
		bw.WriteString("]\n")
	}
	return bw.Flush()
}

func runThreadRead(ctx context.Context, w io.Writer, s *session, arg string, opts thread.ReadOptions) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	r, err := s.engine(repo).Read(ctx, id, opts)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, r.JSON())
	}
	_, err = io.WriteString(w, r.Text)
	return err
}

func runThreadFork(c *cli.Context, s *session, arg string) error {
	ctx, w := c.Context, c.App.Writer
	var from cas.Hash
	var id string
	if len(arg) == cas.HashLen {
		if c.IsSet("at") {
			return usageErrorf(s.cmd, "--at goes with a thread id, not a hash")
		}
		h, err := parseHashArg(s.cmd, arg)
		if err != nil {
			return err
		}
		from = h
	} else {
		var err error
		if id, err = threadArg(s, arg); err != nil {
			return err
		}
		if !c.IsSet("at") {
			return usageErrorf(s.cmd, "fork <thread> needs --at <depth> (or give a node's hash)")
		}
		if c.Int("at") < 0 {
			return usageErrorf(s.cmd, "invalid --at %d: want 0 or more", c.Int("at"))
		}
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	var nid string
	if id != "" {
		nid, from, err = e.ForkAt(ctx, id, c.Int("at"))
	} else {
		nid, err = e.Fork(ctx, from, "")
	}
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, thread.ForkJSON{Thread: nid, Head: from})
	}
	_, err = fmt.Fprintln(w, nid)
	return err
}

func runThreadMark(ctx context.Context, w io.Writer, s *session, arg string, mark func(*thread.Engine, string) (cas.Hash, error)) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	h, err := mark(s.engine(repo), id)
	if err != nil {
		return err
	}
	return printHash(w, s, h)
}

func runThreadRm(ctx context.Context, w io.Writer, s *session, arg string) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	if err := s.engine(repo).Remove(ctx, id); err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, thread.RemovedJSON{Thread: id, Removed: true})
	}
	_, err = fmt.Fprintf(w, "removed %s (its log keeps it for the log retention)\n", id)
	return err
}

// errDiverged is the exit status of a replay that diverges.
var errDiverged = errors.New("replay diverges")

func runThreadReplay(ctx context.Context, w io.Writer, s *session, arg, wfArg string) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)
	var wf cas.Hash
	if wfArg != "" {
		// A what-if question: a file's workflow is stored, not registered.
		res, err := e.Registry().ResolveUnregistered(ctx, wfArg)
		if err != nil {
			return err
		}
		wf = res.Hash
	}
	rep, err := e.Replay(ctx, id, wf)
	if err != nil {
		return err
	}
	d := rep.Divergence
	if s.json {
		type div struct {
			Depth   int      `json:"depth"`
			After   cas.Hash `json:"after"`
			From    string   `json:"from"`
			Status  string   `json:"status"`
			Old     string   `json:"old"`
			New     string   `json:"new"`
			Error   string   `json:"error,omitempty"`
			Invalid bool     `json:"invalid"`
			Branch  string   `json:"branch,omitempty"` // inside a branch thread: its key
			Thread  string   `json:"thread,omitempty"` // and its id
		}
		out := struct {
			Thread     string   `json:"thread"`
			Workflow   cas.Hash `json:"workflow"`
			Steps      int      `json:"steps"`
			Divergence *div     `json:"divergence"`
		}{rep.Thread, rep.Workflow, rep.Steps, nil}
		if d != nil {
			out.Divergence = &div{d.Depth, d.After, d.From, d.Status, d.Old, d.New, d.Error, d.Invalid, d.Branch, d.Thread}
		}
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "thread %s under workflow %s: %d steps replayed\n", rep.Thread, rep.Workflow, rep.Steps)
		if d != nil && d.Branch != "" {
			fmt.Fprintf(w, "in branch %s (thread %s): ", d.Branch, d.Thread)
		}
		switch {
		case d == nil:
			fmt.Fprintln(w, "no divergence: routing reaches every recorded step")
		case d.Invalid:
			fmt.Fprintf(w, "diverges at depth %d: the recorded %s output no longer fits its schema: %s\n", d.Depth, d.Old, oneLine(userMessage(d.Error)))
		case d.Error != "":
			fmt.Fprintf(w, "diverges at depth %d: after %s (status %q) routing fails: %s (recorded: %s)\n", d.Depth, d.From, d.Status, oneLine(userMessage(d.Error)), d.Old)
		default:
			fmt.Fprintf(w, "diverges at depth %d: after %s (status %q) the old target was %s, the new one is %s\n", d.Depth, d.From, d.Status, d.Old, d.New)
		}
	}
	if d != nil {
		return &silentError{fmt.Errorf("%w at depth %d", errDiverged, d.Depth)}
	}
	return nil
}

// stepCommand is "uwf step": one step node, expanded.
func stepCommand() *cli.Command {
	return &cli.Command{
		Name:  "step",
		Usage: "inspect step nodes",
		Subcommands: []*cli.Command{
			{
				Name:      "show",
				Usage:     "show a step with its output and detail expanded",
				ArgsUsage: "<step-hash>",
				Description: `Prints the step's chain fields, role, agent and times, its typed output, and
its detail: edge prompt, exit code, duration, the assembled prompt, the raw
output, stderr and any failed attempts. With --json, one object.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<step-hash>"); err != nil {
						return err
					}
					return runStepShow(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
		},
	}
}

func runStepShow(ctx context.Context, w io.Writer, s *session, arg string) error {
	h, err := parseHashArg(s.cmd, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	v, err := s.engine(repo).StepView(ctx, h)
	if err != nil {
		return err
	}
	st, out, d, attempts := v.Step, v.Output, v.Detail, v.Attempts
	prompt, raw, stderr := v.Prompt, v.Raw, v.Stderr
	if s.json {
		j, err := v.JSON()
		if err != nil {
			return err
		}
		return writeJSON(w, j)
	}
	bw := bufio.NewWriter(w)
	prev := "null"
	if !st.Prev.IsZero() {
		prev = st.Prev.String()
	}
	fmt.Fprintf(bw, "step:      %s\nrole:      %s\nagent:     %s\ndepth:     %d\nstart:     %s\nprev:      %s\nskip:      %d pointer%s\n",
		h, st.Role, st.Agent, st.Depth, st.Start, prev, len(st.Skip), plural(len(st.Skip)))
	fmt.Fprintf(bw, "started:   %s\ncompleted: %s (%dms)\nexit code: %d\n",
		time.UnixMilli(st.StartedAt).UTC().Format(time.RFC3339Nano), time.UnixMilli(st.CompletedAt).UTC().Format(time.RFC3339Nano), d.DurationMs, d.ExitCode)
	if d.RunBy != nil {
		fmt.Fprintf(bw, "run by:    %s\n", oneLine(d.RunBy.String()))
	}
	if d.Session != nil {
		fmt.Fprintf(bw, "session:   %s\n", oneLine(d.Session.Summary()))
	}
	section := func(title, body string) {
		fmt.Fprintf(bw, "\n## %s\n\n%s\n", title, strings.TrimRight(body, "\n"))
	}
	section("edge prompt", d.EdgePrompt)
	section("output "+st.Output.String(), moderator.Text(out.Payload))
	section("prompt "+d.Prompt.String(), prompt)
	section("raw output "+d.Raw.String(), raw)
	if stderr != "" {
		section("stderr "+d.Stderr.String(), stderr)
	}
	for i, a := range attempts {
		section(fmt.Sprintf("failed attempt %d %s", i+1, d.Attempts[i]), a)
	}
	return bw.Flush()
}

// threadTableRows is how many threads thread list shows on a terminal
// without --limit.
const threadTableRows = 20

// printThreadTable is thread list on a terminal: a header, aligned
// columns, each thread's age and the first line of its prompt; more says
// that older threads were left out.
func printThreadTable(w io.Writer, infos []*thread.Info, more bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tSTATUS\tRUN\tDEPTH\tWORKFLOW\tAGE\tPROMPT")
	for _, info := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", info.ID, info.Status, thread.RunState(info.Run), info.Depth, info.WorkflowName, age(now, info.Created), firstLine(info.Prompt, 48))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case more:
		_, err := fmt.Fprintf(w, "(the newest %d; --limit 0 lists all, --json or a pipe gives one line per thread)\n", threadTableRows)
		return err
	case len(infos) == 0:
		_, err := fmt.Fprintln(w, "(no threads)")
		return err
	}
	return nil
}

// age says how long ago t was, in the largest whole unit: "just now",
// "5m ago", "3h ago", "2d ago"; past 30 days the date.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.UTC().Format("2006-01-02")
}

// firstLine is s's first non-blank line, cut to at most n characters
// (with "…" where it was cut); tabs become spaces.
func firstLine(s string, n int) string {
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			s = l
			break
		}
	}
	s = strings.ReplaceAll(strings.TrimSpace(s), "\t", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// parseSince reads thread list's --since: a duration before now (Go's
// units, plus d for days: 90m, 24h, 7d), a date (UTC midnight) or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			if n > 100_000 { // past what a time.Duration holds (about 106,751 days)
				return time.Time{}, fmt.Errorf("at most 100000d")
			}
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a duration must not be negative")
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a duration (90m, 24h, 7d), a date (2026-11-25) or a time (2026-11-25T06:00:00Z)")
}

// writeRun prints a thread's run record, as thread show does: nothing
// when its run is none (--json says "runRecord": null).
func writeRun(w io.Writer, r *thread.Run) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "run:      %s (attempt %d, failures %d", r.State, r.Attempt, r.Failures)
	if r.Agent != "" {
		fmt.Fprintf(w, ", agent %s", r.Agent)
	}
	fmt.Fprintf(w, ", record %s)\n", r.Hash)
	switch r.State {
	case thread.RunRunning:
		fmt.Fprintf(w, "worker:   %s, lease until %s (store clock)\n", r.Worker, r.ExpiryTime().Format(time.RFC3339))
	case thread.RunRetrying:
		fmt.Fprintf(w, "retry:    not before %s (store clock)\n", r.ExpiryTime().Format(time.RFC3339))
	}
	if r.WhyNotClaimed != "" {
		fmt.Fprintf(w, "not claimed: %s\n", oneLine(userMessage(r.WhyNotClaimed)))
		if strings.Contains(r.WhyNotClaimed, ": "+worker.WhyAgents) {
			fmt.Fprintf(w, "fix:      uwf thread queue %s --agent <a>, naming an agent the workers can build\n", r.Thread)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(w, "run error: %s\n", oneLine(userMessage(r.Error)))
	}
}

// runThreadQueue queues a thread for workers.
func runThreadQueue(c *cli.Context, s *session, arg string) error {
	id, err := threadArg(s, arg)
	if err != nil {
		return err
	}
	if c.IsSet("agent") {
		if _, err := runOptions(c, s, nil); err != nil {
			return err
		}
	}
	repo, closeStore, err := s.open(c.Context)
	if err != nil {
		return err
	}
	defer closeStore()
	r, err := s.engine(repo).Enqueue(c.Context, id, thread.EnqueueOptions{Agent: c.String("agent")})
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(c.App.Writer, r.JSON())
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s %s\n", id, r.State)
	return err
}
