package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/yamldoc"
	"github.com/uncaged/uwf/moderator"
)

// RefPrefix is the prefix of the refs that name registered workflows:
// workflows/<name>.
const RefPrefix = "workflows/"

// Registry keeps workflows by name in a store: each version is a workflow
// node (with a schema node per role), the ref workflows/<name> points at the
// current one, and that ref's log is the version history. A Registry is
// safe for concurrent use; concurrent changes of one workflow are settled
// by compare-and-swap (the loser gets a *[cas.ConflictError]).
type Registry struct {
	repo *cas.Repo
}

// New returns a registry over repo.
func New(repo *cas.Repo) *Registry { return &Registry{repo: repo} }

// RefName returns the ref that names workflow name: workflows/<name>.
func RefName(name string) string { return RefPrefix + name }

// PutResult says what [Registry.Put] did.
type PutResult struct {
	Name     string
	Hash     cas.Hash // the workflow node
	Previous cas.Hash // what workflows/<name> held before; zero if it did not exist
	Changed  bool     // false if the ref already held Hash: nothing was written to it or its log
}

// Put validates w, stores each role's schema as a schema node and the
// workflow as a workflow node, and moves workflows/<name> to it by
// compare-and-swap from its current value, logging "workflow put <name>".
// Putting a workflow equal to the current version changes nothing
// (Changed false, no log entry). Optional fields left empty are omitted
// from the node, so reformatting a file never changes its hash.
//
// Errors: a *[ValidationError] if w is invalid; a *[cas.ConflictError]
// (wrapping [cas.ErrConflict]) if the ref moved meanwhile or its name
// clashes with another workflow's (differing only in case); errors of the
// store otherwise.
func (r *Registry) Put(ctx context.Context, w *Workflow) (PutResult, error) {
	if err := w.Validate(); err != nil {
		return PutResult{}, err
	}
	if err := r.checkChildren(ctx, w); err != nil {
		return PutResult{}, err
	}
	h, err := r.store(ctx, w)
	if err != nil {
		return PutResult{}, fmt.Errorf("workflow put %s: %w", w.Name, err)
	}
	res := PutResult{Name: w.Name, Hash: h}
	ref := RefName(w.Name)
	cur, err := r.repo.Refs().Get(ctx, ref)
	switch {
	case errors.Is(err, cas.ErrNotFound):
	case err != nil:
		return PutResult{}, fmt.Errorf("workflow put %s: %w", w.Name, err)
	}
	res.Previous = cur
	if cur == h {
		return res, nil
	}
	if err := r.repo.Refs().CompareAndSwap(ctx, ref, cur, h, "workflow put "+w.Name); err != nil {
		return PutResult{}, fmt.Errorf("workflow put %s: %w", w.Name, err)
	}
	res.Changed = true
	return res, nil
}

// store puts the schema nodes and the workflow node of w.
func (r *Registry) store(ctx context.Context, w *Workflow) (cas.Hash, error) {
	roles := map[string]any{}
	for _, name := range w.RoleNames() {
		role := w.Roles[name]
		sh, err := r.repo.Put(ctx, cas.MetaSchema, role.Frontmatter)
		if err != nil {
			return 0, fmt.Errorf("role %s: store schema: %w", name, err)
		}
		rp := map[string]any{"frontmatter": sh.String()}
		for k, v := range map[string]string{
			"description": role.Description, "goal": role.Goal,
			"procedure": role.Procedure, "output": role.Output,
		} {
			if v != "" {
				rp[k] = v
			}
		}
		if len(role.Capabilities) > 0 {
			caps := make([]any, len(role.Capabilities))
			for i, c := range role.Capabilities {
				caps[i] = c
			}
			rp["capabilities"] = caps
		}
		composePayload(role, rp)
		roles[name] = rp
	}
	graph := map[string]any{}
	for from, edges := range w.Graph {
		m := map[string]any{}
		for st, e := range edges {
			m[st] = map[string]any{"role": e.Role, "prompt": e.Prompt}
		}
		graph[from] = m
	}
	payload := map[string]any{"name": w.Name, "roles": roles, "graph": graph}
	if w.Description != "" {
		payload["description"] = w.Description
	}
	if w.MaxSteps > 0 {
		payload["maxSteps"] = float64(w.MaxSteps)
	}
	if w.Composes() {
		// A composing workflow is a version-2 kind: Put moves the store
		// to version 2 first.
		return r.repo.Put(ctx, cas.Workflow2Schema, payload)
	}
	return r.repo.Put(ctx, cas.WorkflowSchema, payload)
}

