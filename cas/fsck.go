package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kinds of [Problem].
const (
	ProblemCorrupt       = "corrupt"        // stored bytes do not hash to their address
	ProblemInvalid       = "invalid"        // not a node, not canonical, or not valid against its schema
	ProblemMissingEdge   = "missing-edge"   // a node refers to an absent node
	ProblemMissingTarget = "missing-target" // a ref points at an absent node
	ProblemLogMismatch   = "log-mismatch"   // a ref differs from its log's newest entry
	ProblemLog           = "log"            // a ref's log is missing or unreadable
	ProblemChain         = "chain"          // a thread chain invariant is broken (registered by package thread)
	ProblemRef           = "ref"            // a ref points at a node of the wrong kind
	ProblemBadRef        = "bad-ref"        // a ref's stored form cannot be read (Hash: its log's newest value)
	ProblemMissingRef    = "missing-ref"    // a ref's log says it exists, but it does not (Hash: the logged value)
	// ProblemMissingRefOrInterruptedCreate: a ref's log ends with its
	// creation, but the ref does not exist: deleted behind uwf's back, or
	// (on disk, which cannot tell the two apart) created by a change that a
	// crash interrupted. Hash is the logged value.
	ProblemMissingRefOrInterruptedCreate = "missing-ref-or-interrupted-create"
)

// Problem is one thing [Repo.Fsck] found wrong.
type Problem struct {
	Hash        Hash     // the object at fault; zero for a problem of a ref alone
	Ref         string   // the ref at fault, for ref problems; else empty
	Kind        string   // one of the Problem* kinds
	Msg         string   // what is wrong
	ReachedFrom []string // the refs that reach Hash, sorted; filled in by Fsck
}

// String formats the problem as one line: "<hash>: <kind>: <message>
// (reached from <ref>, ...)", "ref <name> -> <hash>: <kind>: <message>" or
// "ref <name>: <kind>: <message>".
func (p Problem) String() string {
	switch {
	case p.Ref != "" && !p.Hash.IsZero():
		return fmt.Sprintf("ref %s -> %s: %s: %s", p.Ref, p.Hash, p.Kind, p.Msg)
	case p.Ref != "":
		return fmt.Sprintf("ref %s: %s: %s", p.Ref, p.Kind, p.Msg)
	}
	reached := "(not reachable from any ref)"
	if len(p.ReachedFrom) > 0 {
		reached = "(reached from " + strings.Join(p.ReachedFrom, ", ") + ")"
	}
	return fmt.Sprintf("%s: %s: %s %s", p.Hash, p.Kind, p.Msg, reached)
}

// FsckReport is the result of [Repo.Fsck].
type FsckReport struct {
	Objects  int // objects checked
	Refs     int // refs checked, bad ones included
	Problems []Problem
	// TempFiles counts the backend's temporary files, and StaleTempFiles
	// those older than [StaleTempAge]: crash leftovers, which GC removes.
	// Neither is a problem; both are 0 for a backend without them
	// ([TempCounter]).
	TempFiles, StaleTempFiles int
	// OrphanDerived counts the entries of the derived cache ([Derived])
	// whose node or ref is gone: left by a GC of an older build, or by a
	// ref removed behind the Repo's back. Not a problem: the cache is
	// droppable, and the next GC drops them.
	OrphanDerived int
	// Dangling lists, when [FsckOptions.Dangling] asks for them, the nodes
	// that no ref reaches and no other node refers to (the tips of what GC
	// would collect once no log entry names them, like git's dangling
	// commits), sorted by hash. They are not problems. The value a bad or
	// missing ref's log holds is not dangling: it is reported with the
	// ref's problem, and GC keeps it until the ref is repaired.
	Dangling []Dangling
}

// Dangling is a node that no ref reaches and no node refers to.
type Dangling struct {
	Hash Hash
	Type Hash // its schema node
}

// OK reports whether nothing was found wrong.
func (r *FsckReport) OK() bool { return len(r.Problems) == 0 }

// NodeCheck is an extra check of one decoded, schema-valid node, which a
// higher layer registers with [FsckOptions] (thread chain invariants, say).
// It may read other nodes through r. Problems it returns with a zero Hash
// are about h.
type NodeCheck func(ctx context.Context, r *Repo, h Hash, n Node) []Problem

