package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

// workflowCommand is "uwf workflow": workflows by name, with versions.
func workflowCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflow",
		Usage: "validate, register and inspect workflows",
		Subcommands: []*cli.Command{
			{
				Name:      "put",
				Usage:     "validate a workflow file and register it under its name",
				ArgsUsage: "<file>",
				Description: `Validates the YAML file (docs/WORKFLOWS.md), stores each role's schema and the
workflow as nodes, and moves workflows/<name> to it. Prints "<hash> <name>",
with " (unchanged)" when the file was already the current version (nothing is
written then), and validate's warnings on stderr. With --json,
{"name","hash","previous","changed"}.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<file>"); err != nil {
						return err
					}
					return runWorkflowPut(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "validate",
				Usage:     "check a workflow file without storing it",
				ArgsUsage: "<file>",
				Description: `Prints "<file>: ok", or every problem as "file:line:col: message" (on stderr,
exit 1). A valid file may get warnings, "file:line:col: warning: message" on
stderr (exit 0): a prompt field its role's schema does not require. Nothing
is stored; the store is not opened. With --json, {"file","ok","warnings"}.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<file>"); err != nil {
						return err
					}
					return runWorkflowValidate(c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "show",
				Usage:     "show a registered workflow",
				ArgsUsage: "<name|hash>",
				Description: `Prints the workflow's name, hash, description, maxSteps, roles (with the hash
of each role's schema and its statuses) and graph. With --json,
{"name","hash","payload"}: the workflow node's payload as stored.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name|hash>"); err != nil {
						return err
					}
					if arg := c.Args().First(); !registry.ValidName(arg) {
						if _, err := cas.ParseHash(arg); err != nil {
							return usageErrorf(s.cmd, "invalid workflow %q: neither a workflow name nor a hash", arg)
						}
					}
					return runWorkflowShow(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:  "list",
				Usage: "list the registered workflows",
				Description: `Prints "<name> <hash> <updated> <description>" per workflow, sorted by name;
with --json, [{"name","hash","updated","description"}] (updated in Unix ms).`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 0, ""); err != nil {
						return err
					}
					return runWorkflowList(c.Context, c.App.Writer, s)
				}),
			},
			{
				Name:      "history",
				Usage:     "list a workflow's versions",
				ArgsUsage: "<name>",
				Description: `Prints the versions of workflows/<name>, oldest first, from its ref log:
"<time> <hash> <message>" (0000000000000 for a removal). With --json,
[{"hash","old","time","message"}].`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name>"); err != nil {
						return err
					}
					return runWorkflowHistory(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:      "rollback",
				Usage:     "move a workflow back to an earlier version",
				ArgsUsage: "<name> [hash]",
				Description: `Moves workflows/<name> to the version <hash> (one its history names), or
without a hash to the version before the current one. Works after rm too.
Prints the hash now current.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 2, "<name> [hash]"); err != nil {
						return err
					}
					var to cas.Hash
					if c.NArg() == 2 {
						var err error
						if to, err = parseHashArg(s.cmd, c.Args().Get(1)); err != nil {
							return err
						}
					}
					return runWorkflowRollback(c.Context, c.App.Writer, s, c.Args().First(), to)
				}),
			},
			{
				Name:      "rm",
				Usage:     "remove a workflow's name",
				ArgsUsage: "<name>",
				Description: `Deletes workflows/<name>. Its log keeps every version for the log retention
(30 days): GC keeps them until then, and rollback restores them.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name>"); err != nil {
						return err
					}
					return runWorkflowRm(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
		},
	}
}

func checkWorkflowName(cmd, name string) error {
	if !registry.ValidName(name) {
		return usageErrorf(cmd, "invalid workflow name %q: want [A-Za-z0-9][A-Za-z0-9._-]*, at most %d characters", name, registry.MaxNameLen)
	}
	return nil
}

func runWorkflowPut(ctx context.Context, w io.Writer, s *session, file string) error {
	data, err := registry.ReadFile(file)
	if err != nil {
		return err
	}
	wf, err := registry.Parse(file, data)
	if err != nil {
		return err
	}
	printWarnings(s, file, wf.Warnings())
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	res, err := registry.New(repo).Put(ctx, wf)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, struct {
			Name     string     `json:"name"`
			Hash     cas.Hash   `json:"hash"`
			Previous hashOrNull `json:"previous"`
			Changed  bool       `json:"changed"`
		}{res.Name, res.Hash, hashOrNull(res.Previous), res.Changed})
	}
	suffix := ""
	if !res.Changed {
		suffix = " (unchanged)"
	}
	_, err = fmt.Fprintf(w, "%s %s%s\n", res.Hash, res.Name, suffix)
	return err
}

func runWorkflowValidate(w io.Writer, s *session, file string) error {
	data, err := registry.ReadFile(file)
	if err != nil {
		return err
	}
	wf, err := registry.Parse(file, data)
	if err != nil {
		return err
	}
	warnings := wf.Warnings()
	if s.json {
		list := make([]string, len(warnings))
		for i, p := range warnings {
			list[i] = file + ":" + p.String()
		}
		return writeJSON(w, struct {
			File     string   `json:"file"`
			OK       bool     `json:"ok"`
			Warnings []string `json:"warnings"`
		}{file, true, list})
	}
	printWarnings(s, file, warnings)
	_, err = fmt.Fprintf(w, "%s: ok\n", file)
	return err
}

// printWarnings prints a workflow file's warnings on stderr, one
// "file:line:col: warning: message" a line, as compilers print them.
func printWarnings(s *session, file string, warnings []registry.Problem) {
	for _, p := range warnings {
		at := ""
		if p.Line > 0 {
			at = strconv.Itoa(p.Line) + ":"
			if p.Column > 0 {
				at += strconv.Itoa(p.Column) + ":"
			}
		}
		fmt.Fprintf(s.stderr, "%s:%s warning: %s\n", file, at, p.Msg)
	}
}

func runWorkflowShow(ctx context.Context, w io.Writer, s *session, arg string) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	st, err := registry.New(repo).Show(ctx, arg)
	if err != nil {
		return err
	}
	if s.json {
		j, err := st.JSON()
		if err != nil {
			return err
		}
		return writeJSON(w, j)
	}
	bw := bufio.NewWriter(w)
	wf := st.Workflow
	fmt.Fprintf(bw, "workflow:    %s\nhash:        %s\n", st.Name, st.Hash)
	if wf.Description != "" {
		fmt.Fprintf(bw, "description: %s\n", wf.Description)
	}
	if wf.MaxSteps > 0 {
		fmt.Fprintf(bw, "maxSteps:    %d\n", wf.MaxSteps)
	}
	fmt.Fprintf(bw, "roles:\n")
	for _, name := range wf.RoleNames() {
		fmt.Fprintf(bw, "  %-12s schema %s  statuses: %s\n", name, st.Schemas[name], strings.Join(wf.Statuses(name), ", "))
	}
	fmt.Fprintf(bw, "graph:\n")
	for _, e := range wf.Edges() {
		fmt.Fprintf(bw, "  %s --%s--> %s", e.From, e.Status, e.Role)
		if e.Prompt != "" {
			fmt.Fprintf(bw, "  %q", e.Prompt)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func runWorkflowList(ctx context.Context, w io.Writer, s *session) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	// Damaged workflows are left out and named (exit 1) after the others
	// are printed.
	entries, listErr := registry.New(repo).List(ctx)
	if listErr != nil && entries == nil {
		return listErr
	}
	if err := printWorkflows(w, s, entries); err != nil {
		return err
	}
	if listErr != nil {
		return &leftOutError{fmt.Errorf("%w\n(uwf cas fsck reports every damaged ref and node; uwf cas ref restore repairs a ref from its log, uwf workflow rollback a workflow)", listErr)}
	}
	return nil
}

func printWorkflows(w io.Writer, s *session, entries []registry.Entry) error {
	if s.json {
		out := []registry.EntryJSON{}
		for _, e := range entries {
			out = append(out, e.JSON())
		}
		return writeJSON(w, out)
	}
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		fmt.Fprintf(bw, "%s %s %s %s\n", e.Name, e.Hash, e.Updated.UTC().Format(logTimeFormat), oneLine(e.Description))
	}
	return bw.Flush()
}

func runWorkflowHistory(ctx context.Context, w io.Writer, s *session, name string) error {
	if err := checkWorkflowName(s.cmd, name); err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	versions, err := registry.New(repo).History(ctx, name)
	if err != nil {
		return err
	}
	if s.json {
		out := []registry.VersionJSON{}
		for _, v := range versions {
			out = append(out, v.JSON())
		}
		return writeJSON(w, out)
	}
	bw := bufio.NewWriter(w)
	for _, v := range versions {
		fmt.Fprintf(bw, "%s %s %s\n", v.Time.UTC().Format(logTimeFormat), v.Hash, oneLine(v.Message))
	}
	return bw.Flush()
}

func runWorkflowRollback(ctx context.Context, w io.Writer, s *session, name string, to cas.Hash) error {
	if err := checkWorkflowName(s.cmd, name); err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	h, err := registry.New(repo).Rollback(ctx, name, to)
	if err != nil {
		return err
	}
	return printHash(w, s, h)
}

func runWorkflowRm(ctx context.Context, w io.Writer, s *session, name string) error {
	if err := checkWorkflowName(s.cmd, name); err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	if err := registry.New(repo).Remove(ctx, name); err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, struct {
			Name    string `json:"name"`
			Removed bool   `json:"removed"`
		}{name, true})
	}
	_, err = fmt.Fprintf(w, "removed %s (its versions stay in the log for the log retention)\n", name)
	return err
}
