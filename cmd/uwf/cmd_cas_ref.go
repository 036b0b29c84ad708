package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
)

func casRefCommand() *cli.Command {
	return &cli.Command{
		Name:  "ref",
		Usage: "show refs and their logs",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list refs",
				ArgsUsage: "[prefix]",
				Description: `Prints "<hash> <name>" for every ref whose name starts with prefix (all
refs if none), sorted by name, like git show-ref; with --json,
[{"name","hash"}].`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 1, "[prefix]"); err != nil {
						return err
					}
					return runRefList(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "log",
				Usage:     "show a ref's log",
				ArgsUsage: "<name>",
				Description: `Prints the ref's changes, oldest first, as
"<time> <old> -> <new> <message>": time in RFC 3339, UTC, with
milliseconds; 0000000000000 for "none" (old: the change created the ref;
new: it deleted it). A deleted ref's log is kept until GC prunes it. With
--json, [{"old","new","time","message"}], time in Unix milliseconds.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name>"); err != nil {
						return err
					}
					return runRefLog(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
		},
	}
}

func runRefList(ctx context.Context, w io.Writer, s *session, prefix string) error {
	// A prefix is a ref name, or a part of one: check it as far as it goes.
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		if err := cas.ValidateRefName(p); err != nil {
			return usageErrorf(s.cmd, "invalid ref prefix %q: %w", prefix, err)
		}
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	type ref struct {
		Name string   `json:"name"`
		Hash cas.Hash `json:"hash"`
	}
	list := []ref{}
	for r, err := range repo.Refs().List(ctx, prefix) {
		if err != nil {
			return fmt.Errorf("list refs: %w", err)
		}
		list = append(list, ref{r.Name, r.Hash})
	}
	if s.json {
		return writeJSON(w, list)
	}
	bw := bufio.NewWriter(w)
	for _, r := range list {
		fmt.Fprintf(bw, "%s %s\n", r.Hash, r.Name)
	}
	return bw.Flush()
}

// logTimeFormat is RFC 3339 in UTC with milliseconds, the precision of
// stored times.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func runRefLog(ctx context.Context, w io.Writer, s *session, name string) error {
	if err := cas.ValidateRefName(name); err != nil {
		return &usageError{cmd: s.cmd, err: err}
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	entries, err := repo.Refs().Log(ctx, name)
	if err != nil {
		return err
	}
	if s.json {
		if entries == nil {
			entries = []cas.LogEntry{}
		}
		return writeJSON(w, entries)
	}
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		fmt.Fprintf(bw, "%s %s -> %s", time.UnixMilli(e.Time).UTC().Format(logTimeFormat), e.Old, e.New)
		if e.Message != "" {
			fmt.Fprintf(bw, " %s", oneLine(e.Message))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