// RefCheck is an extra check of one ref whose target is present.
type RefCheck func(ctx context.Context, r *Repo, name string, target Hash) []Problem

// FsckOptions configure [Repo.Fsck]; nil means no extra checks.
type FsckOptions struct {
	NodeChecks []NodeCheck
	RefChecks  []RefCheck
	// Dangling, if not nil, chooses which dangling nodes (see
	// [FsckReport.Dangling]) to list: those for which it returns true.
	Dangling func(n Node) bool
}

// Fsck checks the whole store: every object re-hashed, decoded, canonical,
// valid against its schema, with every edge present; every ref readable
// ([ProblemBadRef]), pointing at a present node and equal to its log's
// newest entry; every log whose newest entry says its ref exists matched
// by a ref ([ProblemMissingRef], [ProblemMissingRefOrInterruptedCreate]);
// the built-in schemas of the store's format version stored and named
// ([ProblemBuiltin], which alone reports a damaged built-in ref); plus the
// registered extra checks. One damaged object
// or ref is one problem: the rest is checked all the same. Each problem
// names the refs that reach it (a bad or missing ref reaches what its
// log's newest entry names). It also counts the backend's temporary files,
// if it has any ([TempCounter]). The error is for a failure to read the
// store at all (listing, a cancelled context), not for problems found. It
// reports its progress to the [ProgressFunc] of ctx ([WithProgress]), if
// any: the objects listed, the objects checked (of all listed) and the
// refs checked.
func (r *Repo) Fsck(ctx context.Context, opts *FsckOptions) (*FsckReport, error) {
	if opts == nil {
		opts = &FsckOptions{}
	}
	rep := &FsckReport{}
	// The built-ins are checked apart, each problem reported once.
	builtinProblems, err := r.checkBuiltins(ctx)
	if err != nil {
		return nil, fmt.Errorf("fsck: %w", err)
	}
	builtin := map[Hash]bool{}
	// A built-in's ref that is missing, unreadable or moved is reported
	// once, as a builtin problem (which fsck --repair mends), not again by
	// the ref checks below as a bad-ref, missing-ref, log-mismatch,
	// missing-target or ref problem.
	builtinRef := map[string]bool{}
	for _, p := range builtinProblems {
		if p.Ref == "" {
			builtin[p.Hash] = true
		} else {
			builtinRef[p.Ref] = true
		}
	}
	present := map[Hash]bool{}
	pr := startProgress(ctx, "fsck", "list", "objects", 0)
	defer func() { pr.end() }() // the phase running then
	for obj, err := range r.st.All(ctx) {
		pr.add(1)
		if err != nil {
			return nil, fmt.Errorf("fsck: list objects: %w", err)
		}
		present[obj.Hash] = true
	}
	has := func(h Hash) bool {
		if present[h] {
			return true
		}
		ok, err := r.st.Has(ctx, h)
		return err == nil && ok
	}
	parents := map[Hash][]Hash{}
	children := map[Hash][]Hash{}
	types := map[Hash]Hash{}
	add := func(p Problem) { rep.Problems = append(rep.Problems, p) }
	hashes := make([]Hash, 0, len(present))
	for h := range present {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	pr.end()
	pr = startProgress(ctx, "fsck", "objects", "objects", len(hashes))
	for _, h := range hashes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pr.add(1)
		rep.Objects++
		data, err := r.st.Get(ctx, h)
		if err != nil {
			if errors.Is(err, ErrNotFound) || builtin[h] {
				continue // deleted since the listing, or a built-in's
			}
			kind := ProblemCorrupt
			if !errors.Is(err, ErrCorrupt) {
				kind = ProblemInvalid
			}
			add(Problem{Hash: h, Kind: kind, Msg: problemText(err, h)})
			continue
		}
		n, err := DecodeNode(data)
		if err != nil {
			add(Problem{Hash: h, Kind: ProblemInvalid, Msg: "not a node: " + problemText(err, h)})
			continue
		}
		if !IsCanonicalNode(data, n) {
			add(Problem{Hash: h, Kind: ProblemInvalid, Msg: "not in canonical form (RFC 8785)"})
		}
		if n.Type.IsZero() {
			if !bytes.Equal(data, metaNode()) {
				add(Problem{Hash: h, Kind: ProblemInvalid, Msg: "has the zero type but is not the meta-schema node"})
			}
			continue
		}
		edges := []Edge{{Hash: n.Type, Path: "type"}}
		s, err := r.Schema(ctx, n.Type)
		switch {
		case errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt):
			// Reported as a missing edge below, or as the type's own problem.
		case err != nil:
			add(Problem{Hash: h, Kind: ProblemInvalid, Msg: fmt.Sprintf("type %s: %s", n.Type, problemText(err, n.Type))})
		default:
			if verr := s.Validate(n.Payload); verr != nil {
				add(Problem{Hash: h, Kind: ProblemInvalid, Msg: problemText(verr, h)})
			}
			for _, e := range s.Edges(n.Payload) {
				if e.Hash != n.Type {
					edges = append(edges, Edge{Hash: e.Hash, Path: "payload" + e.Path})
				}
			}
			for _, check := range opts.NodeChecks {
				for _, p := range check(ctx, r, h, n) {
					if p.Hash.IsZero() && p.Ref == "" {
						p.Hash = h
					}
					add(p)
				}
			}
		}
		types[h] = n.Type
		for _, e := range edges {
			children[h] = append(children[h], e.Hash)
			parents[e.Hash] = append(parents[e.Hash], h)
			if !has(e.Hash) && !builtin[e.Hash] {
				add(Problem{Hash: h, Kind: ProblemMissingEdge, Msg: fmt.Sprintf("edge %s -> %s is not in the store", e.Path, e.Hash)})
			}
		}
	}
	pr.end()
	pr = startProgress(ctx, "fsck", "refs", "refs", 0)
	targets := map[Hash][]string{}
	named := map[string]bool{}  // live refs and bad ones
	var live []Hash             // live refs' targets, and the logged values of bad and missing refs
	badLog := map[string]bool{} // lower-cased names of live refs whose log cannot be read
	for ref, err := range r.raw.List(ctx, "") {
		pr.add(1)
		var bad *BadRefError
		if errors.As(err, &bad) {
			rep.Refs++
			named[bad.Name] = true
			p := Problem{Ref: bad.Name, Kind: ProblemBadRef, Msg: bad.Err.Error()}
			if bad.File != "" {
				p.Msg = "file " + bad.File + ": " + p.Msg
			}
			if entries, err := r.raw.Log(ctx, bad.Name); err == nil {
				if h := lastValue(entries); !h.IsZero() {
					p.Hash = h
					p.Msg += "; its log's newest value is " + h.String()
					targets[h] = append(targets[h], bad.Name)
					live = append(live, h) // GC keeps it: not dangling
				}
			}
			if !builtinRef[bad.Name] {
				add(p)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("fsck: list refs: %w", err)
		}
		rep.Refs++
		named[ref.Name] = true
		live = append(live, ref.Hash)
		targets[ref.Hash] = append(targets[ref.Hash], ref.Name)
		entries, err := r.raw.Log(ctx, ref.Name)
		switch {
		case errors.Is(err, ErrNotFound):
			add(Problem{Ref: ref.Name, Kind: ProblemLog, Msg: "the ref has no log"})
		case err != nil:
			add(Problem{Ref: ref.Name, Kind: ProblemLog, Msg: "read its log: " + err.Error()})
			badLog[strings.ToLower(ref.Name)] = true
		case len(entries) == 0:
			add(Problem{Ref: ref.Name, Kind: ProblemLog, Msg: "the ref's log is empty"})
		case builtinRef[ref.Name]:
		case entries[len(entries)-1].New != ref.Hash:
			add(Problem{Ref: ref.Name, Hash: ref.Hash, Kind: ProblemLogMismatch,
				Msg: fmt.Sprintf("its log's newest entry says %s", entries[len(entries)-1].New)})
		}
		if builtinRef[ref.Name] {
			continue
		}
		if !has(ref.Hash) && !builtin[ref.Hash] {
			add(Problem{Ref: ref.Name, Hash: ref.Hash, Kind: ProblemMissingTarget, Msg: "the ref's target is not in the store"})
			continue
		}
		for _, check := range opts.RefChecks {
			for _, p := range check(ctx, r, ref.Name, ref.Hash) {
				if p.Ref == "" && p.Hash.IsZero() {
					p.Ref, p.Hash = ref.Name, ref.Hash
				}
				add(p)
			}
		}
	}
	for name, err := range r.raw.Logs(ctx) {
		if err != nil {
			return nil, fmt.Errorf("fsck: list ref logs: %w", err)
		}
		if named[name] {
			continue
		}
		entries, err := r.raw.Log(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // pruned meanwhile
		case err != nil:
			if !badLog[strings.ToLower(name)] {
				add(Problem{Ref: name, Kind: ProblemLog, Msg: "read its log: " + err.Error()})
			}
			continue
		}
		if m := MissingRef(name, entries); m != nil {
			targets[m.Logged] = append(targets[m.Logged], name)
			live = append(live, m.Logged) // GC keeps it: not dangling
			if !builtinRef[name] {
				add(missingProblem(m))
			}
		}
	}
	if opts.Dangling != nil {
		rep.Dangling = r.dangling(ctx, live, hashes, children, parents, types, opts.Dangling)
	}
	if tc, ok := r.st.(TempCounter); ok {
		var err error
		if rep.TempFiles, rep.StaleTempFiles, err = tc.CountTemps(ctx); err != nil {
			return nil, fmt.Errorf("fsck: count temporary files: %w", err)
		}
	}
	// Counted as GC's dry run counts them, against refs and nodes as they
	// are now (no listing of objects to spare the look-ups: fsck's is
	// done).
	if rep.OrphanDerived, err = r.dropOrphanDerived(ctx, nil, named, true, nil); err != nil {
		return nil, fmt.Errorf("fsck: count derived-cache entries of what is gone: %w", err)
	}
	rep.Problems = append(rep.Problems, builtinProblems...)
	for i := range rep.Problems {
		p := &rep.Problems[i]
		if !p.Hash.IsZero() {
			p.ReachedFrom = reachedFrom(p.Hash, parents, targets)
		}
	}
	return rep, nil
}

