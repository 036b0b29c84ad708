package cas

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
)

// The layout of an export tar (SPEC §8, docs/FORMAT.md).
const (
	tarObjects = "objects/"
	tarRefs    = "refs/"
	tarLogs    = "logs/"
	logSuffix  = ".jsonl"
)

// Limits on the entries of an import tar; an object's limit is the Repo's
// MaxNodeSize.
const (
	maxRefEntry = 64       // a hash and a newline, with room to spare
	maxLogEntry = 64 << 20 // one ref's log
)

// Import batches: objects are stored in batches of about this many, with
// one flush point each.
const (
	importBatch      = 256
	importBatchBytes = 8 << 20
)

// The end record: the last entry of an export, a PAX global header whose
// records count the entries before it and hold a digest of them
// (docs/FORMAT.md). Importers that predate it skip it, as they skip every
// PAX global header.
const (
	tarEnd       = "uwf-export-end"
	paxObjects   = "UWF.objects"
	paxRefs      = "UWF.refs"
	paxLogs      = "UWF.logs"
	paxDigest    = "UWF.xxh64"
	paxUWFPrefix = "UWF."
	tarBlockSize = 512
)

// tarDigest is the digest an end record carries: XXH64 over, for each
// entry before it in order, its name, a NUL, its size in decimal, a NUL and
// its bytes.
type tarDigest struct{ d *xxhash.Digest }

func newTarDigest() tarDigest { return tarDigest{xxhash.New()} }

func (t tarDigest) add(name string, data []byte) {
	t.d.WriteString(name)
	t.d.Write([]byte{0})
	t.d.WriteString(strconv.Itoa(len(data)))
	t.d.Write([]byte{0})
	t.d.Write(data)
}

func (t tarDigest) sum() Hash { return Hash(t.d.Sum64()) }

// tarTime is the modification time of every entry, so that exports of one
// store are byte-identical.
var tarTime = time.Unix(0, 0)

// ExportStats summarises one [Export].
type ExportStats struct {
	Objects    int   // objects written
	Bytes      int64 // their total size
	Refs       int   // refs written
	Logs       int   // ref logs written, of live and deleted refs
	LogEntries int   // entries in those logs
}

