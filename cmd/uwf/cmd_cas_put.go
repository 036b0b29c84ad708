package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/progress"
	"github.com/uncaged/uwf/internal/rawfile"
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
	// A regular file is read with plain system calls (many small files are
	// read by put --batch); anything else through an *os.File.
	data, size, f, err := rawfile.ReadFile(file, limit)
	if errors.Is(err, syscall.EISDIR) {
		return nil, errors.New("is a directory")
	}
	if err != nil {
		return nil, unwrapPath(err)
	}
	if f == nil {
		if data == nil {
			return nil, fmt.Errorf("%w: the file is %d bytes, the limit is %d", cas.ErrTooLarge, size, limit)
		}
		return data, nil
	}
	defer f.Close()
	data, err = cas.ReadLimited(f, limit)
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
// typeArg, in chunks with one flush point each ([cas.Repo.PutEach]): a bad
// file fails only its own line, and a file may refer to a node of an
// earlier line. Lines are printed in input order once their chunk is
// durable. One goroutine reads and decodes the next chunk's files while
// the chunk before is stored.
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
	// Progress counts the files read; how many there are is not known
	// until stdin ends.
	_, pw := s.withProgress(ctx)
	c := pw.Start("put", "files", "files", 0)
	defer pw.Close()

	rctx, stop := context.WithCancel(ctx)
	defer stop()
	chunks := make(chan putChunk, 1)
	readErr := make(chan error, 1)
	go func() {
		defer close(chunks)
		readErr <- readPutChunks(rctx, r, typ, repo.MaxNodeSize(), c, chunks)
	}()

	var (
		total, fails int
		out          = bufio.NewWriterSize(w, 64<<10)
	)
	for ch := range chunks {
		hs, errs := repo.PutEach(ctx, ch.nodes)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, it := range ch.items {
			total++
			err := it.err
			if err == nil {
				err = errs[it.node]
			}
			if err != nil {
				fails++
				fmt.Fprintf(out, "error: %s: %s\n", it.path, oneLine(userMessage(err.Error())))
			} else {
				fmt.Fprintln(out, hs[it.node])
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	if err := <-readErr; err != nil {
		return err
	}
	c.End()
	if fails > 0 {
		return fmt.Errorf("put --batch: %d of %d files failed", fails, total)
	}
	return nil
}

// putChunk is a chunk of put --batch: its input lines, and the nodes of
// those whose files were read and decoded.
type putChunk struct {
	items []putItem
	nodes []cas.Node
}

type putItem struct {
	path string
	err  error // reading or decoding the file
	node int   // index in nodes, if err is nil
}

// readPutChunks reads the paths on r, reads and decodes each file as a
// node of type typ, and sends them in chunks of at most batchChunkNodes
// lines or batchChunkBytes of files on out, counting each line on c. It
// stops early, with ctx's error, once ctx is done.
func readPutChunks(ctx context.Context, r io.Reader, typ cas.Hash, limit int64, c *progress.Counter, out chan<- putChunk) error {
	var (
		ch         putChunk
		chunkBytes int64
	)
	send := func() error {
		select {
		case out <- ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		ch, chunkBytes = putChunk{}, 0
		return nil
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
		it := putItem{path: strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")}
		switch it.path {
		case "":
			it.err = errors.New("empty path")
		case "-":
			it.err = errors.New(`"-" (stdin) cannot be a batch entry`)
		default:
			var data []byte
			var payload any
			if data, it.err = readInput(nil, it.path, limit); it.err == nil {
				payload, it.err = decodeInput(it.path, data)
			}
			if it.err == nil {
				it.node = len(ch.nodes)
				ch.nodes = append(ch.nodes, cas.Node{Type: typ, Payload: payload})
				chunkBytes += int64(len(data))
			}
		}
		ch.items = append(ch.items, it)
		c.Add(1)
		if len(ch.items) >= batchChunkNodes || chunkBytes >= int64(batchChunkBytes) {
			if err := send(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
	}
	if len(ch.items) == 0 {
		return nil
	}
	return send()
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
