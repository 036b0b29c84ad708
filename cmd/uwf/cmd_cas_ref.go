package main

import (
	"bufio"
	"context"
	"errors"
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
		Usage: "show, set, remove and restore refs, and show their logs",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list refs",
				ArgsUsage: "[prefix]",
				Description: `Prints "<hash> <name>" for every ref whose name starts with prefix (all
refs if none), sorted by name, like git show-ref; with --json,
[{"name","hash"}]. A ref that cannot be read is left out and named on
stderr, and the exit status is 1, after the others are printed.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 1, "[prefix]"); err != nil {
						return err
					}
					return runRefList(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "set",
				Usage:     "point a ref at a node",
				ArgsUsage: "<name> <hash>",
				Description: `Creates the ref, or moves it from the value it holds (exit 4 if it moves
meanwhile). The node must be in the store (exit 3). A ref whose file cannot
be read, or a missing ref (its log says it exists, but it does not: see
"uwf cas fsck"), is refused unless --force replaces it; the log then records
the change from the last logged value.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "force", Usage: "replace a ref that cannot be read, or that its log says is missing"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 2, 2, "<name> <hash>"); err != nil {
						return err
					}
					name := c.Args().Get(0)
					if err := cas.ValidateRefName(name); err != nil {
						return &usageError{cmd: s.cmd, err: err}
					}
					h, err := parseHashArg(s.cmd, c.Args().Get(1))
					if err != nil {
						return err
					}
					if h.IsZero() {
						return usageErrorf(s.cmd, "invalid hash %s: the zero hash names no node (use uwf cas ref rm)", h)
					}
					return runRefChange(c.Context, s, name, h, c.Bool("force"))
				}),
			},
			{
				Name:      "rm",
				Usage:     "remove a ref",
				ArgsUsage: "<name>",
				Description: `Deletes the ref (exit 3 if it does not exist, 4 if it moves meanwhile); its
log is kept until GC prunes it. A ref whose file cannot be read, or a
missing ref (its log says it exists, but it does not), is refused unless
--force removes it, or records it deleted.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "force", Usage: "remove a ref that cannot be read, or record a missing one deleted"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name>"); err != nil {
						return err
					}
					name := c.Args().First()
					if err := cas.ValidateRefName(name); err != nil {
						return &usageError{cmd: s.cmd, err: err}
					}
					return runRefChange(c.Context, s, name, 0, c.Bool("force"))
				}),
			},
			{
				Name:      "restore",
				Usage:     "restore a ref from its log",
				ArgsUsage: "<name>",
				Description: `Brings the ref back to the newest value its log records, or to --to <hash>
(an old or new value of one of its entries), like a restore from git's
reflog: a ref deleted behind uwf's back, a ref whose file cannot be read,
or a ref moved where it should not be. The node must still be in the store.
Prints "<hash> <name>"; with --json, {"name","hash"}. Exit 3 if the ref has
no log, the log does not hold --to, or the node is gone; 4 if the ref moves
meanwhile.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "to", Usage: "restore to `HASH`, a value in the ref's log"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name>"); err != nil {
						return err
					}
					name := c.Args().First()
					if err := cas.ValidateRefName(name); err != nil {
						return &usageError{cmd: s.cmd, err: err}
					}
					var to cas.Hash
					if c.IsSet("to") {
						var err error
						if to, err = parseHashArg(s.cmd, c.String("to")); err != nil {
							return err
						}
						if to.IsZero() {
							return usageErrorf(s.cmd, "invalid --to %s: the zero hash names no node (use uwf cas ref rm)", to)
						}
					}
					return runRefRestore(c.Context, c.App.Writer, s, name, to)
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
	list := []cas.Ref{}
	var bad []error
	for r, err := range repo.Refs().List(ctx, prefix) {
		if errors.Is(err, cas.ErrBadRef) {
			bad = append(bad, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("list refs: %w", err)
		}
		list = append(list, r)
	}
	if s.json {
		err = writeJSON(w, list)
	} else {
		bw := bufio.NewWriter(w)
		for _, r := range list {
			fmt.Fprintf(bw, "%s %s\n", r.Hash, r.Name)
		}
		err = bw.Flush()
	}
	if err != nil {
		return err
	}
	return badRefsError(bad)
}

// badRefsError reports the refs a listing left out because they cannot be
// read, one per line, with the way to repair them; nil if none.
func badRefsError(bad []error) error {
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%d ref%s cannot be read and %s left out (repair with uwf cas ref restore, or uwf cas ref set|rm --force):\n%w",
		len(bad), plural(len(bad)), map[bool]string{true: "was", false: "were"}[len(bad) == 1], errors.Join(bad...))
}

func runRefChange(ctx context.Context, s *session, name string, h cas.Hash, force bool) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	var change error
	if h.IsZero() {
		change = repo.RemoveRef(ctx, name, force)
	} else {
		change = repo.SetRef(ctx, name, h, force)
	}
	var missing *cas.MissingRefError
	switch {
	case force || change == nil:
	case errors.Is(change, cas.ErrBadRef), errors.As(change, &missing):
		what := "replaces it"
		if h.IsZero() {
			what = "removes it"
		}
		return fmt.Errorf("%w (uwf cas ref restore %s brings it back from its log; --force %s)", change, name, what)
	}
	return change
}

func runRefRestore(ctx context.Context, w io.Writer, s *session, name string, to cas.Hash) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	h, err := repo.RestoreRef(ctx, name, to)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, cas.Ref{Name: name, Hash: h})
	}
	_, err = fmt.Fprintf(w, "%s %s\n", h, name)
	return err
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
