package cas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Defaults of [GCOptions].
const (
	DefaultGrace        = time.Hour
	DefaultLogRetention = 30 * 24 * time.Hour
	DefaultGCBatch      = 256
)

// DefaultPrefixLogRetention returns the log retention of the ref prefixes
// that [GCOptions.PrefixLogRetention] starts from: `runs/` (a queued
// thread's run, whose lease is renewed every few seconds) and `slots/`
// (concurrency slots, taken and given back all day) keep their logs an
// hour, so their moves do not pile up as GC roots for the default 30 days.
func DefaultPrefixLogRetention() map[string]time.Duration {
	return map[string]time.Duration{"runs/": time.Hour, "slots/": time.Hour}
}

// GCOptions configure [Repo.GC]. The zero value means the defaults.
type GCOptions struct {
	// Grace keeps every node put, touched or made a ref's target within it,
	// with everything it reaches; 0 means DefaultGrace, a negative value no
	// grace at all (only nodes refreshed after GC began are spared).
	Grace time.Duration
	// LogRetention keeps ref-log entries younger than it, and the nodes they
	// name; 0 means DefaultLogRetention, a negative value none.
	LogRetention time.Duration
	// PrefixLogRetention gives the refs whose names start with a prefix
	// (a plain string prefix: "runs/") their own log retention, in place
	// of LogRetention; the longest matching prefix wins. It is laid over
	// [DefaultPrefixLogRetention] (each default capped at LogRetention): a
	// prefix named here replaces its default. A duration of 0 means
	// LogRetention, a negative one none.
	PrefixLogRetention map[string]time.Duration
	// DryRun reports what would be deleted and changes nothing (no log
	// entries are pruned either).
	DryRun bool
	// BatchSize is how many objects one sweep batch considers while holding
	// the store-wide lock exclusively; 0 means DefaultGCBatch.
	BatchSize int
}

// GCStats summarises one [Repo.GC] run.
type GCStats struct {
	DryRun           bool
	Scanned          int   // objects listed
	Reachable        int   // objects marked from the roots
	Deleted          int   // objects deleted (or, in a dry run, that would be)
	BytesFreed       int64 // their total size
	Spared           int   // unreachable objects kept because a writer refreshed them (or an ancestor) meanwhile, or an ancestor failed to delete
	LogEntriesPruned int
	// TempFilesRemoved counts the backend's temporary files older than
	// [StaleTempAge] (crash leftovers) that GC removed (or, in a dry run,
	// would remove); see [TempCleaner].
	TempFilesRemoved int
	// DerivedDropped counts the entries of the derived cache ([Derived])
	// that GC dropped (or, in a dry run, would drop) because the node or
	// ref they describe is gone.
	DerivedDropped int
	Failures       []error // deletions that failed (objects, stale temporary files); GC went on past them
	Duration       time.Duration
}

// gcObject is what GC keeps per listed object: 16 bytes, so the listing
// of a million objects takes 16 MB. (Ages are kept only when debug
// logging wants them.)
type gcObject struct {
	hash Hash
	size int64
}

// gcTable is every listed object, sorted by hash.
type gcTable []gcObject

// get returns the listed object at h (a zero one if it was not listed).
func (t gcTable) get(h Hash) gcObject {
	i, ok := t.find(h)
	if !ok {
		return gcObject{}
	}
	o := t[i]
	if o.size < 0 {
		o.size = ^o.size
	}
	return o
}

func (t gcTable) find(h Hash) (int, bool) {
	return slices.BinarySearchFunc(t, h, func(o gcObject, h Hash) int { return cmp.Compare(o.hash, h) })
}

// markGone notes that the listed object at h was deleted (or, in a dry
// run, would be), in its size's sign: no memory beyond the table.
func (t gcTable) markGone(h Hash) {
	if i, ok := t.find(h); ok && t[i].size >= 0 {
		t[i].size = ^t[i].size
	}
}