// Stored is a workflow version as the store holds it.
type Stored struct {
	Name     string
	Hash     cas.Hash            // the workflow node
	Payload  map[string]any      // the node's payload as stored (plain JSON values)
	Schemas  map[string]cas.Hash // role -> its schema node
	Workflow *Workflow           // the payload read back, schemas included
}

// Load reads the workflow node at h and its role schemas back into a
// Workflow (without positions; it is not validated again). The error wraps
// [cas.ErrNotFound] if h or a schema is absent and [cas.ErrInvalid] if h is
// not a workflow node.
func (r *Registry) Load(ctx context.Context, h cas.Hash) (*Workflow, error) {
	s, err := r.load(ctx, h)
	if err != nil {
		return nil, err
	}
	return s.Workflow, nil
}

// LoadStored is [Registry.Load] with what is stored around the workflow:
// its payload and the hash of each role's schema node.
func (r *Registry) LoadStored(ctx context.Context, h cas.Hash) (*Stored, error) {
	return r.load(ctx, h)
}

// SchemaHashes returns the role schemas (frontmatter) a workflow node
// names, in no particular order, leaving out what is not a hash (loading
// the workflow reports it).
func SchemaHashes(n cas.Node) []cas.Hash {
	p, _ := n.Payload.(map[string]any)
	roles, _ := p["roles"].(map[string]any)
	var hs []cas.Hash
	for _, rv := range roles {
		rp, _ := rv.(map[string]any)
		fs, _ := rp["frontmatter"].(string)
		if sh, err := cas.ParseCanonicalHash(fs); err == nil {
			hs = append(hs, sh)
		}
	}
	return hs
}

