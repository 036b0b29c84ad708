package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Options configure a [Repo]. The zero value (or nil) means the defaults.
type Options struct {
	// MaxNodeSize limits one node's encoded size; 0 means
	// [DefaultMaxNodeSize].
	MaxNodeSize int64
	// Logger receives debug and info events; nil discards them.
	Logger *slog.Logger
	// NoInit leaves a new store as it is: [Open] writes nothing at all
	// (the built-in schemas are constants of the format, so reading works
	// without them). For readers that must never write.
	NoInit bool
}

// schemaCacheSize bounds how many compiled schemas a Repo keeps.
const schemaCacheSize = 1024

// Repo is the typed layer over a backend's [Store] and [Refs]: it encodes
// nodes, validates payloads against their schema nodes, checks that every
// edge is present before storing a node (so a present node implies its whole
// subgraph is present), keeps the built-in schemas, moves refs only to
// present nodes, and walks, collects garbage and checks the store. Every
// backend gets all of this for free.
//
// A Repo is safe for concurrent use. Writers hold the store-wide lock shared
// around "check the edges, put" and around "refresh the target, move the
// ref", so GC sweeps (which hold it exclusively) never interleave with them.
type Repo struct {
	st   Store
	raw  Refs
	refs *repoRefs
	max  int64
	log  *slog.Logger

	mu      sync.Mutex
	schemas map[Hash]*Schema
	derived *memDerived // for a store that keeps no Derived cache

	// version is the format version RequireVersion last found or made
	// (0 before its first call).
	version atomic.Int32
}