// gcReadBatch is how many nodes GC reads at once ([GetBatch]) while it
// marks and orders: few round trips, and a bounded heap however large the
// nodes (128 lists of 1,000 edges, read and decoded, are about 8 MB).
const gcReadBatch = 128

// GC deletes every object that no root reaches (SPEC §7), safely while
// other goroutines and processes write:
//
//   - Roots are every ref, every node named (old or new) by a ref-log entry
//     younger than its ref's log retention (LogRetention, or the
//     PrefixLogRetention of the longest prefix of its name), and every node
//     younger than the grace period, each with everything it reaches.
//   - Only one GC runs at a time: a second one fails at once with an error
//     wrapping [ErrLocked].
//   - The mark fails closed: if a reachable node is missing or corrupt, GC
//     stops before deleting anything, naming the node and its root.
//   - The order fails closed too: an unreachable node that cannot be read
//     or decoded has unknown edges, so GC stops before deleting anything,
//     naming it. One that is corrupt (fails its re-hash) is deleted first,
//     before any other, with the same conditional delete; if that delete
//     fails or is refused, GC stops there, having deleted nothing else.
//   - The sweep deletes parents before their children, in short batches
//     under the exclusive store-wide lock, each with
//     [Store.DeleteIfOlder](h, markStart - grace). A node that a writer
//     refreshed since the mark began (put again, named by a new node's edge,
//     made a ref's target) is therefore not deleted, and neither is anything
//     it reaches: its whole candidate subgraph is spared. So is the subgraph
//     of a node whose deletion failed, so the store never holds a node
//     whose edges are gone.
//   - Then the entries of the derived cache ([Repo.Derived]) whose node or
//     ref is gone are dropped, a batch at a time, without a lock: one
//     whose subject GC listed and did not delete is kept unread, any
//     other is looked up first, so an entry a writer adds for a new node
//     stays; a race (a node put again just after the look-up) can only
//     drop an entry of a live node, which costs a recomputation, never a
//     wrong result, since readers check every entry against the nodes. A
//     failure to list or drop them is one of the Failures. A dry run
//     counts them.
//   - Then the backend's temporary files older than [StaleTempAge] are
//     removed, if it has any ([TempCleaner]); the age is fixed, never the
//     grace period, so a live writer's file is never taken.
//   - Finally ref-log entries older than their ref's retention are pruned
//     ([Refs.PruneLog]), with the cutoffs the mark used.
//
// The returned stats are valid even with an error from the ordering or the
// sweep (an unreadable candidate, a cancelled context). GC reports its
// progress to the [ProgressFunc] of ctx ([WithProgress]), if any, in five
// phases: objects listed, nodes marked (no totals: neither is known up
// front), candidates read and ordered, candidates swept (of all), and
// derived-cache entries judged (no total). At debug level GC
// logs its decisions: each candidate with its age, each delete, refusal,
// spared subgraph and failure.
func (r *Repo) GC(ctx context.Context, opts *GCOptions) (*GCStats, error) {
	var o GCOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Grace == 0:
		o.Grace = DefaultGrace
	case o.Grace < 0:
		o.Grace = 0
	}
	switch {
	case o.LogRetention == 0:
		o.LogRetention = DefaultLogRetention
	case o.LogRetention < 0:
		o.LogRetention = 0
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultGCBatch
	}
	// The defaults shorten the retention, never lengthen it: with a
	// LogRetention under an hour, runs/ and slots/ keep theirs that long.
	retention := DefaultPrefixLogRetention()
	for p, d := range retention {
		retention[p] = min(d, o.LogRetention)
	}
	for p, d := range o.PrefixLogRetention {
		if p == "" {
			return nil, fmt.Errorf("gc: a log retention for the empty prefix: set LogRetention instead")
		}
		retention[p] = d
	}
	began := time.Now()
	st := &GCStats{DryRun: o.DryRun}
	unlockGC, err := r.st.LockGC(ctx)
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	defer unlockGC()
	// The mark begins once no writer is between "touch the edges" and
	// "put the node" (or "move the ref"): the exclusive lock is a barrier,
	// so every later touch is at or after markStart, and so after cutoff.
	barrier, err := r.st.Lock(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	markStart, err := r.st.Now(ctx)
	barrier()
	if err != nil {
		return nil, fmt.Errorf("gc: read the store's clock: %w", err)
	}
	cutoff := markStart.Add(-o.Grace)
	logCutoff := markStart.Add(-o.LogRetention)
	prefixCutoffs := make([]PrefixCutoff, 0, len(retention))
	for p, d := range retention {
		switch {
		case d == 0:
			d = o.LogRetention
		case d < 0:
			d = 0
		}
		prefixCutoffs = append(prefixCutoffs, PrefixCutoff{Prefix: p, Before: markStart.Add(-d)})
	}
	slices.SortFunc(prefixCutoffs, func(a, b PrefixCutoff) int { return cmp.Compare(a.Prefix, b.Prefix) })

	debug := r.log.Enabled(ctx, slog.LevelDebug)
	var objs gcTable
	var ages map[Hash]time.Time // for the debug log only
	if debug {
		ages = map[Hash]time.Time{}
	}
	var roots []root
	pr := startProgress(ctx, "gc", "list", "objects", 0)
	defer func() { pr.end() }() // the phase running then
	for obj, err := range r.st.All(ctx) {
		if err != nil {
			return nil, fmt.Errorf("gc: list objects: %w", err)
		}
		pr.add(1)
		objs = append(objs, gcObject{hash: obj.Hash, size: obj.Size})
		if debug {
			ages[obj.Hash] = obj.Time
		}
		if !obj.Time.Before(cutoff) {
			roots = append(roots, root{hash: obj.Hash, from: "a node younger than the grace period"})
		}
	}
	slices.SortFunc(objs, func(a, b gcObject) int { return cmp.Compare(a.hash, b.hash) })
	objs = slices.CompactFunc(objs, func(a, b gcObject) bool { return a.hash == b.hash })
	st.Scanned = len(objs)
	refRoots, liveRefs, err := r.refRoots(ctx, logCutoff, prefixCutoffs)
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	roots = append(refRoots, roots...)
	pr.end()
	pr = startProgress(ctx, "gc", "mark", "nodes", 0)
	marked, err := r.mark(ctx, roots, pr)
	if err != nil {
		return nil, fmt.Errorf("gc: %w: nothing deleted", err)
	}
	var candidates []Hash
	for _, o := range objs {
		h := o.hash
		if _, ok := marked[h]; ok {
			st.Reachable++
		} else {
			candidates = append(candidates, h)
		}
	}
	r.log.Debug("gc marked", "scanned", st.Scanned, "reachable", st.Reachable, "candidates", len(candidates),
		"markStart", markStart, "cutoff", cutoff, "logCutoff", logCutoff, "prefixLogCutoffs", prefixCutoffs)
	// candidates are in hash order (objs is): deterministic, for tests and
	// for reading the log.
	if debug {
		for _, h := range candidates {
			r.log.Debug("gc candidate", "hash", h, "age", markStart.Sub(ages[h]), "size", objs.get(h).size)
		}
	}
	pr.end()
	pr = startProgress(ctx, "gc", "order", "objects", len(candidates))
	order, children, corrupt, err := r.parentsFirst(ctx, candidates, pr)
	if err != nil {
		st.Duration = time.Since(began)
		return st, fmt.Errorf("gc: %w: nothing deleted", err)
	}
	if o.DryRun {
		for _, h := range candidates {
			st.Deleted++
			st.BytesFreed += objs.get(h).size
			objs.markGone(h)
		}
		if tc, ok := r.st.(TempCounter); ok {
			if _, stale, err := tc.CountTemps(ctx); err == nil {
				st.TempFilesRemoved = stale
			}
		}
		pr.end()
		pr = startProgress(ctx, "gc", "cache", "entries", 0)
		if st.DerivedDropped, err = r.dropOrphanDerived(ctx, objs, liveRefs, true, pr); err != nil {
			st.Failures = append(st.Failures, fmt.Errorf("find derived-cache entries of what would be gone: %w", err))
		}
		st.Duration = time.Since(began)
		return st, nil
	}
	// A corrupt candidate's edges are unknown: it goes first, before
	// anything it might reach, or nothing goes at all.
	if err := r.sweepCorrupt(ctx, corrupt, cutoff, objs, st); err != nil {
		st.Duration = time.Since(began)
		return st, fmt.Errorf("gc: %w", err)
	}
	spared := map[Hash]bool{}
	spare := func(h Hash) {
		stack := []Hash{h}
		for len(stack) > 0 {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if spared[h] {
				continue
			}
			spared[h] = true
			st.Spared++
			stack = append(stack, children[h]...)
		}
	}
	spareFrom := func(h Hash, why string) {
		before := st.Spared
		spare(h)
		r.log.Debug("gc spared", "hash", h, "why", why, "subgraph", st.Spared-before)
	}
	// refused handles a candidate the store kept: refreshed since the mark
	// began (its subgraph is spared), or gone already.
	refused := func(h Hash) {
		ok, err := r.st.Has(ctx, h)
		switch {
		case err != nil:
			spareFrom(h, "refused, and its presence is unknown: "+err.Error())
		case ok:
			spareFrom(h, "refused: refreshed since the mark began")
		case debug:
			r.log.Debug("gc gone already", "hash", h)
		}
	}
	deleted := func(h Hash) {
		st.Deleted++
		st.BytesFreed += objs.get(h).size
		if debug {
			r.log.Debug("gc deleted", "hash", h, "size", objs.get(h).size)
		}
		objs.markGone(h)
	}
	// A batch holds candidates of one level only (no two of them parent
	// and descendant), so a refused or failed parent is known before any
	// of its descendants is considered.
	level := levels(order, children)
	pr.end()
	pr = startProgress(ctx, "gc", "sweep", "objects", len(order))
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && end-start < o.BatchSize && level[order[end]] == level[order[start]] {
			end++
		}
		batch := order[start:end]
		start = end
		pr.add(len(batch))
		if err := ctx.Err(); err != nil {
			st.Duration = time.Since(began)
			return st, fmt.Errorf("gc: sweep: %w", err)
		}
		var todo []Hash
		for _, h := range batch {
			if !spared[h] {
				todo = append(todo, h)
			}
		}
		if len(todo) == 0 {
			continue
		}
		unlock, err := r.st.Lock(ctx, true)
		if err != nil {
			st.Duration = time.Since(began)
			return st, fmt.Errorf("gc: sweep: %w", err)
		}
		gone, err := r.st.DeleteIfOlderBatch(ctx, todo, cutoff)
		isGone := make(map[Hash]bool, len(gone))
		for _, h := range gone {
			isGone[h] = true
			deleted(h)
		}
		for _, h := range todo {
			switch {
			case isGone[h]:
			case err != nil:
				// The batch failed: which object failed is unknown, so
				// the rest go one at a time.
				ok, err := r.st.DeleteIfOlder(ctx, h, cutoff)
				switch {
				case err != nil:
					st.Failures = append(st.Failures, fmt.Errorf("delete %s: %w", h, err))
					spareFrom(h, "its delete failed: "+err.Error())
				case ok:
					deleted(h)
				default:
					refused(h)
				}
			default:
				refused(h)
			}
		}
		unlock()
	}
	pr.end()
	pr = startProgress(ctx, "gc", "cache", "entries", 0)
	n, err := r.dropOrphanDerived(ctx, objs, liveRefs, false, pr)
	st.DerivedDropped = n
	if err != nil {
		st.Failures = append(st.Failures, fmt.Errorf("drop derived-cache entries of what is gone: %w", err))
	}
	if tc, ok := r.st.(TempCleaner); ok {
		n, err := tc.RemoveStaleTemps(ctx)
		st.TempFilesRemoved = n
		if err != nil {
			st.Failures = append(st.Failures, fmt.Errorf("remove stale temporary files: %w", err))
		}
		if n > 0 {
			r.log.Debug("gc removed stale temporary files", "count", n)
		}
	}
	pruned, err := r.raw.PruneLog(ctx, logCutoff, prefixCutoffs...)
	st.LogEntriesPruned = pruned
	st.Duration = time.Since(began)
	if err != nil {
		return st, fmt.Errorf("gc: prune ref logs: %w", err)
	}
	r.log.Info("gc done", "scanned", st.Scanned, "reachable", st.Reachable, "deleted", st.Deleted,
		"bytes", st.BytesFreed, "spared", st.Spared, "temps", st.TempFilesRemoved, "derived", st.DerivedDropped, "failures", len(st.Failures), "duration", st.Duration)
	return st, nil
}