func (r *Registry) load(ctx context.Context, h cas.Hash) (*Stored, error) {
	n, err := r.repo.Get(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("load workflow %s: %w", h, err)
	}
	if !IsWorkflowType(n.Type) {
		return nil, fmt.Errorf("load workflow %s: %w: not a workflow node (its type is %s)", h, cas.ErrInvalid, n.Type)
	}
	bad := func(what string) error {
		return fmt.Errorf("load workflow %s: %w: %s", h, cas.ErrInvalid, what)
	}
	p, ok := n.Payload.(map[string]any)
	if !ok {
		return nil, bad("payload is not an object")
	}
	s := &Stored{Hash: h, Payload: p, Schemas: map[string]cas.Hash{}}
	w := &Workflow{Roles: map[string]*Role{}, Graph: moderator.Graph{}}
	w.Name, _ = p["name"].(string)
	w.Description, _ = p["description"].(string)
	if f, ok := p["maxSteps"].(float64); ok {
		w.MaxSteps = int(f)
	}
	roles, _ := p["roles"].(map[string]any)
	// The role schemas in one batch where the store and ctx allow it.
	r.repo.Prefetch(ctx, SchemaHashes(n))
	for _, name := range sortedKeys(roles) {
		rp, ok := roles[name].(map[string]any)
		if !ok {
			return nil, bad("role " + name + " is not an object")
		}
		role := &Role{}
		role.Description, _ = rp["description"].(string)
		role.Goal, _ = rp["goal"].(string)
		role.Procedure, _ = rp["procedure"].(string)
		role.Output, _ = rp["output"].(string)
		if caps, ok := rp["capabilities"].([]any); ok {
			for _, c := range caps {
				if cs, ok := c.(string); ok {
					role.Capabilities = append(role.Capabilities, cs)
				}
			}
		}
		fs, _ := rp["frontmatter"].(string)
		sh, err := cas.ParseCanonicalHash(fs)
		if err != nil {
			return nil, fmt.Errorf("load workflow %s: role %s: frontmatter: %w", h, name, err)
		}
		sn, err := r.repo.Get(ctx, sh)
		if err != nil {
			return nil, fmt.Errorf("load workflow %s: role %s: schema: %w", h, name, err)
		}
		if sn.Type != cas.MetaSchema {
			return nil, bad(fmt.Sprintf("role %s: frontmatter %s is not a schema node", name, sh))
		}
		role.Frontmatter = sn.Payload
		loadCompose(role, rp)
		s.Schemas[name] = sh
		w.Roles[name] = role
	}
	graph, _ := p["graph"].(map[string]any)
	for from, ev := range graph {
		em, _ := ev.(map[string]any)
		edges := map[string]moderator.Edge{}
		for st, e := range em {
			m, _ := e.(map[string]any)
			role, _ := m["role"].(string)
			prompt, _ := m["prompt"].(string)
			edges[st] = moderator.Edge{Role: role, Prompt: prompt}
		}
		w.Graph[from] = edges
	}
	s.Name = w.Name
	s.Workflow = w
	return s, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Resolved is a workflow argument resolved by [Registry.Resolve].
type Resolved struct {
	Name     string
	Hash     cas.Hash
	Workflow *Workflow
	// Source says what the argument was: "file" (parsed, validated and
	// put), "name" (a registered workflow) or "hash" (a workflow node).
	Source string
}

// Resolve turns a workflow argument as people give it into a stored
// workflow, trying in turn:
//
//  1. a file path that exists: the file is parsed, validated and put (see
//     [Registry.Put]);
//  2. a registered name: the version workflows/<arg> points at;
//  3. a hash of a workflow node.
//
// The error wraps [cas.ErrNotFound] when nothing matches, naming what was
// tried; a file that does not parse is a *[ValidationError]; a hash of a
// node that is not a workflow wraps [cas.ErrInvalid].
func (r *Registry) Resolve(ctx context.Context, arg string) (Resolved, error) {
	return r.resolve(ctx, arg, true)
}

// ResolveUnregistered is [Registry.Resolve] for a what-if question (a
// replay under a changed file): a file is parsed, validated and its nodes
// stored, but workflows/<name> is left as it is, so the next thread started
// by that name still gets the registered version. The stored nodes are
// reached by no ref: GC reclaims them after its grace period unless a
// thread comes to use them.
func (r *Registry) ResolveUnregistered(ctx context.Context, arg string) (Resolved, error) {
	return r.resolve(ctx, arg, false)
}

func (r *Registry) resolve(ctx context.Context, arg string, register bool) (Resolved, error) {
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		data, err := ReadFile(arg)
		if err != nil {
			return Resolved{}, err
		}
		w, err := Parse(arg, data)
		if err != nil {
			return Resolved{}, err
		}
		if !register {
			h, err := r.store(ctx, w)
			if err != nil {
				return Resolved{}, fmt.Errorf("workflow %s (from %s): %w", w.Name, arg, err)
			}
			return Resolved{Name: w.Name, Hash: h, Workflow: w, Source: "file"}, nil
		}
		res, err := r.Put(ctx, w)
		if err != nil {
			return Resolved{}, err
		}
		return Resolved{Name: w.Name, Hash: res.Hash, Workflow: w, Source: "file"}, nil
	}
	tried := []string{"no such file"}
	if ValidName(arg) {
		h, err := r.repo.Refs().Get(ctx, RefName(arg))
		switch {
		case err == nil:
			w, err := r.Load(ctx, h)
			if err != nil {
				return Resolved{}, err
			}
			return Resolved{Name: arg, Hash: h, Workflow: w, Source: "name"}, nil
		case !errors.Is(err, cas.ErrNotFound):
			return Resolved{}, fmt.Errorf("workflow %s: %w", arg, err)
		}
		tried = append(tried, "no workflow registered by that name")
	} else {
		tried = append(tried, "not a workflow name")
	}
	h, err := cas.ParseHash(arg)
	if err != nil {
		tried = append(tried, "not a hash")
		return Resolved{}, fmt.Errorf("workflow %q: %s: %w", arg, strings.Join(tried, ", "), cas.ErrNotFound)
	}
	w, err := r.Load(ctx, h)
	if err != nil {
		if errors.Is(err, cas.ErrNotFound) {
			tried = append(tried, "no object with that hash")
			return Resolved{}, fmt.Errorf("workflow %q: %s: %w", arg, strings.Join(tried, ", "), cas.ErrNotFound)
		}
		return Resolved{}, err
	}
	return Resolved{Name: w.Name, Hash: h, Workflow: w, Source: "hash"}, nil
}