// Open returns the typed layer over st and refs. It refuses, with an error
// wrapping [ErrFormat], a store whose recorded format version this build
// does not know (see [FormatVersioner]). Open of an existing store writes
// nothing: the built-in schemas are constants of the format, so commands
// use their known hashes and bytes whatever the store holds, and damage to
// their objects or schemas/<name> refs is for [Repo.Fsck] to report and
// [Repo.RepairBuiltins] to mend. Only a new store is initialised: one with
// no ref schemas/meta and no ref but the built-ins' (so one whose creation
// was cut short too), and not with [Options.NoInit]. Its version-1 built-ins are stored and named
// (create-only, so concurrent first Opens agree), schemas/meta last.
func Open(ctx context.Context, st Store, refs Refs, opts *Options) (*Repo, error) {
	r := &Repo{st: st, raw: refs, max: DefaultMaxNodeSize, schemas: map[Hash]*Schema{}}
	if opts != nil && opts.MaxNodeSize > 0 {
		r.max = opts.MaxNodeSize
	}
	if opts != nil && opts.Logger != nil {
		r.log = opts.Logger.With("component", "cas")
	} else {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.refs = &repoRefs{Refs: refs, r: r}
	if err := r.checkOpenVersion(ctx); err != nil {
		return nil, err
	}
	fresh, err := r.isNew(ctx)
	if err != nil {
		return nil, err
	}
	if fresh && (opts == nil || !opts.NoInit) {
		bs := BuiltinsAt(FormatV1)
		// meta is first in bs: name it last, so that its ref marks a
		// store whose creation is complete.
		if err := r.nameBuiltins(ctx, append(bs[1:], bs[0])); err != nil {
			return nil, fmt.Errorf("initialise the store: %w", err)
		}
	}
	return r, nil
}

// isNew reports whether the store has never been (completely) initialised:
// no ref schemas/meta (readable or not) and no ref but those of built-ins.
// Every store written by any build has schemas/meta, and any store in use
// has refs of its own, so a store that lost schemas/meta is damaged, not
// new, and is left alone.
func (r *Repo) isNew(ctx context.Context) (bool, error) {
	_, err := r.raw.Get(ctx, "schemas/meta")
	if !errors.Is(err, ErrNotFound) {
		return false, nil
	}
	for ref, err := range r.raw.List(ctx, "") {
		if err != nil {
			return false, nil // unreadable refs: damaged, not new
		}
		if b, ok := builtinByName(strings.TrimPrefix(ref.Name, "schemas/")); !ok || "schemas/"+b.Name != ref.Name {
			return false, nil
		}
	}
	return true, nil
}

// Store returns the backend's object store. Writing to it directly skips
// validation and the edge check.
func (r *Repo) Store() Store { return r.st }

// Refs returns the refs, wrapped so that CompareAndSwap to a non-zero new
// value first refreshes the target's age, under the store-wide shared lock,
// and fails with an error wrapping [ErrNotFound] if the target is absent. A
// ref therefore only ever points at a present node.
func (r *Repo) Refs() Refs { return r.refs }

// MaxNodeSize returns the limit on one node's encoded size.
func (r *Repo) MaxNodeSize() int64 { return r.max }

// Get reads and decodes the node at h. Errors wrap [ErrNotFound],
// [ErrCorrupt] or, for bytes that are not a node, [ErrInvalid].
//
// The meta-schema and the built-in schemas are constants of the format: if
// the store has lost or damaged one, Get returns its known node instead of
// the error ([Repo.Fsck] reports the damage).
//
// Through a context with a read memo ([WithReadMemo]), a node already read
// or prefetched ([Repo.Prefetch]) is not read again.
func (r *Repo) Get(ctx context.Context, h Hash) (Node, error) {
	if n, ok := memoized(ctx, h); ok {
		return n, nil
	}
	data, err := r.st.Get(ctx, h)
	if err != nil {
		if b, ok := builtinByHash(h); ok && errorsIsAny(err, ErrNotFound, ErrCorrupt) {
			r.log.Debug("built-in schema served from its known bytes", "name", b.Name, "hash", h, "err", err)
			data = b.Node
		} else {
			return Node{}, err
		}
	}
	n, err := DecodeNode(data)
	if err != nil {
		return Node{}, &ObjectError{Op: "get", Hash: h, Err: err}
	}
	if m := readMemoOf(ctx); m != nil {
		m.store(h, n)
	}
	return n, nil
}

// Schema returns the compiled schema of the schema node at h, cached. For
// [MetaSchema] it returns the meta-schema, whose payloads are schemas. A
// built-in schema is compiled from its known bytes, never read from the
// store. The error wraps [ErrNotFound] if h is absent and [ErrInvalid] if
// it is not a schema node.
func (r *Repo) Schema(ctx context.Context, h Hash) (*Schema, error) {
	if h == MetaSchema {
		return metaSchema, nil
	}
	r.mu.Lock()
	s, ok := r.schemas[h]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	var n Node
	var err error
	if b, ok := builtinByHash(h); ok {
		n, err = DecodeNode(b.Node)
	} else {
		n, err = r.Get(ctx, h)
	}
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", h, err)
	}
	if n.Type != MetaSchema {
		return nil, fmt.Errorf("schema %s: %w: not a schema node (its type is %s)", h, ErrInvalid, n.Type)
	}
	s, err = CompileSchema(n.Payload)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", h, err)
	}
	r.mu.Lock()
	if len(r.schemas) >= schemaCacheSize {
		for k := range r.schemas {
			delete(r.schemas, k)
			break
		}
	}
	r.schemas[h] = s
	r.mu.Unlock()
	return s, nil
}

// requireKind moves the store to the format version that added the kind
// typ, if typ is a built-in newer than version 1: the first node of such a
// kind (or the first node or ref naming it) is what moves a store forward
// ([Repo.RequireVersion]). A store already there is only noted, not
// touched, so a ref move that repairs a built-in's damaged ref goes on.
func (r *Repo) requireKind(ctx context.Context, typ Hash) error {
	b, ok := builtinByHash(typ)
	if !ok || b.Version <= FormatV1 || int(r.version.Load()) >= b.Version {
		return nil
	}
	if fv, ok := r.raw.(FormatVersioner); ok {
		if v, err := fv.FormatVersion(ctx); err == nil && v >= b.Version && v <= LatestFormat {
			r.version.Store(int32(v))
			return nil
		}
	}
	return r.RequireVersion(ctx, b.Version)
}

// requireEdges moves the store forward, as [Repo.requireKind] does, for
// every edge that is a built-in schema of a newer format version than the
// store's: a node may refer to one (its payload naming it by cas_ref), and
// only the bump stores and names a newer version's built-ins (SPEC §9).
func (r *Repo) requireEdges(ctx context.Context, edges []Edge) error {
	for _, e := range edges {
		if err := r.requireKind(ctx, e.Hash); err != nil {
			return err
		}
	}
	return nil
}

// prepared is a node checked and encoded, ready to store.
type prepared struct {
	data  []byte
	hash  Hash
	edges []Edge // type first, then the payload's, paths as in Repo.Edges
}