// reachedFrom walks the reverse edges up from h and returns the names of
// the refs whose targets it meets, sorted.
func reachedFrom(h Hash, parents map[Hash][]Hash, targets map[Hash][]string) []string {
	seen := map[Hash]bool{h: true}
	stack := []Hash{h}
	var names []string
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		names = append(names, targets[x]...)
		for _, p := range parents[x] {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// problemText is an error's message without the hash the problem line
// already starts with.
func problemText(err error, h Hash) string {
	msg := err.Error()
	for _, prefix := range []string{"get " + h.String() + ": ", "schema " + h.String() + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}

// lastValue returns the New of a log's newest entry (zero if it deleted
// the ref, or for an empty log).
func lastValue(entries []LogEntry) Hash {
	if len(entries) == 0 {
		return 0
	}
	return entries[len(entries)-1].New
}

// missingProblem is the problem of a missing ref.
func missingProblem(m *MissingRefError) Problem {
	if m.Creation {
		return Problem{Ref: m.Name, Hash: m.Logged, Kind: ProblemMissingRefOrInterruptedCreate,
			Msg: "its log's newest entry creates it, but it does not exist: deleted behind uwf's back, or a crash interrupted its creation"}
	}
	return Problem{Ref: m.Name, Hash: m.Logged, Kind: ProblemMissingRef,
		Msg: "its log's newest entry says it exists, but it does not: deleted behind uwf's back"}
}

// dangling returns the nodes among hashes that nothing reaches from live
// (the live refs' targets and the logged values of bad and missing refs)
// and no node refers to, and for which keep returns true.
func (r *Repo) dangling(ctx context.Context, live, hashes []Hash, children, parents map[Hash][]Hash, types map[Hash]Hash, keep func(Node) bool) []Dangling {
	reached := map[Hash]bool{}
	var stack []Hash
	for _, h := range live {
		if !reached[h] {
			reached[h] = true
			stack = append(stack, h)
		}
	}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[h] {
			if !reached[c] {
				reached[c] = true
				stack = append(stack, c)
			}
		}
	}
	var out []Dangling
	for _, h := range hashes {
		typ, ok := types[h]
		if !ok || reached[h] || len(parents[h]) > 0 {
			continue
		}
		n, err := r.Get(ctx, h)
		if err != nil || !keep(n) {
			continue
		}
		out = append(out, Dangling{Hash: h, Type: typ})
	}
	return out
}