// root is a node GC or fsck starts from, and why.
type root struct {
	hash Hash
	from string
	// logOnly: named by a ref-log entry. Such a node may be gone for good:
	// a GC with a shorter retention collected it, while pruning kept the
	// entry (a live ref's creation and newest entries stay). It is then
	// skipped, not an error.
	logOnly bool
}

// refRoots lists every ref's target, every node named by a log entry at
// or after its ref's cutoff ([LogCutoff] of logCutoff and prefixes), and the logged value of every missing ref (its log's
// newest entry says it exists, but it does not), whatever its age: its
// log is kept until the ref is restored or removed by force, and so are
// its nodes. A ref that cannot be read fails it, naming every such ref
// and nothing else: what it pointed at is unknown, so nothing may go.
//
// live holds the name of every ref listed.
func (r *Repo) refRoots(ctx context.Context, logCutoff time.Time, prefixes []PrefixCutoff) (roots []root, live map[string]bool, err error) {
	live = map[string]bool{}
	var bad []error
	for ref, err := range r.raw.List(ctx, "") {
		var b *BadRefError
		if errors.As(err, &b) {
			live[b.Name] = true
			bad = append(bad, b)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("list refs: %w", err)
		}
		live[ref.Name] = true
		roots = append(roots, root{hash: ref.Hash, from: "ref " + ref.Name})
	}
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("%d ref%s cannot be read (restore them from their logs, or replace them by force), nothing deleted: %w",
			len(bad), plural(len(bad)), errors.Join(bad...))
	}
	for name, err := range r.raw.Logs(ctx) {
		if err != nil {
			return nil, nil, fmt.Errorf("list ref logs: %w", err)
		}
		cut := LogCutoff(name, logCutoff, prefixes).UnixMilli()
		entries, err := r.raw.Log(ctx, name)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue // pruned meanwhile
			}
			return nil, nil, fmt.Errorf("read the log of %s: %w", name, err)
		}
		if m := MissingRef(name, entries); !live[name] && m != nil {
			roots = append(roots, root{hash: m.Logged, from: "the log of missing ref " + name, logOnly: true})
		}
		for _, e := range entries {
			if e.Time < cut {
				continue
			}
			for _, h := range []Hash{e.Old, e.New} {
				if !h.IsZero() {
					roots = append(roots, root{hash: h, from: "the log of ref " + name, logOnly: true})
				}
			}
		}
	}
	return roots, live, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// mark returns every node reachable from roots. A missing or corrupt