// prepare encodes n and checks it against its schema without storing it:
// the size limit, the zero type reserved for the meta-schema node, the
// payload valid against the schema node n.Type.
func (r *Repo) prepare(ctx context.Context, n Node) (prepared, error) {
	payload, err := ToValue(n.Payload)
	if err != nil {
		return prepared{}, err
	}
	n.Payload = payload
	data, err := n.Encode()
	if err != nil {
		return prepared{}, err
	}
	if int64(len(data)) > r.max {
		return prepared{}, fmt.Errorf("%w: node is %d bytes, the limit is %d", ErrTooLarge, len(data), r.max)
	}
	p := prepared{data: data, hash: Sum(data)}
	if n.Type.IsZero() {
		if !bytes.Equal(data, metaNode()) {
			return prepared{}, fmt.Errorf("%w: only the meta-schema node may have the zero type", ErrInvalid)
		}
		return p, nil
	}
	s, err := r.Schema(ctx, n.Type)
	if err != nil {
		return prepared{}, fmt.Errorf("type: %w", err)
	}
	if err := s.Validate(payload); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Schema = n.Type
		}
		return prepared{}, err
	}
	p.edges = nodeEdges(n.Type, s, payload)
	return p, nil
}

// Check validates n as [Repo.PutNode] would, without storing it: the size
// limit, the schema, and every edge present (without refreshing ages; a
// built-in schema counts as present, since PutNode puts back a lost one
// of the store's format version and moves the store forward for a newer
// one's). It writes nothing, so it never moves the store. It returns the
// hash n would have.
func (r *Repo) Check(ctx context.Context, n Node) (Hash, error) {
	p, err := r.prepare(ctx, n)
	if err != nil {
		return 0, err
	}
	for _, e := range p.edges {
		ok, err := r.st.Has(ctx, e.Hash)
		if err != nil {
			return 0, err
		}
		// PutNode puts back a lost built-in of the store's version, and
		// stores a newer version's by moving the store forward first.
		if !ok && !IsBuiltin(e.Hash) {
			return 0, &EdgeError{Edge: e.Hash, Path: e.Path}
		}
	}
	return p.hash, nil
}

// Put stores a node of type typ with the given payload and returns its
// hash; see [Repo.PutNode].
func (r *Repo) Put(ctx context.Context, typ Hash, payload any) (Hash, error) {
	return r.PutNode(ctx, Node{Type: typ, Payload: payload})
}

// PutNode validates n against its schema node, checks that every edge is
// present (refreshing each one's age, so GC keeps it), and stores it,
// returning its hash. Re-putting a present node refreshes its age. Errors:
// a *[ValidationError] for a payload its schema rejects; an *[EdgeError]
// (wrapping [ErrNotFound]) for an absent edge; [ErrNotFound] for an absent
// type; [ErrTooLarge] past [Repo.MaxNodeSize]; [ErrInvalid] for a type that
// is not a schema or a payload that cannot be encoded; a
// *[ReservedNameError] if n's type is a kind of a newer format version
// that the store cannot move to. Nothing is stored on error, but for the
// move itself: the first node of a kind that format version 2 added moves
// the store to version 2 first ([Repo.RequireVersion]).
func (r *Repo) PutNode(ctx context.Context, n Node) (Hash, error) {
	if err := r.requireKind(ctx, n.Type); err != nil {
		return 0, err
	}
	p, err := r.prepare(ctx, n)
	if err != nil {
		return 0, err
	}
	if err := r.requireEdges(ctx, p.edges); err != nil {
		return 0, err
	}
	if lp, ok := r.st.(LinkedPutter); ok {
		edges := make([]Hash, len(p.edges))
		for i, e := range p.edges {
			edges[i] = e.Hash
		}
		hs, err := lp.PutLinked(ctx, [][]byte{p.data}, edges)
		switch {
		case err == nil && hs[0] != p.hash:
			return 0, fmt.Errorf("put node: the store returned %s, want %s", hs[0], p.hash)
		case err == nil:
			return p.hash, nil
		case !isAbsentTouch(err):
			return 0, err
		}
		// An edge is absent: the slow path names it, or puts back a lost
		// built-in schema.
	}
	unlock, err := r.st.Lock(ctx, false)
	if err != nil {
		return 0, err
	}
	defer unlock()
	for _, e := range p.edges {
		if err := r.touch(ctx, e.Hash); err != nil {
			if errors.Is(err, ErrNotFound) {
				return 0, &EdgeError{Edge: e.Hash, Path: e.Path}
			}
			return 0, err
		}
	}
	h, err := r.st.Put(ctx, p.data)
	if err != nil {
		return 0, err
	}
	if h != p.hash {
		return 0, fmt.Errorf("put node: the store returned %s, want %s", h, p.hash)
	}
	return h, nil
}

