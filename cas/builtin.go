package cas

import (
	"embed"
	"fmt"
)

// The meta-schema and the built-in schemas are constants of the format
// (docs/FORMAT.md): their payloads are the files in schemas/, and a test
// pins these hashes.
var (
	// MetaSchema is the hash of the meta-schema node: the one node whose
	// type is the zero hash, and the type of every schema node.
	MetaSchema Hash
	// ContentSchema types text: prompts, raw agent output, stderr.
	ContentSchema Hash
	// WorkflowSchema types a registered workflow.
	WorkflowSchema Hash
	// StartSchema types the start node of a thread.
	StartSchema Hash
	// StepSchema types one role's step in a thread.
	StepSchema Hash
	// MarkSchema types a lifecycle mark in a thread (done, killed,
	// suspended, resumed).
	MarkSchema Hash
	// DetailSchema types the record of one agent run.
	DetailSchema Hash
	// FailureSchema types the record of a failed step.
	FailureSchema Hash
)

//go:embed schemas/*.json
var schemaFiles embed.FS

// Builtin is a built-in schema: its reserved name, its schema node's hash
// and its bytes.
type Builtin struct {
	Name string
	Hash Hash
	Node []byte // the node's canonical bytes
}

var (
	builtins  []Builtin
	metaBytes []byte
)

func init() {
	meta := mustBuiltinPayload("meta")
	var err error
	if metaBytes, err = (Node{Payload: meta}).Encode(); err != nil {
		panic(err)
	}
	MetaSchema = Sum(metaBytes)
	builtins = append(builtins, Builtin{Name: "meta", Hash: MetaSchema, Node: metaBytes})
	for _, b := range []struct {
		name string
		h    *Hash
	}{
		{"content", &ContentSchema}, {"workflow", &WorkflowSchema}, {"start", &StartSchema},
		{"step", &StepSchema}, {"mark", &MarkSchema}, {"detail", &DetailSchema}, {"failure", &FailureSchema},
	} {
		data, err := (Node{Type: MetaSchema, Payload: mustBuiltinPayload(b.name)}).Encode()
		if err != nil {
			panic(err)
		}
		*b.h = Sum(data)
		builtins = append(builtins, Builtin{Name: b.name, Hash: *b.h, Node: data})
	}
}

func mustBuiltinPayload(name string) any {
	data, err := schemaFiles.ReadFile("schemas/" + name + ".json")
	if err != nil {
		panic(err)
	}
	v, err := ParseJSON(data)
	if err != nil {
		panic(fmt.Sprintf("built-in schema %s: %v", name, err))
	}
	return v
}

// Builtins returns the meta-schema and the built-in schemas, meta-schema
// first, in a fixed order. The caller may modify the returned slice but not
// the Node bytes.
func Builtins() []Builtin { return append([]Builtin(nil), builtins...) }

// IsBuiltinName reports whether name is reserved for a built-in schema.
func IsBuiltinName(name string) bool {
	for _, b := range builtins {
		if b.Name == name {
			return true
		}
	}
	return false
}

// MetaSchemaNode returns the meta-schema node's canonical bytes.
func MetaSchemaNode() []byte { return append([]byte(nil), metaBytes...) }