// Export writes a tar of part or all of r's store to w (SPEC §8):
//
//   - objects/<hash>: each object's stored (canonical) bytes, children
//     before parents: ordered by height (the meta-schema, which has no
//     edges, is the one object of height 0 and comes first; every other
//     object comes after everything it reaches), then by hash;
//   - refs/<name>: the ref's hash and a newline, in name order;
//   - logs/<name>.jsonl: the ref's log, one JSON object per line
//     ({"old","new","time","message"}, oldest first), in name order; the
//     logs of deleted refs are included;
//   - uwf-export-end: the end record, a PAX global header whose records
//     count the objects, refs and logs before it and carry a digest of
//     them, so that [Import] refuses a cut or damaged tar.
//
// roots are ref names or hashes as a user gives them (a name is tried
// first, as with [Repo.ResolveType]). With no roots Export writes
// everything: every object, every ref and every log. With roots it writes
// the closure of the named nodes and of the named refs' targets, the named
// refs and their logs (a deleted ref's name exports its log), plus the
// closure of every node those logs name that is still stored, so an
// import's GC finds every node a young log entry names.
//
// Entries have fixed modes, owners and times, so two exports of the same
// store are byte-identical. Export holds the store-wide lock shared while
// it runs, so GC cannot delete what it is about to write. The error wraps
// [ErrNotFound] for a root that is neither a ref, a ref log nor a stored
// node, or for a reachable node that is missing, and [ErrCorrupt] for a
// corrupt one; w may then hold a partial tar.
func Export(ctx context.Context, r *Repo, w io.Writer, roots []string) (*ExportStats, error) {
	unlock, err := r.st.Lock(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer unlock()
	refs := map[string]Hash{}
	logs := map[string][]LogEntry{}
	var nodes []Hash
	if len(roots) == 0 {
		for ref, err := range r.raw.List(ctx, "") {
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			refs[ref.Name] = ref.Hash
		}
		for name, err := range r.raw.Logs(ctx) {
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			logs[name] = nil
		}
		for obj, err := range r.st.All(ctx) {
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			nodes = append(nodes, obj.Hash)
		}
	} else {
		for _, root := range roots {
			h, isRef, err := r.exportRoot(ctx, root)
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			switch {
			case isRef && !h.IsZero():
				refs[root] = h
				logs[root] = nil
				nodes = append(nodes, h)
			case isRef:
				logs[root] = nil // a deleted ref: its log
			default:
				nodes = append(nodes, h)
			}
		}
	}
	logNames := sortedKeys(logs)
	for _, name := range logNames {
		entries, err := r.raw.Log(ctx, name)
		if errors.Is(err, ErrNotFound) {
			delete(logs, name) // pruned meanwhile
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		logs[name] = entries
		if len(roots) == 0 {
			continue // every object goes anyway
		}
		for _, e := range entries {
			for _, h := range []Hash{e.Old, e.New} {
				if h.IsZero() {
					continue
				}
				ok, err := r.st.Has(ctx, h)
				if err != nil {
					return nil, fmt.Errorf("export: %w", err)
				}
				if ok {
					nodes = append(nodes, h)
				}
			}
		}
	}
	pr := startProgress(ctx, "export", "order", "nodes", 0)
	order, err := r.exportOrder(ctx, nodes, pr)
	pr.end()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}

	st := &ExportStats{}
	tw := tar.NewWriter(w)
	dg := newTarDigest()
	pr = startProgress(ctx, "export", "write", "objects", len(order))
	defer pr.end()
	for _, h := range order {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("export: %w", err)
		}
		data, err := r.st.Get(ctx, h)
		if b, ok := builtinByHash(h); ok && errorsIsAny(err, ErrNotFound, ErrCorrupt) {
			data, err = b.Node, nil // a constant of the format: its known bytes
		}
		if err != nil {
			return st, fmt.Errorf("export: %w", err)
		}
		if err := writeEntry(tw, dg, tarObjects+h.String(), data); err != nil {
			return st, err
		}
		st.Objects++
		st.Bytes += int64(len(data))
		pr.add(1)
	}
	for _, name := range sortedKeys(refs) {
		if err := writeEntry(tw, dg, tarRefs+name, []byte(refs[name].String()+"\n")); err != nil {
			return st, err
		}
		st.Refs++
	}
	var buf bytes.Buffer
	for _, name := range sortedKeys(logs) {
		buf.Reset()
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for _, e := range logs[name] {
			if err := enc.Encode(e); err != nil {
				return st, fmt.Errorf("export: log of %s: %w", name, err)
			}
		}
		if err := writeEntry(tw, dg, tarLogs+name+logSuffix, buf.Bytes()); err != nil {
			return st, err
		}
		st.Logs++
		st.LogEntries += len(logs[name])
	}
	end := &tar.Header{
		Typeflag: tar.TypeXGlobalHeader,
		Name:     tarEnd,
		PAXRecords: map[string]string{
			paxObjects: strconv.Itoa(st.Objects),
			paxRefs:    strconv.Itoa(st.Refs),
			paxLogs:    strconv.Itoa(st.Logs),
			paxDigest:  dg.sum().String(),
		},
	}
	if err := tw.WriteHeader(end); err != nil {
		return st, fmt.Errorf("export: the end record: %w", err)
	}
	if err := tw.Close(); err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// exportRoot resolves one export root: a live ref (its hash, true), a
// deleted ref with a log (zero, true) or a stored node (its hash, false).
func (r *Repo) exportRoot(ctx context.Context, root string) (Hash, bool, error) {
	nameOK := ValidateRefName(root) == nil
	if nameOK {
		h, err := r.raw.Get(ctx, root)
		if err == nil {
			return h, true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return 0, false, err
		}
		if _, err := r.raw.Log(ctx, root); err == nil {
			return 0, true, nil
		} else if !errors.Is(err, ErrNotFound) {
			return 0, false, err
		}
	}
	h, perr := ParseHash(root)
	if perr != nil {
		if nameOK {
			return 0, false, fmt.Errorf("root %q: no such ref or ref log: %w", root, ErrNotFound)
		}
		return 0, false, fmt.Errorf("root %q is neither a ref name nor a hash: %w", root, perr)
	}
	ok, err := r.st.Has(ctx, h)
	if err != nil {
		return 0, false, err
	}
	if !ok {
		return 0, false, fmt.Errorf("root %s: %w", h, ErrNotFound)
	}
	return h, false, nil
}

// exportOrder returns every node reachable from nodes (included), children
// before parents: sorted by height (0 for a node without edges, else one
// more than its highest child), then by hash. The order depends only on
// the set, so it is the same for every export of the same store.
func (r *Repo) exportOrder(ctx context.Context, nodes []Hash, pr *progress) ([]Hash, error) {
	const visiting = -1
	height := make(map[Hash]int, len(nodes))
	type frame struct {
		h     Hash
		edges []Hash
		next  int
		max   int // highest child so far
	}
	var stack []frame
	push := func(h, from Hash) error {
		n, err := r.Get(ctx, h)
		if err != nil {
			if !from.IsZero() {
				return fmt.Errorf("%s (reached from %s): %w", h, from, err)
			}
			return err
		}
		edges, err := r.edgeHashes(ctx, n)
		if err != nil {
			return fmt.Errorf("edges of %s: %w", h, err)
		}
		height[h] = visiting
		stack = append(stack, frame{h: h, edges: edges, max: -1})
		pr.add(1)
		return nil
	}
	for i, root := range nodes {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if _, ok := height[root]; ok {
			continue
		}
		if err := push(root, 0); err != nil {
			return nil, err
		}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(top.edges) {
				c := top.edges[top.next]
				top.next++
				if hc, ok := height[c]; ok {
					if hc == visiting {
						return nil, fmt.Errorf("%w: a cycle through %s", ErrInvalid, c) // impossible for hashes
					}
					top.max = max(top.max, hc)
					continue
				}
				if err := push(c, top.h); err != nil {
					return nil, err
				}
				continue
			}
			hgt := top.max + 1
			height[top.h] = hgt
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				parent := &stack[len(stack)-1]
				parent.max = max(parent.max, hgt)
			}
		}
	}
	order := make([]Hash, 0, len(height))
	for h := range height {
		order = append(order, h)
	}
	slices.SortFunc(order, func(a, b Hash) int {
		if ha, hb := height[a], height[b]; ha != hb {
			return ha - hb
		}
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	return order, nil
}

// writeEntry writes one regular file with fixed metadata and adds it to
// the digest.
func writeEntry(tw *tar.Writer, dg tarDigest, name string, data []byte) error {
	dg.add(name, data)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Size:     int64(len(data)),
		Mode:     0o644,
		ModTime:  tarTime,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("export: %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("export: %s: %w", name, err)
	}
	return nil
}

// ImportOptions configure [Import]; nil means the defaults.
type ImportOptions struct {
	// Force moves refs that exist with another value to the tar's value,
	// logging "import --force". Without it they are reported and left
	// alone.
	Force bool
}

// ImportReport says what [Import] did. Names are in name order.
type ImportReport struct {
	Objects   int      // objects verified and stored (present ones have their age refreshed)
	Bytes     int64    // their total size
	Created   []string // refs created, with their logs as they are
	Unchanged []string // refs already at the tar's value: left alone, logs too
	Forced    []string // refs moved to the tar's value (ImportOptions.Force)
	// Conflicts are refs left alone: at another value (without Force), or
	// whose name clashes with an existing ref.
	Conflicts []RefConflict
	// Logs counts the logs of refs deleted in the tar, merged into the
	// store's (Refs.ImportLog); LogsSkipped names those left alone because
	// the ref is live here (merging would make its log disagree with it).
	Logs        int
	LogsSkipped []string
	// EndRecord says the tar ended with an end record whose counts and
	// digest matched what was read. A tar without one (written before
	// end records, by format version 1) is accepted when it ends with the
	// tar end-of-archive marker, which is then all that shows it whole.
	EndRecord bool
}

// RefConflict is a ref that [Import] left alone.
type RefConflict struct {
	Name     string
	Current  Hash   // its value in the store; zero for a clash
	Imported Hash   // its value in the tar
	Clash    string // for a name clash, the existing ref's name; else empty
}

// String formats the conflict for people: "<name>: here <hash>, in the
// tar <hash>" or "<name>: clashes with existing ref <other>".
func (c RefConflict) String() string {
	if c.Clash != "" {
		return fmt.Sprintf("%s: clashes with existing ref %s", c.Name, c.Clash)
	}
	return fmt.Sprintf("%s: here %s, in the tar %s", c.Name, c.Current, c.Imported)
}

// ImportError reports a bad entry of an import tar. It wraps the reason:
// [ErrInvalid] for a malformed entry, [ErrTooLarge] for an oversized one,
// [ErrCorrupt] for an object whose bytes do not hash to its name, or what
// the typed layer said ([ValidationError], [EdgeError], ...).
type ImportError struct {
	Entry string // the entry's name in the tar
	Err   error
}

func (e *ImportError) Error() string { return "import: " + e.Entry + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *ImportError) Unwrap() error { return e.Err }

// Import reads a tar written by [Export] into r:
//
//   - every object is verified: its bytes hash to its name, are a node in
//     canonical form, valid against its schema, with every edge present;
//     that is, it is put through the typed layer ([Repo.PutEach]), in
//     batches with one flush point each, children first as the tar orders
//     them (an edge to a later entry is an error);
//   - a ref missing here is created with its log as it is
//     ([Refs.ImportLog]: no new entry), after checking that its target is
//     stored; if the store's own log for that name leaves it elsewhere it
//     is then moved to the tar's value, logged "import";
//   - a ref already at the tar's value is left alone, its log too;
//   - a ref at another value is reported in ImportReport.Conflicts, or
//     with opts.Force moved to the tar's value, logged "import --force";
//   - the log of a ref deleted in the tar is merged into the store's if the
//     ref is not live here, else left alone (ImportReport.LogsSkipped).
//
// Refs and logs are applied only from a whole, verified tar: once every
// entry has been read and checked, the tar has ended with the
// end-of-archive marker (a tar cut short at an entry boundary lacks it,
// though archive/tar reads it as a clean end), and its end record, if it
// has one, counts exactly the objects, refs and logs read and carries
// their digest. So a cut, damaged or bad tar changes no ref and no log;
// the objects read before the problem may have been stored (each one
// whole and verified: they are content-addressed, and GC removes them if
// nothing refers to them). A tar without an end record, as format version
// 1 wrote them, is accepted on its end-of-archive marker alone
// (ImportReport.EndRecord is false). Import is idempotent: a second import
// of the same tar changes nothing (but objects' ages).
//
// A bad entry (an object that does not hash to its name or is not a valid
// node, an unknown or unsafe path such as one with "..", a link or other
// non-file entry, an entry over its size limit, a malformed ref or log, an
// entry after the end record, an end record that does not match) is an
// *[ImportError] naming it; objects before it may have been stored, each
// one whole, and nothing of it or after it is. A tar cut short is an error
// wrapping [ErrInvalid]. If refs were left
// alone as conflicts the error wraps [ErrConflict] (after everything else
// was imported). The report is non-nil and says what was done even with
// an error.
func Import(ctx context.Context, r *Repo, rd io.Reader, opts *ImportOptions) (*ImportReport, error) {
	var o ImportOptions
	if opts != nil {
		o = *opts
	}
	rep := &ImportReport{}
	refs := map[string]Hash{}
	logs := map[string][]LogEntry{}
	pr := startProgress(ctx, "import", "objects", "objects", 0)
	defer pr.end()
	type pending struct {
		entry string
		hash  Hash
		node  Node
		size  int
	}
	var batch []pending
	batchSize := 0
	inBatch := map[Hash]bool{}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		nodes := make([]Node, len(batch))
		for i, p := range batch {
			nodes[i] = p.node
		}
		hs, errs := r.PutEach(ctx, nodes)
		for i, p := range batch {
			if errs[i] != nil {
				return &ImportError{Entry: p.entry, Err: errs[i]}
			}
			if hs[i] != p.hash {
				return &ImportError{Entry: p.entry, Err: fmt.Errorf("%w: stored as %s", ErrInvalid, hs[i])}
			}
		}
		for _, p := range batch {
			rep.Objects++
			rep.Bytes += int64(p.size)
		}
		pr.add(len(batch))
		batch, batchSize = batch[:0], 0
		clear(inBatch)
		return nil
	}

	tail := &tailReader{r: rd}
	tr := tar.NewReader(tail)
	dg := newTarDigest()
	var seen endCounts
	var end *tar.Header
	for {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("import: %w", err)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("import: read the tar: %w", tarError(err))
		}
		if end != nil {
			return rep, &ImportError{Entry: hdr.Name, Err: fmt.Errorf("%w: an entry after the end record", ErrInvalid)}
		}
		if isEndRecord(hdr) {
			end = hdr
			continue
		}
		kind, name, err := classify(hdr)
		if err != nil {
			return rep, &ImportError{Entry: hdr.Name, Err: err}
		}
		entry := hdr.Name
		switch kind {
		case entrySkip:
			continue
		case entryObject:
			h, _ := ParseCanonicalHash(name)
			data, err := readEntry(tr, hdr, r.max)
			if err != nil {
				return rep, &ImportError{Entry: entry, Err: err}
			}
			if got := Sum(data); got != h {
				return rep, &ImportError{Entry: entry, Err: fmt.Errorf("%w: its bytes hash to %s", ErrCorrupt, got)}
			}
			dg.add(tarObjects+name, data)
			seen.objects++
			n, err := DecodeNode(data)
			if err != nil {
				return rep, &ImportError{Entry: entry, Err: err}
			}
			if !IsCanonicalNode(data, n) {
				return rep, &ImportError{Entry: entry, Err: fmt.Errorf("%w: not in canonical form (RFC 8785)", ErrInvalid)}
			}
			if inBatch[n.Type] {
				// The typed layer compiles a node's schema from the store.
				if err := flush(); err != nil {
					return rep, err
				}
			}
			batch = append(batch, pending{entry: entry, hash: h, node: n, size: len(data)})
			inBatch[h] = true
			batchSize += len(data)
			if len(batch) >= importBatch || batchSize >= importBatchBytes {
				if err := flush(); err != nil {
					return rep, err
				}
			}
		case entryRef:
			data, err := readEntry(tr, hdr, maxRefEntry)
			if err != nil {
				return rep, &ImportError{Entry: entry, Err: err}
			}
			dg.add(tarRefs+name, data)
			seen.refs++
			h, err := ParseCanonicalHash(strings.TrimSuffix(string(data), "\n"))
			if err != nil {
				return rep, &ImportError{Entry: entry, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
			}
			if h.IsZero() {
				return rep, &ImportError{Entry: entry, Err: fmt.Errorf("%w: a ref cannot hold the zero hash", ErrInvalid)}
			}
			if _, dup := refs[name]; dup {
				return rep, &ImportError{Entry: entry, Err: fmt.Errorf("%w: the ref appears twice", ErrInvalid)}
			}
			refs[name] = h
		case entryLog:
			data, err := readEntry(tr, hdr, maxLogEntry)
			if err != nil {
				return rep, &ImportError{Entry: entry, Err: err}
			}
			dg.add(tarLogs+name+logSuffix, data)
			seen.logs++
			entries, err := parseLog(data)
			if err != nil {
				return rep, &ImportError{Entry: entry, Err: err}
			}
			if _, dup := logs[name]; dup {
				return rep, &ImportError{Entry: entry, Err: fmt.Errorf("%w: the log appears twice", ErrInvalid)}
			}
			logs[name] = entries
		}
	}
	// The tar is whole: it ends with the end-of-archive marker (a cut
	// tar does not), and its end record, if any, matches what was read.
	if !tail.ended() {
		return rep, fmt.Errorf("import: %w: the tar is cut short: it ends after %d bytes without the end-of-archive marker; no ref or log was changed", ErrInvalid, tail.n)
	}
	if end != nil {
		if err := checkEnd(end, seen, dg.sum()); err != nil {
			return rep, &ImportError{Entry: end.Name, Err: err}
		}
		rep.EndRecord = true
	}
	if err := flush(); err != nil {
		return rep, err
	}
	// Refs and logs, now that every object is in. Check them all before
	// changing any.
	for name, entries := range logs {
		newest := newestEntry(entries)
		want, isRef := refs[name]
		switch {
		case isRef && newest != nil && newest.New != want:
			return rep, &ImportError{Entry: tarLogs + name + logSuffix,
				Err: fmt.Errorf("%w: its newest entry says %s, but refs/%s says %s", ErrInvalid, newest.New, name, want)}
		case !isRef && newest != nil && !newest.New.IsZero():
			return rep, &ImportError{Entry: tarLogs + name + logSuffix,
				Err: fmt.Errorf("%w: its newest entry says the ref is at %s, but the tar has no refs/%s", ErrInvalid, newest.New, name)}
		}
	}
	for name, want := range refs {
		ok, err := r.st.Has(ctx, want)
		if err != nil {
			return rep, fmt.Errorf("import: %w", err)
		}
		if !ok {
			return rep, &ImportError{Entry: tarRefs + name, Err: fmt.Errorf("its target %s is in neither the tar nor the store: %w", want, ErrNotFound)}
		}
	}
	names := sortedKeys(logs)
	for name := range refs {
		if _, ok := logs[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if err := r.importRef(ctx, rep, &o, name, refs, logs); err != nil {
			return rep, err
		}
	}
	if len(rep.Conflicts) > 0 {
		what := make([]string, len(rep.Conflicts))
		for i, c := range rep.Conflicts {
			what[i] = c.String()
		}
		hint := ""
		if !o.Force {
			hint = " (force moves those at another value)"
		}
		return rep, fmt.Errorf("import: %d refs left as they are%s: %s: %w", len(rep.Conflicts), hint, strings.Join(what, "; "), ErrConflict)
	}
	return rep, nil
}

// endCounts counts the entries an end record counts.
type endCounts struct{ objects, refs, logs int }

// isEndRecord reports whether hdr is an end record: a PAX global header
// with records of ours. Other global headers are skipped as before.
func isEndRecord(hdr *tar.Header) bool {
	if hdr.Typeflag != tar.TypeXGlobalHeader {
		return false
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, paxUWFPrefix) {
			return true
		}
	}
	return false
}

