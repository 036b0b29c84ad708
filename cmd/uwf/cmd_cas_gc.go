package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

func casGCCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "delete the objects no root reaches",
		Description: `Roots: every ref, every node named by a ref-log entry younger than its ref's
log retention, every node younger than the grace period, each with everything
it reaches. Durations are Go durations (90m, 1h30m) or days (7d, 1d12h); 0
means none. Prints nodes scanned, reachable, deleted, bytes freed, spared,
log entries pruned, temporary files removed (crash leftovers over an hour
old, whatever the grace), derived-cache entries dropped (those of nodes
and refs that are gone: the cache is droppable, so this only frees
space), failures and time taken; with --json, one object. Exits 1 if any
deletion failed.

--log-retention D sets the retention of every ref's log; --log-retention
PREFIX=D (repeatable) that of the refs whose names start with PREFIX, the
longest matching prefix winning. runs/ and slots/ (queue leases,
concurrency slots) keep theirs 1h (or D, if shorter) unless set.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would be deleted, change nothing"},
			&cli.StringFlag{Name: "grace", Usage: "keep nodes put or touched within `D`", DefaultText: "1h"},
			&cli.StringSliceFlag{Name: "log-retention", Usage: "keep ref-log entries, and what they name, for `D` (PREFIX=D: the refs under PREFIX)", DefaultText: "30d, runs/=1h, slots/=1h"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			opts := &cas.GCOptions{DryRun: c.Bool("dry-run")}
			var err error
			if opts.Grace, err = durationFlag(c, "grace"); err != nil {
				return err
			}
			if opts.LogRetention, opts.PrefixLogRetention, err = logRetentionFlag(c); err != nil {
				return err
			}
			return runGC(c.Context, c.App.Writer, s, opts)
		}),
	}
}

// durationFlag reads a duration flag: unset is 0 (the library's default),
// and an explicit 0 is -1 (GCOptions reads 0 as "the default" and a
// negative duration as none).
func durationFlag(c *cli.Context, name string) (time.Duration, error) {
	if !c.IsSet(name) {
		return 0, nil
	}
	d, err := parseDuration(c.String(name))
	if err != nil {
		return 0, usageErrorf(c.Command.HelpName, "invalid --%s: %v", name, err)
	}
	if d == 0 {
		d = -1
	}
	return d, nil
}

// logRetentionFlag reads the repeatable --log-retention: "D" is the
// retention of every log, "PREFIX=D" that of the refs under PREFIX. As
// with durationFlag, unset is 0 and an explicit 0 is -1.
func logRetentionFlag(c *cli.Context) (all time.Duration, prefixes map[string]time.Duration, err error) {
	bad := func(format string, a ...any) error {
		return usageErrorf(c.Command.HelpName, "invalid --log-retention: "+format, a...)
	}
	allSet := false
	for _, v := range c.StringSlice("log-retention") {
		prefix, text, isPrefix := strings.Cut(v, "=")
		if !isPrefix {
			text = v
		}
		d, err := parseDuration(text)
		if err != nil {
			return 0, nil, bad("%v", err)
		}
		if d == 0 {
			d = -1
		}
		switch {
		case !isPrefix && allSet:
			return 0, nil, bad("%q: the retention of every log is given twice", v)
		case !isPrefix:
			all, allSet = d, true
		case prefix == "":
			return 0, nil, bad("%q: an empty prefix (give D alone for every log)", v)
		case prefixes[prefix] != 0:
			return 0, nil, bad("%q: the retention of %s is given twice", v, prefix)
		default:
			if prefixes == nil {
				prefixes = map[string]time.Duration{}
			}
			prefixes[prefix] = d
		}
	}
	return all, prefixes, nil
}

// parseDuration reads a Go duration, optionally led by a whole number of
// days: "90m", "7d", "1d12h", "0".
func parseDuration(s string) (time.Duration, error) {
	orig := s
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90m, 12h or 7d", orig)
		}
		if n > uint64(math.MaxInt64/int64(24*time.Hour)) {
			return 0, fmt.Errorf("%q: too long", orig)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration such as 90m, 12h or 7d", orig)
	}
	if days > math.MaxInt64-d {
		return 0, fmt.Errorf("%q: too long", orig)
	}
	return days + d, nil
}

func runGC(ctx context.Context, w io.Writer, s *session, opts *cas.GCOptions) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	pctx, pw := s.withProgress(ctx)
	st, err := repo.GC(pctx, opts)
	pw.Close()
	if err != nil {
		return err
	}
	failures := make([]string, len(st.Failures))
	for i, f := range st.Failures {
		failures[i] = f.Error()
	}
	if s.json {
		err = writeJSON(w, struct {
			DryRun           bool     `json:"dryRun"`
			Scanned          int      `json:"scanned"`
			Reachable        int      `json:"reachable"`
			Deleted          int      `json:"deleted"`
			BytesFreed       int64    `json:"bytesFreed"`
			Spared           int      `json:"spared"`
			LogEntriesPruned int      `json:"logEntriesPruned"`
			TempFilesRemoved int      `json:"tempFilesRemoved"`
			CacheDropped     int      `json:"cacheEntriesDropped"`
			Failures         []string `json:"failures"`
			DurationMs       int64    `json:"durationMs"`
		}{st.DryRun, st.Scanned, st.Reachable, st.Deleted, st.BytesFreed, st.Spared,
			st.LogEntriesPruned, st.TempFilesRemoved, st.DerivedDropped, failures, st.Duration.Milliseconds()})
	} else {
		verb, freed, temps, cache := "deleted", "bytes freed", "temp files removed", "cache dropped"
		if st.DryRun {
			verb, freed, temps, cache = "would delete", "bytes to free", "would remove temps", "would drop cache"
		}
		_, err = fmt.Fprintf(w, "nodes scanned:      %d\nreachable:          %d\n%-19s %d\n%-19s %d\nspared:             %d\nlog entries pruned: %d\n%-19s %d\n%-19s %d\nfailures:           %d\ntime taken:         %s\n",
			st.Scanned, st.Reachable, verb+":", st.Deleted, freed+":", st.BytesFreed, st.Spared,
			st.LogEntriesPruned, temps+":", st.TempFilesRemoved, cache+":", st.DerivedDropped, len(st.Failures), st.Duration.Round(time.Millisecond))
	}
	if err != nil {
		return err
	}
	if len(st.Failures) > 0 {
		return fmt.Errorf("gc: %d failures:\n%w", len(st.Failures), errors.Join(st.Failures...))
	}
	return nil
}

func casFsckCommand() *cli.Command {
	return &cli.Command{
		Name:  "fsck",
		Usage: "verify the whole store",
		Description: `Re-hashes every object, checks it is canonical, valid against its schema,
