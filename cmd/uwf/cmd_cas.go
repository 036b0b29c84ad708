package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/cas"
)

// casCommand is "uwf cas": the store's objects, refs and schemas, like git's
// plumbing commands. Each subcommand lives in a cmd_cas_<verb>.go file.
func casCommand() *cli.Command {
	return &cli.Command{
		Name:  "cas",
		Usage: "read and write the store's objects, refs and schemas",
		Subcommands: []*cli.Command{
			casGetCommand(),
			casPutCommand(),
			casPutTextCommand(),
			casHasCommand(),
			casRefsCommand(),
			casWalkCommand(),
			casGCCommand(),
			casFsckCommand(),
			casSchemaCommand(),
			casRefCommand(),
			casExportCommand(),
			casImportCommand(),
		},
	}
}

// parseHashArg parses a hash given as an argument; a bad one is a usage
// error that names it.
func parseHashArg(cmd, s string) (cas.Hash, error) {
	h, err := cas.ParseHash(s)
	if err != nil {
		return 0, &usageError{cmd: cmd, err: err}
	}
	return h, nil
}

// checkTypeArg rejects, before the store is opened, a type argument that can
// be neither a schema name nor a hash.
func checkTypeArg(cmd, s string) error {
	if cas.ValidateRefName("schemas/"+s) == nil {
		return nil
	}
	if _, err := cas.ParseHash(s); err == nil {
		return nil
	}
	return usageErrorf(cmd, "invalid type %q: neither a schema name nor a hash", s)
}

// schemaNames maps schema hashes to their names: the built-ins' reserved
// names (constants, whatever their refs hold), then the schemas/ refs (the
// first name in order when a schema has several).
func schemaNames(ctx context.Context, repo *cas.Repo) (map[cas.Hash]string, error) {
	names := map[cas.Hash]string{}
	for _, b := range cas.Builtins() {
		names[b.Hash] = b.Name
	}
	for ref, err := range repo.Refs().List(ctx, "schemas/") {
		if errors.Is(err, cas.ErrBadRef) {
			continue // names are for display: fsck reports the bad ref
		}
		if err != nil {
			return nil, fmt.Errorf("list schemas: %w", err)
		}
		if _, ok := names[ref.Hash]; !ok {
			names[ref.Hash] = strings.TrimPrefix(ref.Name, "schemas/")
		}
	}
	return names, nil
}

// writeJSON writes v as one line of compact JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := marshalJSON(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// marshalJSON encodes v as compact JSON, without escaping <, > and &.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// rawJSON returns the canonical JSON of a decoded value, for embedding in
// --json output.
func rawJSON(v any) (json.RawMessage, error) {
	b, err := cas.Canonical(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

// hashOrNull is a hash in --json output that may be absent: null when zero.
type hashOrNull cas.Hash

func (h hashOrNull) MarshalJSON() ([]byte, error) {
	if h == 0 {
		return []byte("null"), nil
	}
	return []byte(`"` + cas.Hash(h).String() + `"`), nil
}