// PutNodes stores nodes as [Repo.PutNode] does, with one flush point for
// the whole batch when the backend has one ([BatchPutter]). An edge may
// point at a node earlier in the same batch (children first). If any node
// fails, the error names the first failure; the others may have been
// stored.
func (r *Repo) PutNodes(ctx context.Context, nodes []Node) ([]Hash, error) {
	hs, errs := r.PutEach(ctx, nodes)
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("node %d of %d: %w", i+1, len(nodes), err)
		}
	}
	return hs, nil
}

// PutEach stores nodes as [Repo.PutNodes] does, but reports each node's
// own error: errs[i] is nil if nodes[i] was stored and hs[i] is its hash. A
// node whose edge is a failed node of the same batch fails too. The good
// nodes are stored with one flush point.
func (r *Repo) PutEach(ctx context.Context, nodes []Node) (hs []Hash, errs []error) {
	hs = make([]Hash, len(nodes))
	errs = make([]error, len(nodes))
	ps := make([]prepared, len(nodes))
	for i, n := range nodes {
		if errs[i] = r.requireKind(ctx, n.Type); errs[i] == nil {
			ps[i], errs[i] = r.prepare(ctx, n)
		}
		if errs[i] == nil {
			errs[i] = r.requireEdges(ctx, ps[i].edges)
		}
	}
	if lp, ok := r.st.(LinkedPutter); ok && !slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		if done := r.putLinked(ctx, lp, ps, hs, errs); done {
			return hs, errs
		}
	}
	unlock, err := r.st.Lock(ctx, false)
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return hs, errs
	}
	defer unlock()
	// in: hashes of this batch that will be stored, by the first index.
	in := make(map[Hash]int, len(nodes))
	touched := make(map[Hash]error)
	var data [][]byte
	var idx []int
	for i, p := range ps {
		if errs[i] != nil {
			continue
		}
		for _, e := range p.edges {
			if j, ok := in[e.Hash]; ok && j < i {
				continue
			}
			err, done := touched[e.Hash]
			if !done {
				err = r.touch(ctx, e.Hash)
				touched[e.Hash] = err
			}
			if err != nil {
				if errors.Is(err, ErrNotFound) {
					err = &EdgeError{Edge: e.Hash, Path: e.Path}
				}
				errs[i] = err
				break
			}
		}
		if errs[i] != nil {
			continue
		}
		if _, dup := in[p.hash]; !dup {
			in[p.hash] = i
			data = append(data, p.data)
			idx = append(idx, i)
		}
	}
	stored, err := PutBatch(ctx, r.st, data)
	for k, i := range idx {
		switch {
		case err != nil:
			errs[i] = err
		case stored[k] != ps[i].hash:
			errs[i] = fmt.Errorf("put node: the store returned %s, want %s", stored[k], ps[i].hash)
		}
	}
	for i, p := range ps {
		if errs[i] != nil {
			continue
		}
		if j := in[p.hash]; errs[j] != nil {
			errs[i] = errs[j]
		} else {
			hs[i] = p.hash
		}
	}
	return hs, errs
}

// putLinked is PutEach's fast path, for prepared nodes ps that all passed
// their checks: one [LinkedPutter.PutLinked] of the distinct nodes with
// every edge not stored by an earlier node of the batch. It reports false,
// having filled in nothing, if an edge is absent: the slow path then finds
// which nodes fail (or puts back a lost built-in schema).
func (r *Repo) putLinked(ctx context.Context, lp LinkedPutter, ps []prepared, hs []Hash, errs []error) (done bool) {
	data, edges, pos := linkedBatch(ps)
	stored, err := lp.PutLinked(ctx, data, edges)
	if isAbsentTouch(err) {
		return false
	}
	for i, p := range ps {
		switch {
		case err != nil:
			errs[i] = err
		case stored[pos[p.hash]] != p.hash:
			errs[i] = fmt.Errorf("put node: the store returned %s, want %s", stored[pos[p.hash]], p.hash)
		default:
			hs[i] = p.hash
		}
	}
	return true
}

