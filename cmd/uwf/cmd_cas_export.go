package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/progress"
)

func casExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write the store, or part of it, as a tar to stdout",
		ArgsUsage: "[<ref|hash>...] > f.tar",
		Description: `Writes a tar (docs/FORMAT.md): objects/<hash> with each object's canonical
bytes, children before parents and the meta-schema first; refs/<name> with
each ref's hash; logs/<name>.jsonl with each ref's log, deleted refs' logs
included; last, an end record counting them, with their digest. With no
arguments everything is exported; with refs or hashes, their closure,
those refs and their logs. Two exports of one store are
byte-identical. A summary goes to stderr. Refuses to write to a terminal.`,
		Action: withSession(func(c *cli.Context, s *session) error {
			return runExport(c.Context, c.App.Writer, c.App.ErrWriter, s, c.Args().Slice())
		}),
	}
}

func casImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "read a tar made by export into the store",
		ArgsUsage: "[--force] < f.tar",
		Description: `Verifies every object (hash, canonical form, schema, edges) as it stores it;
creates missing refs with their logs as they are; leaves refs already at
the tar's value alone; reports refs that differ (exit 4) unless --force
moves them (logging "import --force"). Importing twice changes nothing.
Refs and logs are applied only from a whole tar: one cut short, or whose
end record does not match, changes no ref (objects read may stay).
Prints what it did; with --json, one object.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "move refs that differ to the tar's value"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			return runImport(c.Context, c.App.Writer, s, c.Bool("force"))
		}),
	}
}

func runExport(ctx context.Context, w, errw io.Writer, s *session, roots []string) error {
	if s.json {
		return usageErrorf(s.cmd, "--json cannot be combined with export (the tar goes to stdout)")
	}
	for _, r := range roots {
		if cas.ValidateRefName(r) != nil {
			if _, err := cas.ParseHash(r); err != nil {
				return usageErrorf(s.cmd, "invalid root %q: neither a ref name nor a hash", r)
			}
		}
	}
	if progress.IsTerminal(w) { // not /dev/null, which is a character device too
		return usageErrorf(s.cmd, "refusing to write a tar to a terminal: redirect stdout to a file")
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	pctx, pw := s.withProgress(ctx)
	st, err := cas.Export(pctx, repo, w, roots)
	pw.Close()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(errw, "exported %d objects (%d bytes), %d refs, %d logs (%d entries)\n",
		st.Objects, st.Bytes, st.Refs, st.Logs, st.LogEntries)
	return err
}

func runImport(ctx context.Context, w io.Writer, s *session, force bool) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	pctx, pw := s.withProgress(ctx)
	rep, err := cas.Import(pctx, repo, s.stdin, &cas.ImportOptions{Force: force})
	pw.Close()
	if rep == nil || err != nil && !errors.Is(err, cas.ErrConflict) {
		return err // a bad tar: nothing to report beyond the error
	}
	if s.json {
		type conflict struct {
			Name     string     `json:"name"`
			Current  hashOrNull `json:"current"`
			Imported cas.Hash   `json:"imported"`
			Clash    string     `json:"clash,omitempty"`
		}
		out := struct {
			Objects     int        `json:"objects"`
			Bytes       int64      `json:"bytes"`
			Created     []string   `json:"created"`
			Unchanged   []string   `json:"unchanged"`
			Forced      []string   `json:"forced"`
			Conflicts   []conflict `json:"conflicts"`
			Logs        int        `json:"logs"`
			LogsSkipped []string   `json:"logsSkipped"`
			EndRecord   bool       `json:"endRecord"`
		}{rep.Objects, rep.Bytes, nonNil(rep.Created), nonNil(rep.Unchanged), nonNil(rep.Forced), []conflict{}, rep.Logs, nonNil(rep.LogsSkipped), rep.EndRecord}
		for _, c := range rep.Conflicts {
			out.Conflicts = append(out.Conflicts, conflict{c.Name, hashOrNull(c.Current), c.Imported, c.Clash})
		}
		if werr := writeJSON(w, out); werr != nil {
			return werr
		}
	} else {
		fmt.Fprintf(w, "objects:   %d (%d bytes)\n", rep.Objects, rep.Bytes)
		fmt.Fprintf(w, "created:   %d%s\n", len(rep.Created), list(rep.Created))
		fmt.Fprintf(w, "unchanged: %d\n", len(rep.Unchanged))
		fmt.Fprintf(w, "forced:    %d%s\n", len(rep.Forced), list(rep.Forced))
		fmt.Fprintf(w, "logs of deleted refs: %d merged, %d skipped%s\n", rep.Logs, len(rep.LogsSkipped), list(rep.LogsSkipped))
		for _, c := range rep.Conflicts {
			fmt.Fprintf(w, "conflict:  %s\n", c)
		}
		if rep.EndRecord {
			fmt.Fprintf(w, "end record: counts and digest match\n")
		} else {
			fmt.Fprintf(w, "end record: none (a tar from format version 1: whole by its end-of-archive marker)\n")
		}
	}
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func list(names []string) string {
	if len(names) == 0 {
		return ""
	}
	if len(names) > 10 {
		return " (" + strings.Join(names[:10], ", ") + ", ...)"
	}
	return " (" + strings.Join(names, ", ") + ")"
}