// reachable node, or one whose edges cannot be found, is an error naming it
// and the root it was reached from.
func (r *Repo) mark(ctx context.Context, roots []root, pr *progress) (map[Hash]struct{}, error) {
	marked := make(map[Hash]struct{}, len(roots))
	type item struct {
		h    Hash
		root int // index in roots
	}
	var stack []item
	for i, rt := range roots {
		if _, ok := marked[rt.hash]; ok {
			continue
		}
		if rt.logOnly {
			ok, err := r.st.Has(ctx, rt.hash)
			if err != nil {
				return nil, fmt.Errorf("node %s (from %s): %w", rt.hash, rt.from, err)
			}
			if !ok {
				r.log.Debug("gc: a log entry names a node collected before", "hash", rt.hash, "from", rt.from)
				continue
			}
		}
		marked[rt.hash] = struct{}{}
		stack = append(stack, item{rt.hash, i})
	}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := slices.Clone(stack[max(0, len(stack)-gcReadBatch):])
		stack = stack[:len(stack)-len(batch)]
		pr.add(len(batch))
		hs := make([]Hash, len(batch))
		for i, it := range batch {
			hs[i] = it.h
		}
		nodes, errs, err := r.getNodes(ctx, hs)
		if err != nil {
			return nil, fmt.Errorf("read reachable nodes: %w", err)
		}
		for i, it := range batch {
			err := errs[i]
			if err == nil {
				var edges []Hash
				if edges, err = r.edgeHashes(ctx, nodes[i]); err == nil {
					for _, e := range edges {
						if _, ok := marked[e]; !ok {
							marked[e] = struct{}{}
							stack = append(stack, item{e, it.root})
						}
					}
					continue
				}
			}
			what := "unreadable"
			switch {
			case errors.Is(err, ErrNotFound):
				what = "missing"
			case errors.Is(err, ErrCorrupt):
				what = "corrupt"
			}
			return nil, fmt.Errorf("reachable node %s (from %s) is %s: %w", it.h, roots[it.root].from, what, err)
		}
	}
	return marked, nil
}