// checkEnd checks an end record against the entries read before it. The
// error wraps [ErrInvalid].
func checkEnd(end *tar.Header, seen endCounts, digest Hash) error {
	recs := end.PAXRecords
	for k := range recs {
		switch k {
		case paxObjects, paxRefs, paxLogs, paxDigest:
		default:
			if strings.HasPrefix(k, paxUWFPrefix) {
				return fmt.Errorf("%w: unknown record %q in the end record", ErrInvalid, k)
			}
		}
	}
	for _, c := range []struct {
		key  string
		what string
		got  int
	}{{paxObjects, "objects", seen.objects}, {paxRefs, "refs", seen.refs}, {paxLogs, "logs", seen.logs}} {
		v, ok := recs[c.key]
		if !ok {
			return fmt.Errorf("%w: the end record lacks %s", ErrInvalid, c.key)
		}
		want, err := strconv.Atoi(v)
		if err != nil || want < 0 || strconv.Itoa(want) != v {
			return fmt.Errorf("%w: the end record's %s is %q, not a count", ErrInvalid, c.key, v)
		}
		if want != c.got {
			return fmt.Errorf("%w: the end record counts %d %s, the tar holds %d", ErrInvalid, want, c.what, c.got)
		}
	}
	v, ok := recs[paxDigest]
	if !ok {
		return fmt.Errorf("%w: the end record lacks %s", ErrInvalid, paxDigest)
	}
	want, err := ParseCanonicalHash(v)
	if err != nil {
		return fmt.Errorf("%w: the end record's %s: %w", ErrInvalid, paxDigest, err)
	}
	if want != digest {
		return fmt.Errorf("%w: the entries' digest is %s, the end record says %s: the tar is damaged", ErrInvalid, digest, want)
	}
	return nil
}

