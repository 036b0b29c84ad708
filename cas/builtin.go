package cas

import (
	"embed"
	"fmt"
	"sync"
)

// The meta-schema and the built-in schemas are constants of the format
// (docs/FORMAT.md): the hashes of the nodes whose payloads are the files in
// schemas/. The package panics on the first use of a built-in schema if the
// files and the constants disagree, and a golden test pins them.
const (
	// MetaSchema is the hash of the meta-schema node (0XBEZKPSM0G0A): the
	// one node whose type is the zero hash, and the type of every schema
	// node.
	MetaSchema Hash = 0x0eaddf9db340400a
	// ContentSchema (54YMEB1H6FVZG) types text: prompts, raw agent output,
	// stderr.
	ContentSchema Hash = 0x527a8e586267eff0
	// WorkflowSchema (218DS5RX2WHPC) types a registered workflow.
	WorkflowSchema Hash = 0x20a1b92e3a2e46cc
	// StartSchema (E42MDMFVS6YQF) types the start node of a thread.
	StartSchema Hash = 0xe20a8da3f7937aef
	// StepSchema (5BF853BQR40GW) types one role's step in a thread.
	StepSchema Hash = 0x55bd051aef82021c
	// MarkSchema (0AHM73AYPZ7WP) types a lifecycle mark in a thread (done,
	// killed, suspended, resumed).
	MarkSchema Hash = 0x0546871abd6f9f96
	// DetailSchema (DKGXHKXNQVG36) types the record of one agent run.
	DetailSchema Hash = 0xd9c3b19f6b7dc066
	// FailureSchema (CXZRHPN6HPEZY) types the record of a failed step.
	FailureSchema Hash = 0xceff11b54d1b3bfe

	// ThreadKeySchema (4YC1J8GWA621V) types a start key: the thread that
	// "uwf thread start --key" started under keys/<key>. A format version 2
	// kind: the first key node moves a store to version 2.
	ThreadKeySchema Hash = 0x4f30324438a3083b
)

// Built-in schemas of format version 2 (see [versionTwo]).
const (
	// DetailRunSchema (F2RQ12Y9KG94G) types the record of one agent run
	// that a detail node cannot hold: a detail node's fields plus the
	// session the agent reported (id, model, token counts, cost), who ran
	// it under a lease (worker, build, attempt), or both. Format version 2.
	DetailRunSchema Hash = 0xf162e11793382490
	// RunSchema (C4K2R9MFVZ2ZE, format version 2) types a thread's place
	// in the work queue, the node a ref runs/<thread> points at.
	RunSchema Hash = 0xc24c584d1fbf8bee
	// SlotSchema (E8ZCATNQ4EQ7K, format version 2) types one of a
	// workflow's concurrency slots, the node a ref
	// slots/<workflow>/<index> points at.
	SlotSchema Hash = 0xe47d8ad56e475cf3

	// Version 2's built-ins for composition (docs/FORMAT.md, "Format
	// version 2"), written only after [Repo.RequireVersion](ctx, 2).

	// Workflow2Schema (0F3VBYTJAHF9E) types a workflow that composes: a
	// role run as a child workflow, or a parallel or race stage.
	Workflow2Schema Hash = 0x078f6bf6a4a8bd2e
	// CallSchema (6FRQX3SMNB1MX) types a call on a thread's chain: the
	// branches a role or stage starts, committed before any of them runs.
	CallSchema Hash = 0x67e2fd1e6955869d
	// JoinSchema (01C30PS7QVB8E) types the end of a call: edges to every
	// branch's final head and the role's output.
	JoinSchema Hash = 0x00b060b64f7dad0e
	// ChildStartSchema (4C4M99ZATX46X) types the start node of a branch
	// thread: its call and key.
	ChildStartSchema Hash = 0x4612894fd5ae90dd
	// CancelledSchema (4CE70PDA9J9J2) types the mark of a branch cancelled
	// by its call (a lost race, a timeout, a killed parent).
	CancelledSchema Hash = 0x4638e0b354992642
)

//go:embed schemas/*.json
var schemaFiles embed.FS

// Builtin is a built-in schema: its reserved name, its schema node's hash
// and its bytes, and the format version that introduced it.
type Builtin struct {
	Name    string
	Hash    Hash
	Node    []byte // the node's canonical bytes
	Version int    // the format version whose stores hold it: 1 or 2
}

// builtins and metaBytes are made by loadBuiltins, on first use (not in an
// init function: a command that reads no node pays nothing for them); read
// them through builtinList and metaNode.
var (
	builtins  []Builtin // every version's, version 1 first
	metaBytes []byte
)