// parentsFirst orders candidates so that every node comes before the
// candidates it reaches, and returns each candidate's candidate children.
// It fails closed: a candidate whose edges cannot be known is an error
// naming it (the sweep must not delete what it might reach), except one
// whose bytes are corrupt, which is returned in corrupt for the caller to
// delete before anything else. A candidate gone since the listing is
// skipped: it holds no edges any more.
func (r *Repo) parentsFirst(ctx context.Context, candidates []Hash, pr *progress) (order []Hash, children map[Hash][]Hash, corrupt []Hash, err error) {
	// candidates are sorted: membership is a binary search, not a map of
	// them all. indeg holds only candidates with a candidate parent.
	isCand := func(h Hash) bool { _, ok := slices.BinarySearch(candidates, h); return ok }
	children = make(map[Hash][]Hash)
	indeg := make(map[Hash]int)
	skip := map[Hash]bool{} // gone or corrupt: not ordered
	var nodes []Node
	var errs []error
	for i, h := range candidates {
		if i%gcReadBatch == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, nil, err
			}
			var err error
			nodes, errs, err = r.getNodes(ctx, candidates[i:min(i+gcReadBatch, len(candidates))])
			if err != nil {
				return nil, nil, nil, fmt.Errorf("read unreachable nodes: %w", err)
			}
			pr.add(len(nodes))
		}
		n, err := nodes[i%gcReadBatch], errs[i%gcReadBatch]
		switch {
		case errors.Is(err, ErrNotFound):
			skip[h] = true
			r.log.Debug("gc: a candidate is gone since the listing", "hash", h)
			continue
		case errors.Is(err, ErrCorrupt):
			corrupt = append(corrupt, h)
			skip[h] = true
			r.log.Debug("gc: a candidate is corrupt", "hash", h, "err", err)
			continue
		case errors.Is(err, ErrInvalid):
			return nil, nil, nil, fmt.Errorf("unreachable object %s is not a node, so what it links to is unknown (fsck reports it; remove it by hand if it is junk): %w", h, err)
		case err != nil:
			return nil, nil, nil, fmt.Errorf("unreachable node %s cannot be read, so what it links to is unknown: %w", h, err)
		}
		edges, err := r.edgeHashes(ctx, n)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("unreachable node %s: its edges cannot be found, so what it links to is unknown: %w", h, err)
		}
		for _, e := range edges {
			if isCand(e) {
				children[h] = append(children[h], e)
				indeg[e]++
			}
		}
	}
	if len(skip) > 0 {
		rest := make([]Hash, 0, len(candidates))
		for _, h := range candidates {
			if !skip[h] {
				rest = append(rest, h)
			}
		}
		candidates = rest
	}
	order = make([]Hash, 0, len(candidates))
	for _, h := range candidates {
		if indeg[h] == 0 {
			order = append(order, h)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, c := range children[order[i]] {
			if indeg[c]--; indeg[c] == 0 {
				order = append(order, c)
			}
		}
	}
	if len(order) < len(candidates) { // a cycle: impossible for content addresses
		placed := make(map[Hash]bool, len(order))
		for _, h := range order {
			placed[h] = true
		}
		for _, h := range candidates {
			if !placed[h] {
				order = append(order, h)
			}
		}
	}
	return order, children, corrupt, nil
}

