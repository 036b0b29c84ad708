package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
)

func casGetCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "print a node's canonical bytes",
		ArgsUsage: "<hash> | --batch",
		Description: `Prints the node's stored bytes (canonical JSON) and a newline; with --json,
{"hash","type","payload"}.

With --batch, reads hashes from stdin, one per line, and prints for each
"<hash> <size>\n<bytes>\n", or "<hash> missing", "<hash> corrupt",
"<input> invalid" (like git cat-file --batch).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "batch", Usage: "read hashes from stdin, one per line"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if c.Bool("batch") {
				if err := wantArgs(c, 0, 0, ""); err != nil {
					return err
				}
				if s.json {
					return usageErrorf(s.cmd, "--json cannot be combined with --batch")
				}
				return runGetBatch(c.Context, c.App.Writer, s, s.stdin)
			}
			if err := wantArgs(c, 1, 1, "<hash>"); err != nil {
				return err
			}
			return runGet(c.Context, c.App.Writer, s, c.Args().First())
		}),
	}
}

func runGet(ctx context.Context, w io.Writer, s *session, arg string) error {
	h, err := parseHashArg(s.cmd, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	data, err := repo.Store().Get(ctx, h)
	if err != nil {
		return err
	}
	if !s.json {
		_, err = w.Write(append(data, '\n'))
		return err
	}
	n, err := cas.DecodeNode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", h, err)
	}
	j, err := n.JSON(h)
	if err != nil {
		return fmt.Errorf("%s: %w", h, err)
	}
	return writeJSON(w, j)
}

// runGetBatch answers hashes read from r, one per line, in order. Output is
// buffered, and flushed whenever no more input is waiting, so a program can
// also drive it one line at a time. A line that is not a hash, or names an
// absent or corrupt object, is answered as such; other errors stop it.
func runGetBatch(ctx context.Context, w io.Writer, s *session, r io.Reader) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	in := bufio.NewReaderSize(r, 64<<10)
	out := bufio.NewWriterSize(w, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, rerr := in.ReadString('\n')
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("read stdin: %w", rerr)
		}
		if line == "" && rerr == io.EOF {
			break
		}
		input := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if h, err := cas.ParseHash(input); err != nil {
			fmt.Fprintf(out, "%s invalid\n", input)
		} else {
			data, err := repo.Store().Get(ctx, h)
			switch {
			case err == nil:
				fmt.Fprintf(out, "%s %d\n", h, len(data))
				out.Write(data)
				out.WriteByte('\n')
			case errors.Is(err, cas.ErrNotFound):
				fmt.Fprintf(out, "%s missing\n", h)
			case errors.Is(err, cas.ErrCorrupt):
				fmt.Fprintf(out, "%s corrupt\n", h)
			default:
				out.Flush()
				return err
			}
		}
		if in.Buffered() == 0 {
			if err := out.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
	}
	return out.Flush()
}

func casHasCommand() *cli.Command {
	return &cli.Command{
		Name:        "has",
		Usage:       "tell whether an object is in the store",
		ArgsUsage:   "<hash>",
		Description: `Prints "yes" (exit status 0) or "no" (exit status 3); with --json, {"hash","present"}.`,
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 1, 1, "<hash>"); err != nil {
				return err
			}
			return runHas(c.Context, c.App.Writer, s, c.Args().First())
		}),
	}
}

func runHas(ctx context.Context, w io.Writer, s *session, arg string) error {
	h, err := parseHashArg(s.cmd, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	ok, err := repo.Store().Has(ctx, h)
	if err != nil {
		return err
	}
	if s.json {
		err = writeJSON(w, struct {
			Hash    cas.Hash `json:"hash"`
			Present bool     `json:"present"`
		}{h, ok})
	} else if ok {
		_, err = fmt.Fprintln(w, "yes")
	} else {
		_, err = fmt.Fprintln(w, "no")
	}
	if err != nil {
		return err
	}
	if !ok {
		return &silentError{fmt.Errorf("%s: %w", h, cas.ErrNotFound)}
	}
	return nil
}
