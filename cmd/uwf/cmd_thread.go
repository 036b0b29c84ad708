package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/thread"
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
--cwd sets the folder agents run in (default: the current one).`,
				Flags: startFlags(),
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
thread is created.`,
				Flags: startFlags(agentFlag, seedFlag, inputFlag),
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
line (event) and exits 1. Exit 4 if the thread moved meanwhile.`,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "n", Usage: "run up to `N` steps (0: until the thread stops)", Value: 1},
					agentFlag, seedFlag, inputFlag,
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
				Description: `Prints "<id> <status> <depth> <workflow> <created>" per thread, newest first.
--status keeps one status (active, done, killed, suspended).`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "status", Usage: "only threads with status `S`"},
					&cli.IntFlag{Name: "limit", Usage: "at most `N` threads (0: all)"},
					&cli.IntFlag{Name: "offset", Usage: "skip the first `N`"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 0, ""); err != nil {
						return err
					}
					opts := thread.ListOptions{Status: c.String("status"), Limit: c.Int("limit"), Offset: c.Int("offset")}
					switch opts.Status {
					case "", thread.StatusActive, thread.StatusDone, thread.StatusKilled, thread.StatusSuspended:
					default:
						return usageErrorf(s.cmd, "invalid --status %q: want active, done, killed or suspended", opts.Status)
					}
					if opts.Limit < 0 || opts.Offset < 0 {
						return usageErrorf(s.cmd, "--limit and --offset must not be negative")
					}
					return runThreadList(c.Context, c.App.Writer, s, opts)
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
thread can be resumed.`,
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
the last step. Then use step. An active thread takes a resume only with -p (a
note for its next step); a done one none (fork it to go on).`,
				Flags: []cli.Flag{&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "a note for the next step, `TEXT` (- reads stdin)"}},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<thread>"); err != nil {
						return err
					}
					text, err := promptArg(c, s)
					if err != nil {
						return err
					}
					return runThreadMark(c.Context, c.App.Writer, s, c.Args().First(), func(e *thread.Engine, id string) (cas.Hash, error) {
						return e.Resume(c.Context, id, text)
					})
				}),
			},
			{
				Name:      "rm",
				Usage:     "delete a thread's ref and its failures ref",
				ArgsUsage: "<thread>",
				Description: `Their logs keep them for the log retention (30 days); then GC reclaims what
only they reached.`,
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
	for en, err := range e.Follow(ctx, id, from) {
		if err != nil {
			return err
		}
		if stop := pr.node(id, en); stop {
			return nil
		}
	}
	return nil
}

// node prints a chain node as the step loop's event for it, and reports
// whether the thread stopped for good (done or killed).
func (p *progressPrinter) node(id string, en *thread.StepEntry) bool {
	ev := thread.Event{Thread: id, Depth: en.Depth(), Head: en.Hash}
	switch {
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
	case thread.MarkKilled, thread.MarkResumed:
		// Marks the step loop never makes: printed here alike.
		p.mu.Lock()
		if p.json {
			writeJSON(p.w, ev)
		} else {
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
	var opts *thread.RunOptions
	var pr *progressPrinter
	if run {
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
	if !run {
		id, head, err := e.Start(ctx, res.Hash, prompt, cwd)
		if err != nil {
			return err
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
	rs, err := s.engine(repo).StepN(c.Context, id, n, opts)
	pr.finish()
	if err != nil {
		return err
	}
	return limitOutcome(id, rs)
}

// progressPrinter prints step-loop events: plain lines, JSON lines, and on
// a terminal a live line with the running role and its elapsed time.
type progressPrinter struct {
	w, errw io.Writer
	json    bool
	live    bool

	mu      sync.Mutex
	running *thread.Event
	since   time.Time
	stop    chan struct{}
	done    chan struct{}
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
			if p.running != nil {
				fmt.Fprintf(p.errw, "\r\033[K  %d %s (%s) %s", p.running.Depth, p.running.Role, p.running.Agent, time.Since(p.since).Round(100*time.Millisecond))
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
		if p.running == nil || p.running.Depth != ev.Depth {
			p.since = time.Now()
		}
		p.running = &ev
		return
	}
	if p.live {
		fmt.Fprint(p.errw, "\r\033[K")
	}
	p.running = nil
	elapsed := ev.Elapsed.Round(time.Millisecond)
	switch ev.Type {
	case thread.EventStep:
		fmt.Fprintf(p.w, "%d %s (%s) %s -> %s %s\n", ev.Depth, ev.Role, ev.Agent, ev.Status, ev.Head, elapsed)
	case thread.EventRetry:
		fmt.Fprintf(p.w, "%d %s (%s) retry: %s\n", ev.Depth, ev.Role, ev.Agent, oneLine(ev.Error))
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

func (p *progressPrinter) finish() {
	if p.live {
		close(p.stop)
		<-p.done
		p.mu.Lock()
		if p.running != nil {
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
	if f := info.LastFailure; f != nil {
		fmt.Fprintf(bw, "last failure: %s %s (agent %s) from head %s: %s (failure %s, detail %s)\n",
			time.UnixMilli(f.At).UTC().Format(time.RFC3339), f.Role, f.Agent, f.Head, oneLine(f.Error), info.FailureHash, f.Detail)
		if s := info.FailureSession; s != nil {
			fmt.Fprintf(bw, "failure session: %s\n", oneLine(s.Summary()))
		}
	}
	return bw.Flush()
}

func runThreadList(ctx context.Context, w io.Writer, s *session, opts thread.ListOptions) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	// Damaged threads are left out and reported (exit 1) after the others
	// are printed; threads of a kind this build does not know are named on
	// stderr.
	all, listErr := s.engine(repo).List(ctx, opts)
	if listErr != nil && all == nil {
		return listErr
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
	} else {
		bw := bufio.NewWriter(w)
		for _, info := range infos {
			fmt.Fprintf(bw, "%s %-9s %4d %s %s\n", info.ID, info.Status, info.Depth, info.WorkflowName, info.Created.Format(time.RFC3339))
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
		res, err := e.Registry().Resolve(ctx, wfArg)
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
		}
		out := struct {
			Thread     string   `json:"thread"`
			Workflow   cas.Hash `json:"workflow"`
			Steps      int      `json:"steps"`
			Divergence *div     `json:"divergence"`
		}{rep.Thread, rep.Workflow, rep.Steps, nil}
		if d != nil {
			out.Divergence = &div{d.Depth, d.After, d.From, d.Status, d.Old, d.New, d.Error, d.Invalid}
		}
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "thread %s under workflow %s: %d steps replayed\n", rep.Thread, rep.Workflow, rep.Steps)
		switch {
		case d == nil:
			fmt.Fprintln(w, "no divergence: routing reaches every recorded step")
		case d.Invalid:
			fmt.Fprintf(w, "diverges at depth %d: the recorded %s output no longer fits its schema: %s\n", d.Depth, d.Old, oneLine(d.Error))
		case d.Error != "":
			fmt.Fprintf(w, "diverges at depth %d: after %s (status %q) routing fails: %s (recorded: %s)\n", d.Depth, d.From, d.Status, oneLine(d.Error), d.Old)
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