// getNodes reads and decodes the nodes at hs as [Repo.Get] does, a batch
// at a time ([GetBatch]): nodes[i] is hs[i]'s, or errs[i] says why not;
// err is a failure of the whole read.
func (r *Repo) getNodes(ctx context.Context, hs []Hash) (nodes []Node, errs []error, err error) {
	data, errs, err := GetBatch(ctx, r.st, hs)
	if err != nil {
		return nil, nil, err
	}
	nodes = make([]Node, len(hs))
	for i, h := range hs {
		d := data[i]
		if errs[i] != nil {
			b, ok := builtinByHash(h)
			if !ok || !errorsIsAny(errs[i], ErrNotFound, ErrCorrupt) {
				continue
			}
			d, errs[i] = b.Node, nil
		}
		n, err := DecodeNode(d)
		if err != nil {
			errs[i] = &ObjectError{Op: "get", Hash: h, Err: err}
			continue
		}
		nodes[i] = n
	}
	return nodes, errs, nil
}

// levels returns each candidate's depth below the candidates that reach
// it (absent: 0, no candidate parent), and sorts order, which lists
// parents first, by it (still parents first).
func levels(order []Hash, children map[Hash][]Hash) map[Hash]int {
	level := map[Hash]int{}
	for _, h := range order {
		for _, c := range children[h] {
			level[c] = max(level[c], level[h]+1)
		}
	}
	if len(level) > 0 {
		slices.SortStableFunc(order, func(a, b Hash) int { return cmp.Compare(level[a], level[b]) })
	}
	return level
}