// linkedBatch returns what a linked put of ps stores: the distinct nodes'
// bytes, the edges outside the batch (or to a later node of it), and the
// index in data of each node's hash.
func linkedBatch(ps []prepared) (data [][]byte, edges []Hash, pos map[Hash]int) {
	in := make(map[Hash]int, len(ps))
	seen := make(map[Hash]bool)
	pos = make(map[Hash]int, len(ps))
	for i, p := range ps {
		for _, e := range p.edges {
			if j, ok := in[e.Hash]; ok && j < i {
				continue
			}
			if !seen[e.Hash] {
				seen[e.Hash] = true
				edges = append(edges, e.Hash)
			}
		}
		if _, dup := in[p.hash]; !dup {
			in[p.hash] = i
			pos[p.hash] = len(data)
			data = append(data, p.data)
		}
	}
	return data, edges, pos
}

// touch refreshes the age of the node at h, the presence check of every
// write. A built-in schema of the store's format version that the store
// has lost is put back from its known bytes (it is a constant of the
// format), so the write goes on. A newer version's built-in is not: only
// the bump stores it ([Repo.RequireVersion]), which the caller has made
// first ([Repo.requireKind]); without it, its absence is an error wrapping
// [ErrNotFound] like any node's. The caller holds the store-wide lock
// shared.
func (r *Repo) touch(ctx context.Context, h Hash) error {
	err := r.st.Touch(ctx, h)
	if b, ok := builtinByHash(h); ok && errors.Is(err, ErrNotFound) && (b.Version <= FormatV1 || int(r.version.Load()) >= b.Version) {
		if err := r.putBuiltin(ctx, b); err != nil {
			return err
		}
		r.log.Info("put back a lost built-in schema", "name", b.Name, "hash", h)
		return nil
	}
	return err
}

// Edges returns a node's edges with where each stands: {n.Type, "type"}
// first (none for the zero type), then every cas_ref in the payload as
// {hash, "payload" + JSON pointer}, in path order, each hash once.
func (r *Repo) Edges(ctx context.Context, n Node) ([]Edge, error) {
	if n.Type.IsZero() {
		return nil, nil
	}
	s, err := r.Schema(ctx, n.Type)
	if err != nil {
		return nil, err
	}
	return nodeEdges(n.Type, s, n.Payload), nil
}

// nodeEdges is the one rule for a node's edges, given the compiled schema
// s of its type typ: {typ, "type"} first, then every cas_ref of payload
// but typ itself as {hash, "payload" + JSON pointer}, in path order.
// Put, Check, Edges, walk, GC and fsck all read edges through it.
func nodeEdges(typ Hash, s *Schema, payload any) []Edge {
	out := []Edge{{Hash: typ, Path: "type"}}
	for _, e := range s.Edges(payload) {
		if e.Hash != typ {
			out = append(out, Edge{Hash: e.Hash, Path: "payload" + e.Path})
		}
	}
	return out
}

// edgeHashes is Edges without paths, the form walk, GC and fsck use.
func (r *Repo) edgeHashes(ctx context.Context, n Node) ([]Hash, error) {
	es, err := r.Edges(ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]Hash, len(es))
	for i, e := range es {
		out[i] = e.Hash
	}
	return out, nil
}

// ResolveType turns a type as people give it into a schema hash: a
// built-in schema's name (its pinned hash, whatever its ref holds; "meta"
// is the meta-schema) or a user schema's name (the ref schemas/<name>),
// tried first, else a hash of a schema node (or the meta-schema's). The error wraps
// [ErrNotFound] if there is no such schema, [ErrInvalid] if the hash is a
// node that is not a schema, and [ErrInvalidHash] if s is neither a valid
// schema name nor a hash.
func (r *Repo) ResolveType(ctx context.Context, s string) (Hash, error) {
	if b, ok := builtinByName(s); ok {
		return b.Hash, nil // a constant: never looked up by its ref
	}
	nameOK := ValidateRefName("schemas/"+s) == nil
	if nameOK {
		h, err := r.raw.Get(ctx, "schemas/"+s)
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return 0, err
		}
	}
	h, perr := ParseHash(s)
	if perr != nil {
		if nameOK {
			return 0, fmt.Errorf("type %q: no schema has that name: %w", s, ErrNotFound)
		}
		return 0, fmt.Errorf("type %q is neither a schema name nor a hash: %w", s, perr)
	}
	if _, err := r.Schema(ctx, h); err != nil {
		return 0, fmt.Errorf("type %s: %w", h, err)
	}
	return h, nil
}