// tailReader passes reads through, counting bytes and keeping the last
// block read, so that [Import] can tell a tar that ends with the
// end-of-archive marker (a zero block) from one cut short at an entry
// boundary, which archive/tar reads as a clean end.
type tailReader struct {
	r    io.Reader
	n    int64
	tail [tarBlockSize]byte
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n >= len(t.tail) {
		copy(t.tail[:], p[n-len(t.tail):n])
	} else if n > 0 {
		copy(t.tail[:], t.tail[n:])
		copy(t.tail[len(t.tail)-n:], p[:n])
	}
	t.n += int64(n)
	return n, err
}

// ended reports whether the last block read was a zero block: the tar's
// end-of-archive marker. Every entry's last block holds some of its bytes
// (no entry of an export ends in 512 zero bytes) or is a header, so a tar
// cut at an entry boundary ends otherwise.
func (t *tailReader) ended() bool {
	if t.n < tarBlockSize || t.n%tarBlockSize != 0 {
		return false
	}
	for _, b := range t.tail {
		if b != 0 {
			return false
		}
	}
	return true
}

// importRef applies one name's ref and log, as [Import] says.
func (r *Repo) importRef(ctx context.Context, rep *ImportReport, o *ImportOptions, name string, refs map[string]Hash, logs map[string][]LogEntry) error {
	want, isRef := refs[name]
	entries := logs[name]
	cur, err := r.raw.Get(ctx, name)
	absent := errors.Is(err, ErrNotFound)
	if err != nil && !absent {
		return fmt.Errorf("import: %w", err)
	}
	clash := func(err error) bool {
		var ce *ConflictError
		if errors.As(err, &ce) && ce.Clash != "" {
			rep.Conflicts = append(rep.Conflicts, RefConflict{Name: name, Imported: want, Clash: ce.Clash})
			return true
		}
		return false
	}
	switch {
	case isRef && absent:
		err := r.createImported(ctx, name, want, entries)
		if clash(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("import: ref %s: %w", name, err)
		}
		rep.Created = append(rep.Created, name)
	case isRef && cur == want:
		rep.Unchanged = append(rep.Unchanged, name)
	case isRef && o.Force:
		err := r.refs.CompareAndSwap(ctx, name, cur, want, "import --force")
		var ce *ConflictError
		if errors.As(err, &ce) {
			rep.Conflicts = append(rep.Conflicts, RefConflict{Name: name, Current: ce.Current, Imported: want, Clash: ce.Clash})
			return nil
		}
		if err != nil {
			return fmt.Errorf("import: ref %s: %w", name, err)
		}
		rep.Forced = append(rep.Forced, name)
	case isRef:
		rep.Conflicts = append(rep.Conflicts, RefConflict{Name: name, Current: cur, Imported: want})
	case absent:
		err := r.refs.ImportLog(ctx, name, entries)
		if clash(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("import: log of %s: %w", name, err)
		}
		rep.Logs++
	default:
		rep.LogsSkipped = append(rep.LogsSkipped, name)
	}
	return nil
}

