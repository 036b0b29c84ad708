package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
)

func casSchemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "register, show and list schemas",
		Subcommands: []*cli.Command{
			{
				Name:      "put",
				Usage:     "register a schema under a name",
				ArgsUsage: "<file|-> --name N",
				Description: `Reads a JSON Schema (draft 2020-12) from a JSON or YAML file, stores it as a
schema node and moves the ref schemas/<N> to it; prints its hash. Built-in
names are reserved.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Usage: "the schema's `N`ame (required)"},
				},
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<file|->"); err != nil {
						return err
					}
					if !c.IsSet("name") {
						return usageErrorf(s.cmd, "--name is required")
					}
					return runSchemaPut(c.Context, c.App.Writer, s, c.Args().First(), c.String("name"))
				}),
			},
			{
				Name:        "get",
				Usage:       "print a schema",
				ArgsUsage:   "<name|hash>",
				Description: `Prints the schema node's payload, the JSON Schema, as canonical JSON; with --json, {"hash","payload"}.`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 1, 1, "<name|hash>"); err != nil {
						return err
					}
					return runSchemaGet(c.Context, c.App.Writer, s, c.Args().First())
				}),
			},
			{
				Name:        "list",
				Usage:       "list the registered schemas",
				Description: `Prints "<name> <hash>" for each schemas/<name> ref, sorted by name; with --json, [{"name","hash"}].`,
				Action: withSession(func(c *cli.Context, s *session) error {
					if err := wantArgs(c, 0, 0, ""); err != nil {
						return err
					}
					return runSchemaList(c.Context, c.App.Writer, s)
				}),
			},
		},
	}
}

func runSchemaPut(ctx context.Context, w io.Writer, s *session, file, name string) error {
	if err := cas.ValidateRefName("schemas/" + name); err != nil {
		return usageErrorf(s.cmd, "invalid schema name %q: %w", name, err)
	}
	if file == "" {
		return usageErrorf(s.cmd, "empty file name")
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	payload, err := readPayload(s.stdin, file, repo.MaxNodeSize())
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(file), err)
	}
	h, err := repo.PutSchema(ctx, name, payload)
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(file), err)
	}
	if s.json {
		return writeJSON(w, struct {
			Name string   `json:"name"`
			Hash cas.Hash `json:"hash"`
		}{name, h})
	}
	_, err = fmt.Fprintln(w, h)
	return err
}

func runSchemaGet(ctx context.Context, w io.Writer, s *session, arg string) error {
	if err := checkTypeArg(s.cmd, arg); err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	h, err := repo.ResolveType(ctx, arg)
	if err != nil {
		return err
	}
	n, err := repo.Get(ctx, h)
	if err != nil {
		return err
	}
	if n.Type != cas.MetaSchema && h != cas.MetaSchema {
		return fmt.Errorf("%s: %w: not a schema node", h, cas.ErrInvalid)
	}
	payload, err := rawJSON(n.Payload)
	if err != nil {
		return fmt.Errorf("%s: %w", h, err)
	}
	if s.json {
		return writeJSON(w, struct {
			Hash    cas.Hash        `json:"hash"`
			Payload json.RawMessage `json:"payload"`
		}{h, payload})
	}
	_, err = w.Write(append(payload, '\n'))
	return err
}

func runSchemaList(ctx context.Context, w io.Writer, s *session) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	type schema struct {
		Name string   `json:"name"`
		Hash cas.Hash `json:"hash"`
	}
	list := []schema{}
	for ref, err := range repo.Refs().List(ctx, "schemas/") {
		if err != nil {
			return fmt.Errorf("list schemas: %w", err)
		}
		list = append(list, schema{strings.TrimPrefix(ref.Name, "schemas/"), ref.Hash})
	}
	if s.json {
		return writeJSON(w, list)
	}
	bw := bufio.NewWriter(w)
	for _, sc := range list {
		fmt.Fprintf(bw, "%s %s\n", sc.Name, sc.Hash)
	}
	return bw.Flush()
}