// PutSchema registers a user schema: it stores payload as a schema node
// (see [CompileSchema] for what is accepted) and moves the ref
// schemas/<name> to it, logging "schema put <name>". Putting the schema a
// name already has changes nothing. Built-in names are reserved (the error
// wraps [ErrInvalid]); a name that clashes with another schema's is a
// *[ConflictError].
func (r *Repo) PutSchema(ctx context.Context, name string, payload any) (Hash, error) {
	ref := "schemas/" + name
	if err := ValidateRefName(ref); err != nil {
		return 0, err
	}
	if IsBuiltinName(name) {
		return 0, fmt.Errorf("%w: schema name %q is reserved for a built-in schema", ErrInvalid, name)
	}
	h, err := r.Put(ctx, MetaSchema, payload)
	if err != nil {
		return 0, err
	}
	cur, err := r.raw.Get(ctx, ref)
	switch {
	case err == nil && cur == h:
		return h, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return 0, err
	}
	if err := r.refs.CompareAndSwap(ctx, ref, cur, h, "schema put "+name); err != nil {
		return 0, err
	}
	return h, nil
}

// repoRefs is Refs with ref moves that refresh, and require, the target.
// A move to a built-in schema of a newer format version than the store's
// moves the store forward first ([Repo.requireKind]): only the bump stores
// and names a newer version's built-ins.
type repoRefs struct {
	Refs
	r *Repo
}

func (rr *repoRefs) CompareAndSwap(ctx context.Context, name string, old, new Hash, message string) error {
	if err := rr.r.requireKind(ctx, new); err != nil {
		return fmt.Errorf("move ref %s to %s: %w", name, new, err)
	}
	err := rr.touched(ctx, name, false, old, new, message, func() error {
		return rr.Refs.CompareAndSwap(ctx, name, old, new, message)
	})
	if err == nil && (old.IsZero() || new.IsZero()) {
		rr.r.dropRefDerived(ctx, name)
	}
	return err
}

func (rr *repoRefs) Replace(ctx context.Context, name string, new Hash, message string) error {
	if err := rr.r.requireKind(ctx, new); err != nil {
		return fmt.Errorf("move ref %s to %s: %w", name, new, err)
	}
	defer rr.r.dropRefDerived(ctx, name)
	return rr.touched(ctx, name, true, 0, new, message, func() error {
		return rr.Refs.Replace(ctx, name, new, message)
	})
}

// ImportLog imports log entries, then drops the ref's [Derived] entry:
// the import may have created the ref or added to its history.
func (rr *repoRefs) ImportLog(ctx context.Context, name string, entries []LogEntry) error {
	defer rr.r.dropRefDerived(ctx, name)
	return rr.Refs.ImportLog(ctx, name, entries)
}

// touched runs move, a change of ref name to new, after refreshing new
// under the store-wide shared lock (held until move returns); a zero new
// (a delete) needs neither. A compare-and-swap (not replace) from old
// takes the refs' [TouchingSwapper] fast path if they have one.
func (rr *repoRefs) touched(ctx context.Context, name string, replace bool, old, new Hash, message string, move func() error) error {
	if new.IsZero() {
		return move()
	}
	if err := ValidateRefName(name); err != nil {
		return err
	}
	if ts, ok := rr.Refs.(TouchingSwapper); ok && !replace {
		done, err := ts.SwapTouching(ctx, rr.r.st, name, old, new, message)
		switch {
		case !done:
		case isAbsentTouch(err):
			// The slow path puts back a lost built-in schema, or fails
			// naming the ref and the target.
		default:
			return err
		}
	}
	unlock, err := rr.r.st.Lock(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	if err := rr.r.touch(ctx, new); err != nil {
		return fmt.Errorf("move ref %s to %s: %w", name, new, err)
	}
	return move()
}