// createImported creates ref name at want (which is stored) with its log:
// under the store-wide shared lock it refreshes want's age and imports the
// log; if the merged log leaves the ref elsewhere (no log in the tar, or
// [MergeLog] puts the store's own entries of that name last) it moves it,
// logged.
func (r *Repo) createImported(ctx context.Context, name string, want Hash, entries []LogEntry) error {
	unlock, err := r.st.Lock(ctx, false)
	if err != nil {
		return err
	}
	if err := r.st.Touch(ctx, want); err != nil {
		unlock()
		return err
	}
	err = r.refs.ImportLog(ctx, name, entries)
	unlock()
	if err != nil {
		return err
	}
	cur, err := r.raw.Get(ctx, name)
	switch {
	case err == nil && cur == want:
		return nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return err
	}
	return r.refs.CompareAndSwap(ctx, name, cur, want, "import")
}

// newestEntry returns the entry that [MergeLog] puts last when entries
// are imported into an empty log, or nil for an empty log.
func newestEntry(entries []LogEntry) *LogEntry {
	if len(entries) == 0 {
		return nil
	}
	merged := MergeLog(nil, entries, func(e LogEntry) LogEntry { return e }, 0)
	return &merged[len(merged)-1]
}

// Kinds of tar entries.
const (
	entrySkip = iota
	entryObject
	entryRef
	entryLog
)