// ReadFile reads a workflow file, refusing one larger than
// [MaxWorkflowSize] (the error wraps [cas.ErrTooLarge]) before reading it
// whole. The caller then passes the bytes to [Parse].
func ReadFile(path string) ([]byte, error) { return yamldoc.ReadFile(path, MaxWorkflowSize) }

// Show returns a stored workflow version: by registered name first, then
// by hash. The error wraps [cas.ErrNotFound] if neither matches and
// [cas.ErrInvalid] if the hash is not a workflow node.
func (r *Registry) Show(ctx context.Context, nameOrHash string) (*Stored, error) {
	if ValidName(nameOrHash) {
		h, err := r.repo.Refs().Get(ctx, RefName(nameOrHash))
		switch {
		case err == nil:
			return r.load(ctx, h)
		case !errors.Is(err, cas.ErrNotFound):
			return nil, fmt.Errorf("workflow %s: %w", nameOrHash, err)
		}
	}
	h, err := cas.ParseHash(nameOrHash)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: no workflow registered by that name, and not a hash: %w", nameOrHash, cas.ErrNotFound)
	}
	return r.load(ctx, h)
}

// Entry is one registered workflow, as [Registry.List] lists it.
type Entry struct {
	Name        string
	Hash        cas.Hash  // the current version
	Updated     time.Time // when the ref last moved (its log's newest entry), UTC; zero if it has no log
	Description string
}

// List returns every registered workflow, sorted by name. The caller owns
// the returned slice. A workflow that is damaged (its ref or its ref's log
// cannot be read, its node is missing, corrupt or invalid) is left out:
// List returns the others, a non-nil slice, with an error naming each one
// left out and wrapping their errors ([cas.ErrBadRef], [cas.ErrNotFound],
// [cas.ErrCorrupt], ...). Any other failure (listing the refs, reading a
// node for another reason, a cancelled context) is returned alone, with
// no entries.
func (r *Registry) List(ctx context.Context) ([]Entry, error) {
	out := []Entry{}
	var left []error
	for ref, err := range r.repo.Refs().List(ctx, RefPrefix) {
		if errors.Is(err, cas.ErrBadRef) {
			left = append(left, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, damage, err := r.entry(ctx, ref)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, fmt.Errorf("list workflows: %s: %w", e.Name, err)
		case damage != nil:
			left = append(left, fmt.Errorf("workflow %s: %w", e.Name, damage))
		default:
			out = append(out, e)
		}
	}
	if len(left) > 0 {
		return out, fmt.Errorf("list workflows: %d workflow%s left out:\n%w",
			len(left), map[bool]string{true: "", false: "s"}[len(left) == 1], errors.Join(left...))
	}
	return out, nil
}

// entry reads what List shows of the workflow ref names. damage is what
// makes this workflow unreadable (its log cannot be read, its node is
// missing, corrupt or invalid); err is any other failure to read the
// store.
func (r *Registry) entry(ctx context.Context, ref cas.Ref) (e Entry, damage, err error) {
	e = Entry{Name: strings.TrimPrefix(ref.Name, RefPrefix), Hash: ref.Hash}
	log, err := r.repo.Refs().Log(ctx, ref.Name)
	switch {
	case err == nil && len(log) > 0:
		e.Updated = time.UnixMilli(log[len(log)-1].Time).UTC()
	case err != nil && !errors.Is(err, cas.ErrNotFound):
		return e, fmt.Errorf("read the log of %s: %w", ref.Name, err), nil
	}
	n, err := r.repo.Get(ctx, ref.Hash)
	switch {
	case errorsIsAny(err, cas.ErrNotFound, cas.ErrCorrupt, cas.ErrInvalid):
		return e, err, nil
	case err != nil:
		return e, nil, err
	}
	if p, ok := n.Payload.(map[string]any); ok {
		e.Description, _ = p["description"].(string)
	}
	return e, nil, nil
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// Version is one change of a workflow's ref, as [Registry.History] lists
// it. A deletion ("workflow rm") has a zero Hash.
type Version struct {
	Hash    cas.Hash  // the version the ref moved to; zero for a deletion
	Time    time.Time // UTC, by the store's clock
	Message string    // "workflow put <name>", "workflow rollback <name> to <hash>", "workflow rm <name>"
	Old     cas.Hash  // what the ref held before; zero when it was created
}

// History returns the versions of workflow name from its ref's log, oldest
// first, deletions included. The log keeps entries for the retention
// period (GC prunes older ones, except the newest and the creation entry
// of a live ref). The error wraps [cas.ErrNotFound] if the workflow has
// no history.
func (r *Registry) History(ctx context.Context, name string) ([]Version, error) {
	log, err := r.log(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]Version, len(log))
	for i, e := range log {
		out[i] = Version{Hash: e.New, Time: time.UnixMilli(e.Time).UTC(), Message: e.Message, Old: e.Old}
	}
	return out, nil
}

func (r *Registry) log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("workflow %q: %w: not a valid workflow name", name, cas.ErrInvalidRefName)
	}
	log, err := r.repo.Refs().Log(ctx, RefName(name))
	if errors.Is(err, cas.ErrNotFound) || err == nil && len(log) == 0 {
		return nil, fmt.Errorf("workflow %s has no history: %w", name, cas.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", name, err)
	}
	return log, nil
}

