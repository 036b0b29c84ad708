package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
)

func casPutCommand() *cli.Command {
	return &cli.Command{
		Name:      "put",
		Usage:     "store a node of a type from a JSON or YAML file",
		ArgsUsage: "<type> <file|-> | --batch <type>",
		Description: `Reads the payload from the file ("-" for stdin): YAML if the name ends in
.yaml or .yml, JSON if it ends in .json, else YAML unless the content starts
with { or [. The payload is canonicalised, validated against the schema
<type> (a schema name or hash), its edges must be present; prints the hash.
Nothing refers to the new node: unless a ref comes to reach it, GC reclaims
it once the grace period is over.

With --batch, reads file paths from stdin, one per line, and prints for each
"<hash>" or "error: <path>: <why>", in input order, once stored durably;
the exit status is 1 if any failed.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "batch", Usage: "read file paths from stdin, one per line"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if c.Bool("batch") {
				if err := wantArgs(c, 1, 1, "<type>"); err != nil {
					return err
				}
				if s.json {
					return usageErrorf(s.cmd, "--json cannot be combined with --batch")
				}
				return runPutBatch(c.Context, c.App.Writer, s, c.Args().First(), s.stdin)
			}
			if err := wantArgs(c, 2, 2, "<type> <file|->"); err != nil {
				return err
			}
			return runPut(c.Context, c.App.Writer, s, c.Args().Get(0), c.Args().Get(1))
		}),
	}
}

func runPut(ctx context.Context, w io.Writer, s *session, typeArg, file string) error {
	if err := checkTypeArg(s.cmd, typeArg); err != nil {
		return err
	}
	if file == "" {
		return usageErrorf(s.cmd, "empty file name")
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	typ, err := repo.ResolveType(ctx, typeArg)
	if err != nil {
		return err
	}
	payload, err := readPayload(s.stdin, file, repo.MaxNodeSize())
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(file), err)
	}
	h, err := repo.Put(ctx, typ, payload)
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(file), err)
	}
	return printHash(w, s, h)
}

func printHash(w io.Writer, s *session, h cas.Hash) error {
	if s.json {
		return writeJSON(w, struct {
			Hash cas.Hash `json:"hash"`
		}{h})
	}
	_, err := fmt.Fprintln(w, h)
	return err
}

func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}

// readPayload reads a JSON or YAML file ("-": stdin) of at most limit bytes
// and decodes it. Errors do not name the file.
func readPayload(stdin io.Reader, file string, limit int64) (any, error) {
	data, err := readInput(stdin, file, limit)
	if err != nil {
		return nil, err
	}
	return decodeInput(file, data)
}

// readInput reads a file ("-": stdin) of at most limit bytes, refusing a
// larger one before reading it whole: a regular file by its size, anything
// else as soon as more than limit bytes arrive. Errors do not name the file.
func readInput(stdin io.Reader, file string, limit int64) ([]byte, error) {
	if file == "-" {
		return cas.ReadLimited(stdin, limit)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, unwrapPath(err)
	}
	if fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	if fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, fmt.Errorf("%w: the file is %d bytes, the limit is %d", cas.ErrTooLarge, fi.Size(), limit)
	}
	data, err := cas.ReadLimited(f, limit)
	if err != nil {
		return nil, unwrapPath(err)
	}
	return data, nil
}

// unwrapPath drops the file name from an *fs.PathError (callers name the
// file themselves) but keeps the operation.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

var utf8BOM = []byte("\xef\xbb\xbf")

// decodeInput decodes user input as YAML if the file name ends in .yaml or
// .yml, as JSON if it ends in .json, else as JSON if the content starts with
// { or [ and as YAML otherwise.
func decodeInput(file string, data []byte) (any, error) {
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) == 0 {
		return nil, errors.New("empty input: no JSON or YAML value")
	}
	if isYAML(file, data) {
		return cas.ParseYAML(data)
	}
	return cas.ParseJSON(data)
}

func isYAML(file string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	t := bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	return len(t) == 0 || t[0] != '{' && t[0] != '['
}

// Limits of one put --batch chunk: the nodes of a chunk are stored with one
// flush point. Variables for tests.
var (
	batchChunkNodes = 1000
	batchChunkBytes = 64 << 20
)

// runPutBatch stores the files named on r, one per line, as nodes of type
// typeArg, in chunks with one flush point each. Each file is read, decoded
// and checked (schema, size, edges present) first, so a bad file fails only
// its own line; the good ones of a chunk are stored together. Lines are
// printed in input order once their chunk is durable.
func runPutBatch(ctx context.Context, w io.Writer, s *session, typeArg string, r io.Reader) error {
	if err := checkTypeArg(s.cmd, typeArg); err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	typ, err := repo.ResolveType(ctx, typeArg)
	if err != nil {
		return err
	}
	check, err := payloadChecker(ctx, repo, typ)
	if err != nil {
		return err
	}
	limit := repo.MaxNodeSize()

	type item struct {
		path string
		node cas.Node
		hash cas.Hash
		err  error
	}
	var (
		chunk        []item
		chunkBytes   int
		inChunk      = map[cas.Hash]bool{}
		total, fails int
		out          = bufio.NewWriterSize(w, 64<<10)
	)
	flush := func() error {
		var nodes []cas.Node
		var idx []int
		for i, it := range chunk {
			if it.err == nil {
				nodes = append(nodes, it.node)
				idx = append(idx, i)
			}
		}
		if len(nodes) > 0 {
			hs, err := repo.PutNodes(ctx, nodes)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// Something the checks could not foresee (an edge
				// deleted meanwhile, a full disk): store one by one so
				// each error lands on its own line.
				for _, i := range idx {
					chunk[i].hash, chunk[i].err = repo.Put(ctx, chunk[i].node.Type, chunk[i].node.Payload)
				}
			} else {
				for k, i := range idx {
					chunk[i].hash = hs[k]
				}
			}
		}
		for _, it := range chunk {
			total++
			if it.err != nil {
				fails++
				fmt.Fprintf(out, "error: %s: %s\n", it.path, oneLine(it.err.Error()))
			} else {
				fmt.Fprintln(out, it.hash)
			}
		}
		chunk, chunkBytes = chunk[:0], 0
		clear(inChunk)
		return out.Flush()
	}
	in := bufio.NewReaderSize(r, 64<<10)
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
		it := item{path: strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")}
		var size int
		it.node, it.hash, size, it.err = prepareFile(ctx, repo, check, typ, it.path, limit, inChunk)
		chunk = append(chunk, it)
		if it.err == nil {
			inChunk[it.hash] = true
			chunkBytes += size
		}
		if len(chunk) >= batchChunkNodes || chunkBytes >= batchChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if fails > 0 {
		return fmt.Errorf("put --batch: %d of %d files failed", fails, total)
	}
	return nil
}

// prepareFile reads and checks one put --batch file without storing it:
// decoded, within the size limit, valid against the schema, every edge in
// the store or earlier in the chunk. It returns the node, its hash and its
// encoded size.
//
// TODO(cas): a Repo method that checks a node without storing it (the
// typed layer's prepare) would replace payloadChecker and the edge test.
func prepareFile(ctx context.Context, repo *cas.Repo, check func(any) ([]cas.Edge, error), typ cas.Hash,
	path string, limit int64, inChunk map[cas.Hash]bool) (cas.Node, cas.Hash, int, error) {
	if path == "" {
		return cas.Node{}, 0, 0, errors.New("empty path")
	}
	if path == "-" {
		return cas.Node{}, 0, 0, errors.New(`"-" (stdin) cannot be a batch entry`)
	}
	payload, err := readPayload(nil, path, limit)
	if err != nil {
		return cas.Node{}, 0, 0, err
	}
	n := cas.Node{Type: typ, Payload: payload}
	data, err := n.Encode()
	if err != nil {
		return cas.Node{}, 0, 0, err
	}
	if int64(len(data)) > limit {
		return cas.Node{}, 0, 0, fmt.Errorf("%w: node is %d bytes, the limit is %d", cas.ErrTooLarge, len(data), limit)
	}
	edges, err := check(payload)
	if err != nil {
		return cas.Node{}, 0, 0, err
	}
	for _, e := range edges {
		if inChunk[e.Hash] {
			continue
		}
		ok, err := repo.Store().Has(ctx, e.Hash)
		if err != nil {
			return cas.Node{}, 0, 0, err
		}
		if !ok {
			return cas.Node{}, 0, 0, &cas.EdgeError{Edge: e.Hash, Path: e.Path}
		}
	}
	return n, cas.Sum(data), len(data), nil
}

// payloadChecker returns a function that validates a payload of type typ
// and returns its edges.
func payloadChecker(ctx context.Context, repo *cas.Repo, typ cas.Hash) (func(any) ([]cas.Edge, error), error) {
	if typ == cas.MetaSchema {
		return func(p any) ([]cas.Edge, error) {
			_, err := cas.CompileSchema(p)
			return nil, err
		}, nil
	}
	sch, err := repo.Schema(ctx, typ)
	if err != nil {
		return nil, err
	}
	return func(p any) ([]cas.Edge, error) {
		if err := sch.Validate(p); err != nil {
			return nil, err
		}
		return sch.Edges(p), nil
	}, nil
}

// oneLine keeps a batch result on its line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ").Replace(s)
}

func casPutTextCommand() *cli.Command {
	return &cli.Command{
		Name:        "put-text",
		Usage:       "store a content node (text)",
		ArgsUsage:   "<text|->",
		Description: `Stores the text ("-": stdin, kept byte for byte) as a content node and prints its hash.`,
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 1, 1, "<text|->"); err != nil {
				return err
			}
			return runPutText(c.Context, c.App.Writer, s, c.Args().First())
		}),
	}
}

func runPutText(ctx context.Context, w io.Writer, s *session, arg string) error {
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	text := arg
	if arg == "-" {
		data, err := cas.ReadLimited(s.stdin, repo.MaxNodeSize())
		if err != nil {
			return fmt.Errorf("<stdin>: %w", err)
		}
		text = string(data)
	}
	h, err := repo.Put(ctx, cas.ContentSchema, text)
	if err != nil {
		return err
	}
	return printHash(w, s, h)
}