// classify checks an entry's type and path and says what it is, with its
// hash or ref name. Directories of the layout and PAX global headers are
// skipped; anything else unexpected is an error wrapping [ErrInvalid].
func classify(hdr *tar.Header) (kind int, name string, err error) {
	p := strings.TrimPrefix(hdr.Name, "./")
	if p == "" || p == "." {
		return entrySkip, "", nil
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.IndexByte(p, 0) >= 0 {
		return 0, "", fmt.Errorf("%w: unsafe path", ErrInvalid)
	}
	dir := strings.TrimSuffix(p, "/")
	for seg := range strings.SplitSeq(dir, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return 0, "", fmt.Errorf("%w: unsafe path", ErrInvalid)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return entrySkip, "", nil
	case tar.TypeDir:
		top, rest, _ := strings.Cut(dir, "/")
		switch {
		case (top == "objects" && rest == "") || ((top == "refs" || top == "logs") && (rest == "" || ValidateRefName(rest) == nil)):
			return entrySkip, "", nil
		}
		return 0, "", fmt.Errorf("%w: unknown directory", ErrInvalid)
	case tar.TypeReg:
	default:
		return 0, "", fmt.Errorf("%w: unsupported entry type %q (only regular files)", ErrInvalid, hdr.Typeflag)
	}
	switch {
	case strings.HasPrefix(p, tarObjects):
		name = p[len(tarObjects):]
		if _, err := ParseCanonicalHash(name); err != nil {
			return 0, "", fmt.Errorf("%w: unknown entry: %w", ErrInvalid, err)
		}
		return entryObject, name, nil
	case strings.HasPrefix(p, tarRefs):
		name = p[len(tarRefs):]
		if err := ValidateRefName(name); err != nil {
			return 0, "", fmt.Errorf("%w: unknown entry: %w", ErrInvalid, err)
		}
		return entryRef, name, nil
	case strings.HasPrefix(p, tarLogs) && strings.HasSuffix(p, logSuffix):
		name = strings.TrimSuffix(p[len(tarLogs):], logSuffix)
		if err := ValidateRefName(name); err != nil {
			return 0, "", fmt.Errorf("%w: unknown entry: %w", ErrInvalid, err)
		}
		return entryLog, name, nil
	}
	return 0, "", fmt.Errorf("%w: unknown entry (want objects/<hash>, refs/<name> or logs/<name>.jsonl)", ErrInvalid)
}

// readEntry reads the current entry, refusing one over limit bytes before
// reading it.
func readEntry(tr *tar.Reader, hdr *tar.Header, limit int64) ([]byte, error) {
	if hdr.Size > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, hdr.Size, limit)
	}
	data, err := ReadLimited(tr, limit)
	if err != nil {
		return nil, tarError(err)
	}
	return data, nil
}

