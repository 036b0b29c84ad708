package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/progress"
)

func casRefsCommand() *cli.Command {
	return &cli.Command{
		Name:      "refs",
		Usage:     "list a node's edges",
		ArgsUsage: "<hash>",
		Description: `Prints each edge of the node as "<hash> <path>": path is "type" for its type,
else "payload/..." (a JSON pointer below the payload) for a cas_ref in its
payload. With --json, [{"hash","path"}].`,
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 1, 1, "<hash>"); err != nil {
				return err
			}
			return runRefs(c.Context, c.App.Writer, s, c.Args().First())
		}),
	}
}

func runRefs(ctx context.Context, w io.Writer, s *session, arg string) error {
	h, err := parseHashArg(s.cmd, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	n, err := repo.Get(ctx, h)
	if err != nil {
		return err
	}
	edges, err := repo.Edges(ctx, n)
	if err != nil {
		return fmt.Errorf("edges of %s: %w", h, err)
	}
	if s.json {
		if edges == nil {
			edges = []cas.Edge{}
		}
		return writeJSON(w, edges)
	}
	bw := bufio.NewWriter(w)
	for _, e := range edges {
		fmt.Fprintf(bw, "%s %s\n", e.Hash, e.Path)
	}
	return bw.Flush()
}

func casWalkCommand() *cli.Command {
	return &cli.Command{
		Name:      "walk",
		Usage:     "list every node reachable from a node",
		ArgsUsage: "<hash>",
		Description: `Prints every node reachable from <hash> once, breadth-first, as
"<hash> <type>" (the type's schema name, else its hash). With --tree, prints
the graph depth-first as an indented tree, each edge as
"<path>: <hash> <type>"; a node already shown is marked "(seen)" and not
expanded again. With --json, an array of {"hash","type","typeName"}
(with --tree also "depth", "path", "seen"). A missing or corrupt node stops
the walk with an error naming it.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "tree", Usage: "print an indented tree, depth first"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 1, 1, "<hash>"); err != nil {
				return err
			}
			return runWalk(c.Context, c.App.Writer, s, c.Args().First(), c.Bool("tree"))
		}),
	}
}

// walkEntry is one node of walk's --json output.
type walkEntry struct {
	Hash     cas.Hash `json:"hash"`
	Type     cas.Hash `json:"type"`
	TypeName *string  `json:"typeName"` // null: the type has no schema name
	// With --tree only:
	Depth *int    `json:"depth,omitempty"`
	Path  *string `json:"path,omitempty"`
	Seen  *bool   `json:"seen,omitempty"`
}

func runWalk(ctx context.Context, w io.Writer, s *session, arg string, tree bool) error {
	h, err := parseHashArg(s.cmd, arg)
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	names, err := schemaNames(ctx, repo)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(w, 64<<10)
	p := &walkPrinter{w: out, json: s.json, tree: tree, names: names}
	// On a terminal the listing itself shows the progress: a bar would be
	// drawn over its lines.
	pctx, pw := ctx, (*progress.Writer)(nil)
	if !progress.IsTerminal(w) || s.progress != nil {
		pctx, pw = s.withProgress(ctx)
	}
	if tree {
		c := pw.Start("walk", "nodes", "nodes", 0)
		err = walkTree(ctx, repo, h, p, c)
		c.End()
	} else {
		err = repo.Walk(pctx, []cas.Hash{h}, func(h cas.Hash, n cas.Node, _ []cas.Hash) error {
			return p.node(walkEntry{Hash: h, Type: n.Type}, 0, "", false)
		})
	}
	pw.Close()
	if ferr := p.finish(err == nil); err == nil {
		err = ferr
	}
	return err
}

// walkTree prints the graph below root depth-first, expanding each node
// once. It keeps its own stack: a thread's chain may be deeper than is
// comfortable for recursion.
func walkTree(ctx context.Context, repo *cas.Repo, root cas.Hash, p *walkPrinter, c *progress.Counter) error {
	type frame struct {
		hash  cas.Hash
		from  cas.Hash
		path  string
		depth int
	}
	stack := []frame{{hash: root}}
	seen := map[cas.Hash]cas.Hash{} // node -> its type, once shown
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if typ, ok := seen[f.hash]; ok {
			if err := p.node(walkEntry{Hash: f.hash, Type: typ}, f.depth, f.path, true); err != nil {
				return err
			}
			continue
		}
		n, err := repo.Get(ctx, f.hash)
		if err != nil {
			if f.depth > 0 {
				return fmt.Errorf("walk: %s reached from %s at %s: %w", f.hash, f.from, f.path, err)
			}
			return fmt.Errorf("walk: %w", err)
		}
		seen[f.hash] = n.Type
		c.Add(1)
		if err := p.node(walkEntry{Hash: f.hash, Type: n.Type}, f.depth, f.path, false); err != nil {
			return err
		}
		edges, err := repo.Edges(ctx, n)
		if err != nil {
			return fmt.Errorf("walk: edges of %s: %w", f.hash, err)
		}
		for _, e := range slices.Backward(edges) {
			stack = append(stack, frame{hash: e.Hash, from: f.hash, path: e.Path, depth: f.depth + 1})
		}
	}
	return nil
}

// walkPrinter writes walk's output, as text or as a JSON array streamed one
// element at a time.
type walkPrinter struct {
	w     *bufio.Writer
	json  bool
	tree  bool
	names map[cas.Hash]string
	n     int
}

func (p *walkPrinter) typeName(t cas.Hash) (string, bool) {
	name, ok := p.names[t]
	if !ok {
		return t.String(), false
	}
	return name, true
}

func (p *walkPrinter) node(e walkEntry, depth int, path string, seen bool) error {
	name, named := p.typeName(e.Type)
	p.n++
	if !p.json {
		if depth > 0 || path != "" {
			fmt.Fprintf(p.w, "%s%s: ", strings.Repeat("  ", depth), path)
		}
		fmt.Fprintf(p.w, "%s %s", e.Hash, name)
		if seen {
			p.w.WriteString(" (seen)")
		}
		return p.w.WriteByte('\n')
	}
	if named {
		e.TypeName = &name
	}
	if p.tree {
		e.Depth, e.Path, e.Seen = &depth, &path, &seen
	}
	if p.n == 1 {
		p.w.WriteByte('[')
	} else {
		p.w.WriteString(",\n")
	}
	b, err := marshalJSON(e)
	if err != nil {
		return err
	}
	_, err = p.w.Write(b)
	return err
}

// finish ends the output. After an error a JSON array is left open, so a
// truncated listing cannot pass for a whole one.
func (p *walkPrinter) finish(complete bool) error {
	if p.json && complete {
		if p.n == 0 {
			p.w.WriteByte('[')
		}
		p.w.WriteString("]\n")
	}
	return p.w.Flush()
}