// builtinList returns every version's built-in schemas, version 1 first.
func builtinList() []Builtin {
	loadBuiltins()
	return builtins
}

// metaNode returns the meta-schema node's canonical bytes (not a copy).
func metaNode() []byte {
	loadBuiltins()
	return metaBytes
}

// versionTwo lists the built-in schemas that format version 2 adds, by name
// (the payload is schemas/<name>.json) and pinned hash. An issue that adds a
// kind appends its schema here and writes it with [Repo.RequireVersion](ctx,
// 2) before its first node: a version-1 store gets it (stored and named
// schemas/<name>) only by that bump. Never change or remove an entry once
// released; see docs/FORMAT.md, "Format version 2".
var versionTwo = []struct {
	name string
	h    Hash
}{
	{"detail-run", DetailRunSchema},
	{"thread-key", ThreadKeySchema},
	{"run", RunSchema},   // workers: a thread's run record (runs/<thread>)
	{"slot", SlotSchema}, // workers: a concurrency slot (slots/<workflow>/<i>)

	{"workflow2", Workflow2Schema}, {"call", CallSchema}, {"join", JoinSchema},
	{"child-start", ChildStartSchema}, {"cancelled", CancelledSchema},
}

// loadBuiltins encodes the embedded schema files as nodes and checks them
// against their pinned hashes, once.
var loadBuiltins = sync.OnceFunc(func() {
	meta := mustBuiltinPayload("meta")
	var err error
	if metaBytes, err = (Node{Payload: meta}).Encode(); err != nil {
		panic(err)
	}
	mustPinned("meta", Sum(metaBytes), MetaSchema)
	builtins = append(builtins, Builtin{Name: "meta", Hash: MetaSchema, Node: metaBytes, Version: 1})
	for _, b := range []struct {
		name string
		h    Hash
	}{
		{"content", ContentSchema}, {"workflow", WorkflowSchema}, {"start", StartSchema},
		{"step", StepSchema}, {"mark", MarkSchema}, {"detail", DetailSchema}, {"failure", FailureSchema},
	} {
		data, err := (Node{Type: MetaSchema, Payload: mustBuiltinPayload(b.name)}).Encode()
		if err != nil {
			panic(err)
		}
		mustPinned(b.name, Sum(data), b.h)
		builtins = append(builtins, Builtin{Name: b.name, Hash: b.h, Node: data, Version: 1})
	}
	for _, b := range versionTwo {
		data, err := (Node{Type: MetaSchema, Payload: mustBuiltinPayload(b.name)}).Encode()
		if err != nil {
			panic(err)
		}
		mustPinned(b.name, Sum(data), b.h)
		builtins = append(builtins, Builtin{Name: b.name, Hash: b.h, Node: data, Version: 2})
	}
})

// builtinByHash returns the built-in schema at h, if h is one.
func builtinByHash(h Hash) (Builtin, bool) {
	for _, b := range builtinList() {
		if b.Hash == h {
			return b, true
		}
	}
	return Builtin{}, false
}

// builtinByName returns the built-in schema named name, if there is one.
func builtinByName(name string) (Builtin, bool) {
	for _, b := range builtinList() {
		if b.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}

// IsBuiltin reports whether h is the hash of the meta-schema or of a
// built-in schema, of any format version.
func IsBuiltin(h Hash) bool {
	_, ok := builtinByHash(h)
	return ok
}

// mustPinned stops the program if an embedded schema no longer hashes to
// its constant: the store format would silently change.
func mustPinned(name string, got, want Hash) {
	if got != want {
		panic(fmt.Sprintf("cas: built-in schema %s hashes to %s, but the format pins %s", name, got, want))
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

// Builtins returns the meta-schema and the built-in schemas of every
// format version, meta-schema first, then version 1's, then version 2's, in
// a fixed order. The caller may modify the returned slice but not the Node
// bytes.
func Builtins() []Builtin { return append([]Builtin(nil), builtinList()...) }

// BuiltinsAt returns the built-in schemas a store at format version v
// holds: those of versions up to v, in the order of [Builtins].
func BuiltinsAt(v int) []Builtin {
	var out []Builtin
	for _, b := range builtinList() {
		if b.Version <= v {
			out = append(out, b)
		}
	}
	return out
}

// IsBuiltinName reports whether name is reserved for a built-in schema of
// any format version this build knows (so a version-1 store refuses a user
// schema with a name that version 2 reserves).
func IsBuiltinName(name string) bool {
	_, ok := builtinByName(name)
	return ok
}

// MetaSchemaNode returns the meta-schema node's canonical bytes.
func MetaSchemaNode() []byte { return append([]byte(nil), metaNode()...) }