// tarError marks the errors of a tar cut short or not a tar at all as
// [ErrInvalid]; other errors (reading the input) pass as they are.
func tarError(err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the tar is cut short: %w", ErrInvalid, err)
	case errors.Is(err, tar.ErrHeader), errors.Is(err, tar.ErrInsecurePath), errors.Is(err, tar.ErrFieldTooLong):
		return fmt.Errorf("%w: not a valid tar: %w", ErrInvalid, err)
	}
	return err
}

// parseLog parses a logs/<name>.jsonl entry: one JSON object per line with
// exactly the fields old, new, time and message.
func parseLog(data []byte) ([]LogEntry, error) {
	var entries []LogEntry
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		var raw struct {
			Old     *Hash   `json:"old"`
			New     *Hash   `json:"new"`
			Time    *int64  `json:"time"`
			Message *string `json:"message"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrInvalid, i+1, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("%w: line %d: more than one JSON value", ErrInvalid, i+1)
		}
		if raw.Old == nil || raw.New == nil || raw.Time == nil || raw.Message == nil {
			return nil, fmt.Errorf("%w: line %d: want the fields old, new, time and message", ErrInvalid, i+1)
		}
		entries = append(entries, LogEntry{Old: *raw.Old, New: *raw.New, Time: *raw.Time, Message: *raw.Message})
	}
	return entries, nil
}