// Rollback moves workflows/<name> back to an earlier version, by
// compare-and-swap, logging "workflow rollback <name> to <hash>", and
// returns the version it moved to. A zero to means the previous version:
// the newest version the log names before the current one's entry,
// skipping deletions and the current version itself (so two rollbacks in a
// row return to where they started, like "cd -"). Otherwise to must be a
// version the log names. Rollback works after [Registry.Remove] too: it
// restores the ref from the log. Rolling back to the current version
// changes nothing.
//
// Errors: [ErrNotVersion] (wrapping [cas.ErrNotFound]) if to is not in the
// log, or there is no earlier version; [cas.ErrNotFound] if the workflow
// has no history or the version's node was collected; a
// *[cas.ConflictError] if the ref moved meanwhile.
func (r *Registry) Rollback(ctx context.Context, name string, to cas.Hash) (cas.Hash, error) {
	log, err := r.log(ctx, name)
	if err != nil {
		return 0, err
	}
	ref := RefName(name)
	cur, err := r.repo.Refs().Get(ctx, ref)
	if err != nil && !errors.Is(err, cas.ErrNotFound) {
		return 0, fmt.Errorf("workflow rollback %s: %w", name, err)
	}
	if to.IsZero() {
		last := len(log) - 1
		if !cur.IsZero() {
			for last >= 0 && log[last].New != cur {
				last--
			}
			last-- // the entry before the current one's
		}
		for i := last; i >= 0; i-- {
			if h := log[i].New; !h.IsZero() && h != cur {
				to = h
				break
			}
		}
		if to.IsZero() {
			return 0, fmt.Errorf("workflow rollback %s: %w: there is no earlier version (see: uwf workflow history %s)", name, ErrNotVersion, name)
		}
	} else if !slices.ContainsFunc(log, func(e cas.LogEntry) bool { return e.New == to || e.Old == to }) {
		return 0, fmt.Errorf("workflow rollback %s: %s: %w (see: uwf workflow history %s)", name, to, ErrNotVersion, name)
	}
	if to == cur {
		return cur, nil
	}
	if err := r.repo.Refs().CompareAndSwap(ctx, ref, cur, to, fmt.Sprintf("workflow rollback %s to %s", name, to)); err != nil {
		return 0, fmt.Errorf("workflow rollback %s: %w", name, err)
	}
	return to, nil
}

// Remove deletes workflows/<name> by compare-and-swap, logging
// "workflow rm <name>". The log keeps every version for the log retention
// period, so GC keeps them and [Registry.Rollback] can restore one. The
// error wraps [cas.ErrNotFound] if no workflow has that name, and is a
// *[cas.ConflictError] if the ref moved meanwhile.
func (r *Registry) Remove(ctx context.Context, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("workflow rm %q: %w: not a valid workflow name", name, cas.ErrInvalidRefName)
	}
	ref := RefName(name)
	cur, err := r.repo.Refs().Get(ctx, ref)
	if errors.Is(err, cas.ErrNotFound) {
		return fmt.Errorf("workflow rm %s: no workflow has that name: %w", name, cas.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("workflow rm %s: %w", name, err)
	}
	if err := r.repo.Refs().CompareAndSwap(ctx, ref, cur, 0, "workflow rm "+name); err != nil {
		return fmt.Errorf("workflow rm %s: %w", name, err)
	}
	return nil
}
