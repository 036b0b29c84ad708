package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "register the bundled example workflow and run it end to end, offline",
		Description: `In --home (without --home or UWF_HOME, in a fresh temporary home whose path
it prints): registers examples/review-loop.yaml, runs a thread to $END with
the synth agent (which rejects once, so the review loop turns), prints the
thread, forks it at depth 2 and steps the fork to its end; then registers
examples/parallel-review.yaml (two planners in a race, two reviewers in
parallel, each branch a child thread) and runs and reads a thread of it;
then runs "cas gc --dry-run" and "cas fsck". Every part is labelled with the
command that does the same.`,
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			if s.json {
				return usageErrorf(s.cmd, "uwf demo has no --json output")
			}
			return runDemo(c.Context, c.App.Writer, s)
		}),
	}
}

func runDemo(ctx context.Context, w io.Writer, s *session) error {
	part := 0
	label := func(format string, args ...any) {
		part++
		if part > 1 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %d. %s\n", part, fmt.Sprintf(format, args...))
	}
	if s.home == "" && s.store == "" { // neither --home nor UWF_HOME: never the user's own home
		dir, err := os.MkdirTemp("", "uwf-demo-")
		if err != nil {
			return err
		}
		s.home = dir
		label("a fresh home: %s (pass --home DIR to use another)", dir)
	} else {
		home, err := s.homeDir()
		if err != nil {
			return err
		}
		label("home: %s", home)
	}
	fmt.Fprintf(w, "store: %s\n", s.printableStoreURL())

	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	e := s.engine(repo)

	label("uwf workflow put examples/review-loop.yaml")
	data, err := examples.FS.ReadFile("review-loop.yaml")
	if err != nil {
		return err
	}
	wf, err := registry.Parse("examples/review-loop.yaml", data)
	if err != nil {
		return err
	}
	res, err := e.Registry().Put(ctx, wf)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s %s\n", res.Hash, res.Name)

	const prompt = "Add a --json flag to the report command"
	label("uwf thread run review-loop -p %q --agent synth", prompt)
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	pr := newProgress(w, io.Discard, false)
	opts := &thread.RunOptions{Agent: "synth"}
	id, rs, err := runWithProgress(ctx, e, pr, res.Hash, prompt, cwd, opts)
	if err == nil {
		err = limitOutcome(id, rs)
	}
	if err != nil {
		return err
	}

	label("uwf thread read %s", id)
	r, err := e.Read(ctx, id, thread.ReadOptions{})
	if err != nil {
		return err
	}
	io.WriteString(w, r.Text)

	label("uwf thread fork %s --at 2, then uwf thread step <fork> -n 0 --agent synth", id)
	fork, at, err := e.ForkAt(ctx, id, 2)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "fork %s shares the first 2 steps (up to %s) with %s\n", fork, at, id)
	pr.begin(fork)
	rs, err = e.StepN(ctx, fork, 0, opts)
	if err == nil {
		err = limitOutcome(fork, rs)
	}
	if err != nil {
		return err
	}

	label("uwf workflow put examples/parallel-review.yaml")
	if data, err = examples.FS.ReadFile("parallel-review.yaml"); err != nil {
		return err
	}
	if wf, err = registry.Parse("examples/parallel-review.yaml", data); err != nil {
		return err
	}
	pres, err := e.Registry().Put(ctx, wf)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s %s\n", pres.Hash, pres.Name)
	label("uwf thread run parallel-review -p %q --agent synth", prompt)
	pid, rs, err := runWithProgress(ctx, e, pr, pres.Hash, prompt, cwd, opts)
	if err == nil {
		err = limitOutcome(pid, rs)
	}
	if err != nil {
		return err
	}
	label("uwf thread read %s", pid)
	if r, err = e.Read(ctx, pid, thread.ReadOptions{}); err != nil {
		return err
	}
	io.WriteString(w, r.Text)

	label("uwf thread list")
	if err := runThreadList(ctx, w, s, thread.ListOptions{Limit: 5}, true); err != nil {
		return err
	}

	label("uwf cas gc --dry-run")
	if err := runGC(ctx, w, s, &cas.GCOptions{DryRun: true}); err != nil {
		return err
	}

	label("uwf cas fsck")
	if err := runFsck(ctx, w, s); err != nil {
		return err
	}
	home, _ := s.homeDir()
	fmt.Fprint(w, demoNext(home, s.store, id, fork, at))
	return nil
}

// demoNext is the demo's closing advice: commands to look further, on the
// same home and, when --store (or UWF_STORE) named one, the same store,
// its password hidden (the user puts it back, or sets UWF_STORE).
func demoNext(home, storeURL, thread, fork string, at cas.Hash) string {
	uwf := "uwf --home " + shellWord(home)
	hidden := false
	if storeURL != "" {
		printable := secret.RedactURL(absStoreURL(storeURL))
		hidden = printable != absStoreURL(storeURL)
		uwf += " --store " + shellWord(printable)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nNext: %s thread show %s\n      %s thread steps %s\n      %s cas walk --tree %s\n      %s serve    # the threads in your browser\n",
		uwf, thread, uwf, fork, uwf, at, uwf)
	if hidden {
		b.WriteString("      (the store's password is shown as xxxxx: put yours back, or set UWF_STORE and drop --store)\n")
	}
	return b.String()
}