with every edge present; checks every ref can be read, points at a present
node and agrees with its log, and that every ref its log says exists does.
Prints each problem on a line, with the refs that reach it, then a summary;
with --json, one object. Exits 1 if anything is wrong. With --dangling, also
lists, as "dangling <hash> <type>", every thread head (start, step or mark
node) that no ref reaches and no node refers to: a thread whose ref was
deleted, until GC collects it (a bad or missing ref's logged head is
reported as its problem instead, and GC keeps it). --repair first puts back the known values of
damaged built-in schemas (their objects and schemas/<name> refs, with a log
entry) and prints a "repaired" line for each.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dangling", Usage: "list the thread heads no ref reaches"},
			&cli.BoolFlag{Name: "repair", Usage: "put back damaged built-in schemas and their refs first"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			return runFsckWith(c.Context, c.App.Writer, s, c.Bool("dangling"), c.Bool("repair"))
		}),
	}
}

func runFsck(ctx context.Context, w io.Writer, s *session) error {
	return runFsckWith(ctx, w, s, false, false)
}

func runFsckWith(ctx context.Context, w io.Writer, s *session, dangling, repair bool) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	repaired := []string{}
	if repair {
		done, err := repo.RepairBuiltins(ctx)
		for _, r := range done {
			repaired = append(repaired, r.String())
			if !s.json {
				fmt.Fprintf(w, "repaired %s\n", r)
			}
		}
		if err != nil {
			s.warnf("fsck --repair: %v", err)
		}
	}
	opts := thread.FsckOptions()
	if dangling {
		opts.Dangling = thread.IsHead
	}
	pctx, pw := s.withProgress(ctx)
	rep, err := repo.Fsck(pctx, opts)
	pw.Close()
	if err != nil {
		return err
	}
	var repairedJSON *[]string
	if repair {
		repairedJSON = &repaired
	}
	var names map[cas.Hash]string
	if dangling {
		if names, err = schemaNames(ctx, repo); err != nil {
			return err
		}
	}
	typeName := func(t cas.Hash) string {
		if n, ok := names[t]; ok {
			return n
		}
		return t.String()
	}
	if s.json {
		type problem struct {
			Hash        hashOrNull `json:"hash"`
			Ref         *string    `json:"ref"`
			Kind        string     `json:"kind"`
			Message     string     `json:"message"`
			ReachedFrom []string   `json:"reachedFrom"`
		}
		ps := make([]problem, len(rep.Problems))
		for i, p := range rep.Problems {
			ps[i] = problem{Hash: hashOrNull(p.Hash), Kind: p.Kind, Message: p.Msg, ReachedFrom: p.ReachedFrom}
			if p.Ref != "" {
				ps[i].Ref = &p.Ref
			}
			if ps[i].ReachedFrom == nil {
				ps[i].ReachedFrom = []string{}
			}
		}
		type dangle struct {
			Hash cas.Hash `json:"hash"`
			Type string   `json:"type"`
		}
		var ds *[]dangle // left out without --dangling
		if dangling {
			list := []dangle{}
			for _, d := range rep.Dangling {
				list = append(list, dangle{d.Hash, typeName(d.Type)})
			}
			ds = &list
		}
		err = writeJSON(w, struct {
			OK             bool      `json:"ok"`
			Objects        int       `json:"objects"`
			Refs           int       `json:"refs"`
			TempFiles      int       `json:"tempFiles"`
			StaleTempFiles int       `json:"staleTempFiles"`
			OrphanCache    int       `json:"orphanCacheEntries"`
			Problems       []problem `json:"problems"`
			Dangling       *[]dangle `json:"dangling,omitempty"`
			Repaired       *[]string `json:"repaired,omitempty"` // with --repair only
		}{rep.OK(), rep.Objects, rep.Refs, rep.TempFiles, rep.StaleTempFiles, rep.OrphanDerived, ps, ds, repairedJSON})
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(w, p.String())
		}
		for _, d := range rep.Dangling {
			fmt.Fprintf(w, "dangling %s %s\n", d.Hash, typeName(d.Type))
		}
		if rep.TempFiles > 0 {
			fmt.Fprintf(w, "temporary files: %d (%d over an hour old: left by crashed writers; gc removes them)\n",
				rep.TempFiles, rep.StaleTempFiles)
		}
		if n := rep.OrphanDerived; n > 0 {
			entries := "entries"
			if n == 1 {
				entries = "entry"
			}
			fmt.Fprintf(w, "warning: derived cache: %d %s of nodes or refs that are gone (not a problem: gc drops them)\n", n, entries)
		}
		_, err = fmt.Fprintf(w, "checked %d objects and %d refs: %d problem%s\n",
			rep.Objects, rep.Refs, len(rep.Problems), plural(len(rep.Problems)))
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("fsck: %d problem%s found", len(rep.Problems), plural(len(rep.Problems)))
	}
	return nil
}