// sweepCorrupt deletes the corrupt candidates, each under the exclusive
// store-wide lock with the same conditional delete as the sweep. Their edges
// are unknown, so if one cannot be deleted (the delete fails, or a writer
// refreshed it since the mark began) the error names it and GC must delete
// nothing else.
func (r *Repo) sweepCorrupt(ctx context.Context, corrupt []Hash, cutoff time.Time, objs gcTable, st *GCStats) error {
	for _, h := range corrupt {
		unlock, err := r.st.Lock(ctx, true)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		deleted, err := r.st.DeleteIfOlder(ctx, h, cutoff)
		var present bool
		if err == nil && !deleted {
			present, err = r.st.Has(ctx, h)
		}
		unlock()
		switch {
		case err != nil:
			return fmt.Errorf("unreachable node %s is corrupt, so what it links to is unknown, and deleting it failed: %w: nothing else deleted", h, err)
		case deleted:
			st.Deleted++
			st.BytesFreed += objs.get(h).size
			r.log.Debug("gc deleted a corrupt node", "hash", h, "size", objs.get(h).size)
			objs.markGone(h)
		case present:
			return fmt.Errorf("unreachable node %s is corrupt, so what it links to is unknown, and a writer refreshed it since GC began (delete refused): nothing else deleted", h)
		}
	}
	return nil
}
