package disk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// Refs is the refs index of a [Store], with each ref's log; it implements
// [cas.Refs]. A ref is the file refs/<lower-cased name> holding
// "<HASH> <Name>\n", so two names that differ only in case share one path
// and a name that is a folder of another shows as a file-versus-folder
// clash, on any filesystem. Refs is safe for concurrent use by goroutines
// and by processes sharing the store.
type Refs struct {
	s          *Store
	refDir     string // <dir>/refs
	logDir     string // <dir>/logs
	lockDir    string // <dir>/locks
	globalLock string // <dir>/locks/refs
}

var _ cas.Refs = (*Refs)(nil)

// logSuffix ends every log file name. It holds '@', which ref names cannot,
// so no log file can stand where a folder of other logs must be: with a
// plain ".jsonl" suffix, the log of "x" (logs/x.jsonl) would block the logs
// of "x.jsonl/y", a ref that may coexist with "x".
const logSuffix = "@.jsonl"

// refStripes is the number of per-ref lock files; a ref's is chosen by a
// hash of its lower-cased name.
const refStripes = 256

func newRefs(s *Store) *Refs {
	lockDir := filepath.Join(s.dir, locksDir)
	return &Refs{
		s:          s,
		refDir:     filepath.Join(s.dir, refsDir),
		logDir:     filepath.Join(s.dir, logsDir),
		lockDir:    lockDir,
		globalLock: filepath.Join(lockDir, "refs"),
	}
}

func (r *Refs) refPath(lower string) string { return r.refDir + "/" + lower }
func (r *Refs) logPath(lower string) string { return r.logDir + "/" + lower + logSuffix }

// stripePath returns the lock file of a ref: locks/ref-XX, XX the low byte
// of FNV-1a of its lower-cased name, in hex.
func (r *Refs) stripePath(lower string) string {
	h := uint32(2166136261)
	for i := 0; i < len(lower); i++ {
		h ^= uint32(lower[i])
		h *= 16777619
	}
	const hex = "0123456789abcdef"
	b := h % refStripes
	return r.lockDir + "/ref-" + string([]byte{hex[b>>4], hex[b&15]})
}

// refState is what refs/<lower> holds.
type refState struct {
	exists bool     // a ref file
	isDir  bool     // a folder (of other refs, or left empty by a crash)
	name   string   // the ref's case-preserved name
	hash   cas.Hash // its value
}

// value returns the value of the ref named exactly name (zero if it does not
// exist).
func (c refState) value(name string) cas.Hash {
	if c.exists && c.name == name {
		return c.hash
	}
	return 0
}

// read reads refs/<lower>. A file that cannot be read or parsed is a
// *[cas.BadRefError].
func (r *Refs) read(lower string) (refState, error) {
	path := r.refPath(lower)
	b, err := readFile(path)
	switch {
	case err == nil:
		name, h, err := parseRef(b, lower)
		if err != nil {
			return refState{}, r.badRef(lower, path, err)
		}
		return refState{exists: true, name: name, hash: h}, nil
	case errors.Is(err, syscall.EISDIR):
		return refState{isDir: true}, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return refState{}, nil
	}
	return refState{}, r.badRef(lower, path, err)
}

// badRef describes the damaged ref file refs/<lower>: its name is the one
// the newest line of its log holds, else lower.
func (r *Refs) badRef(lower, path string, err error) *cas.BadRefError {
	name := lower
	if lines, _, lerr := r.readLog(lower, refState{}); lerr == nil && len(lines) > 0 {
		name = lines[len(lines)-1].Name
	}
	return &cas.BadRefError{Name: name, File: path, Err: err}
}

// maxQuoted is how much of a malformed ref file an error quotes.
const maxQuoted = 64

// parseRef parses a ref file, "<HASH> <Name>\n", found at refs/<lower>.
func parseRef(b []byte, lower string) (string, cas.Hash, error) {
	quoted := b
	if len(quoted) > maxQuoted {
		quoted = quoted[:maxQuoted]
	}
	bad := func(why string) error {
		more := ""
		if len(b) > maxQuoted {
			more = fmt.Sprintf(" (%d bytes in all)", len(b))
		}
		return fmt.Errorf("malformed: %s: %q%s", why, quoted, more)
	}
	if len(b) < cas.HashLen+3 || b[cas.HashLen] != ' ' || b[len(b)-1] != '\n' {
		return "", 0, bad(`want "<hash> <name>\n"`)
	}
	h, err := cas.ParseCanonicalHash(string(b[:cas.HashLen]))
	if err != nil || h.IsZero() {
		return "", 0, bad("not a hash")
	}
	name := string(b[cas.HashLen+1 : len(b)-1])
	if cas.ValidateRefName(name) != nil || strings.ToLower(name) != lower {
		return "", 0, bad("the name does not match the file's path")
	}
	return name, h, nil
}

func refFile(name string, h cas.Hash) []byte {
	b := make([]byte, 0, cas.HashLen+len(name)+2)
	b = h.AppendText(b)
	b = append(b, ' ')
	b = append(b, name...)
	return append(b, '\n')
}

// Get returns the hash ref name points at. The error wraps [cas.ErrNotFound]
// if there is no ref with exactly that name (a name differing only in case
// is another ref) and [cas.ErrInvalidRefName] for a bad name; a ref file
// that cannot be read or parsed is a *[cas.BadRefError]. It reads without
// locking: refs are replaced atomically.
func (r *Refs) Get(ctx context.Context, name string) (cas.Hash, error) {
	if err := r.s.ready(ctx); err != nil {
		return 0, err
	}
	if err := cas.ValidateRefName(name); err != nil {
		return 0, err
	}
	cur, err := r.read(strings.ToLower(name))
	if err != nil {
		return 0, err
	}
	if h := cur.value(name); !h.IsZero() {
		return h, nil
	}
	return 0, fmt.Errorf("ref %s: %w", name, cas.ErrNotFound)
}

// List lists the refs whose names start with prefix ("" for all; the match
// is case-sensitive), sorted by name. When prefix holds a '/', only the
// folder before its last '/' is walked. A ref file that cannot be read or
// parsed is yielded, in its place in name order, as a *[cas.BadRefError]
// named as its log names it (else by its lower-cased path), and the
// listing goes on; such a file is listed when either that name starts
// with prefix or its path does, ignoring case. A failure to walk the refs
// folder yields the error and stops.
func (r *Refs) List(ctx context.Context, prefix string) iter.Seq2[cas.Ref, error] {
	return func(yield func(cas.Ref, error) bool) {
		if err := r.s.ready(ctx); err != nil {
			yield(cas.Ref{}, err)
			return
		}
		root := r.refDir
		if i := strings.LastIndexByte(prefix, '/'); i > 0 {
			if d := strings.ToLower(prefix[:i]); cas.ValidateRefName(d) == nil {
				root = r.refPath(d)
			}
		}
		type item struct {
			ref cas.Ref
			bad *cas.BadRefError
		}
		var items []item
		lowerPrefix := strings.ToLower(prefix)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					return nil // removed meanwhile, or the prefix names a ref
				}
				return err
			}
			if d.IsDir() {
				return ctx.Err()
			}
			lower := filepath.ToSlash(p[len(r.refDir)+1:])
			b, err := readFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			var name string
			var h cas.Hash
			if err == nil {
				name, h, err = parseRef(b, lower)
			}
			if err != nil {
				bad := r.badRef(lower, p, err)
				if strings.HasPrefix(bad.Name, prefix) || strings.HasPrefix(lower, lowerPrefix) {
					items = append(items, item{ref: cas.Ref{Name: bad.Name}, bad: bad})
				}
				return nil
			}
			if strings.HasPrefix(name, prefix) {
				items = append(items, item{ref: cas.Ref{Name: name, Hash: h}})
			}
			return nil
		})
		if err != nil {
			yield(cas.Ref{}, fmt.Errorf("disk: list refs: %w", err))
			return
		}
		slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.ref.Name, b.ref.Name) })
		for _, it := range items {
			var ok bool
			if it.bad != nil {
				ok = yield(cas.Ref{}, it.bad)
			} else {
				ok = yield(it.ref, nil)
			}
			if !ok {
				return
			}
		}
	}
}

// CompareAndSwap moves ref name from old to new and appends
// {old, new, now, message} to its log, as [cas.Refs] specifies: a zero old
// means the ref must not exist, a zero new deletes it; a stale old, or a
// new name that clashes with an existing ref (same name in another case, or
// one a folder of the other), fails with a *[cas.ConflictError] and changes
// nothing; old == new held by the ref is a no-op, not logged.
//
// Creating and deleting take the global refs lock (locks/refs) and then the
// ref's striped lock (locks/ref-XX); other moves take only the striped lock,
// so unrelated refs move in parallel. Under the locks, in this order: (1) the
// ref is read and checked; (2) the log line is appended and the new ref
// file written to a temporary file, and both are made durable at one flush
// point (one syncfs(2), or an fsync of each); (3) the ref file is replaced
// (rename, folder sync) or removed (see commit). A crash between (2) and (3) leaves an uncommitted last log
// entry. When the ref file is there (a move or delete was interrupted),
// [Refs.Log] hides it and the next change of the ref truncates it away;
// when it is not (a create was interrupted, or the file was deleted
// behind uwf's back after its creation: the two look alike), the entry is
// kept and shown, and fsck reports the ref as missing. A ref file that
// cannot be parsed is a *[cas.BadRefError], and nothing changes.
func (r *Refs) CompareAndSwap(ctx context.Context, name string, old, new cas.Hash, message string) error {
	if err := r.s.ready(ctx); err != nil {
		return err
	}
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	lower := strings.ToLower(name)
	unlock, err := r.lockRef(ctx, name, old.IsZero() || new.IsZero())
	if err != nil {
		return err
	}
	var jw *journalWriter
	defer func() { unlock(); jw.wake() }() // the watchers wake once the lock is free

	cur, err := r.read(lower)
	if err != nil {
		return err
	}
	if v := cur.value(name); v != old {
		return &cas.ConflictError{Name: name, Expected: old, Current: v}
	}
	if old == new {
		return nil
	}
	if old.IsZero() {
		clash, err := r.clash(lower, cur)
		if err != nil {
			return err
		}
		if clash != "" {
			return &cas.ConflictError{Name: name, Clash: clash}
		}
	}
	line := logLine{Old: old, New: new, Time: r.s.now().UnixMilli(), Message: message, Name: name}
	jw, err = r.beginJournal(ctx)
	if err != nil {
		return fmt.Errorf("disk: ref %s: %w", name, err)
	}
	defer jw.end()
	act := refWrite
	if new.IsZero() {
		act = refRemove
	}
	if err := r.commit(lower, cur, line, act, jw); err != nil {
		return fmt.Errorf("disk: ref %s: %w", name, err)
	}
	jw.committed = true
	return nil
}

// refAction is what commit does to the ref file once the log line is
// durable.
type refAction int

const (
	refWrite  refAction = iota // replace it with line's new value
	refRemove                  // remove it
	refKeep                    // leave it alone (the log records a change of another name's file)
)

// commit makes the change line records, after the caller's checks, under
// the ref's locks. It is the one place a ref moves, in three phases with
// two flushes:
//
//  1. The pre-move writes, none synced, each noted with the flush point
//     fp: the log line (an intent until the ref moves; appendLog) and,
//     for a new value, the ref file's new content in a temporary file.
//     Any other write that must be durable before the ref moves (a
//     store-wide watch journal's record is one) belongs here too, noted with fp.file
//     (or fp.dir for a folder whose entries it changes), so that the one
//     flush point covers it on every platform.
//  2. The flush point: one syncfs(2) makes all of phase 1 durable (an
//     fsync of each noted file and folder where syncfs is unavailable).
//  3. The move: the temporary file renamed over the ref file (or the ref
//     file removed), then the ref's folder synced.
//
// A crash before phase 3 leaves the ref as it was, with at most an
// uncommitted intent at the end of its log (hidden by Log, truncated by
// the next change) and a temporary file (removed once stale); a crash
// after the rename leaves the ref moved with its log line durable.
func (r *Refs) commit(lower string, cur refState, line logLine, act refAction, jw *journalWriter) error {
	r.s.makeCacheDir()
	fp := r.s.newFlushPoint()
	if err := r.appendLog(lower, cur, line, fp); err != nil {
		return err
	}
	// --- watch journal: the record goes beside the log line and is
	// flushed at the same point, before the ref moves. ---
	if err := jw.write(line); err != nil {
		return err
	}
	fp.file(jw.path)
	// --- end of the watch journal's part. ---
	var tmp string
	if act == refWrite {
		var err error
		tmp, err = atomicfile.WriteTemp(r.s.fs, r.s.tmpDir, refFile(line.Name, line.New), time.Time{}, false)
		if err != nil {
			return err
		}
		fp.file(tmp)
	}
	if err := fp.flush(); err != nil {
		if tmp != "" {
			r.s.fs.Remove(tmp)
		}
		return err
	}
	if err := r.beforeMove(line.Name); err != nil {
		if tmp != "" {
			r.s.fs.Remove(tmp)
		}
		return err
	}
	switch act {
	case refWrite:
		return atomicfile.ReplaceTemp(r.s.fs, tmp, r.refPath(lower), r.s.durable)
	case refRemove:
		return r.removeRef(lower)
	}
	return nil
}

// Replace sets ref name to new, or deletes it if new is zero, whatever
// refs/<lower> holds, as [cas.Refs] specifies: the repair of a ref file
// that cannot be parsed and of a ref its log says exists while its file
// is gone. The logged old value is the ref's if its file parses and holds
// name, else the New of the newest line for name in its log. It takes the
// global refs lock and the ref's striped lock, appends the log line, then
// writes or removes the ref file, as CompareAndSwap does. Setting a value
// when the ref file holds another name (differing in case), or clashes
// with a parent or child ref, is a *[cas.ConflictError]; deleting name
// when the file holds another name only records name as deleted in its
// log (if it records a value), leaving the file alone, so a missing ref
// whose path another ref took since can still be cleared.
func (r *Refs) Replace(ctx context.Context, name string, new cas.Hash, message string) error {
	if err := r.s.ready(ctx); err != nil {
		return err
	}
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	lower := strings.ToLower(name)
	unlock, err := r.lockRef(ctx, name, true)
	if err != nil {
		return err
	}
	var jw *journalWriter
	defer func() { unlock(); jw.wake() }() // the watchers wake once the lock is free

	cur, err := r.read(lower)
	var bad *cas.BadRefError
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	var old cas.Hash
	switch {
	case cur.exists && cur.name == name:
		old = cur.hash
		if old == new {
			return nil
		}
	case cur.exists && !new.IsZero():
		return &cas.ConflictError{Name: name, Clash: cur.name}
	default:
		// The ref file is gone, cannot be read, or holds another name
		// (differing in case, created since name went missing): the old
		// value is the one name's log last records. Deleting name then
		// only records it as deleted: the file is the other ref's.
		lines, _, err := r.readLog(lower, refState{})
		if err != nil {
			return fmt.Errorf("disk: ref %s: %w", name, err)
		}
		for _, l := range lines {
			if l.Name == name {
				old = l.New
			}
		}
		if new.IsZero() && old.IsZero() {
			if cur.exists {
				return nil // name has no value to record; the file is another's
			}
			// Nothing to record: no value before, none after.
			if bad == nil {
				return nil
			}
			if err := r.removeRef(lower); err != nil {
				return fmt.Errorf("disk: ref %s: %w", name, err)
			}
			return nil
		}
	}
	if !new.IsZero() && !cur.exists {
		probe := cur
		if bad != nil {
			probe = refState{} // the damaged file is this ref's: only its parents may clash
		}
		clash, err := r.clash(lower, probe)
		if err != nil {
			return err
		}
		if clash != "" {
			return &cas.ConflictError{Name: name, Clash: clash}
		}
	}
	line := logLine{Old: old, New: new, Time: r.s.now().UnixMilli(), Message: message, Name: name}
	jw, err = r.beginJournal(ctx)
	if err != nil {
		return fmt.Errorf("disk: ref %s: %w", name, err)
	}
	defer jw.end()
	act := refKeep
	switch {
	case !new.IsZero():
		act = refWrite
	case cur.exists && cur.name == name || bad != nil:
		act = refRemove
	}
	if err := r.commit(lower, cur, line, act, jw); err != nil {
		return fmt.Errorf("disk: ref %s: %w", name, err)
	}
	jw.committed = true
	return nil
}

// clash returns the name of an existing ref that a new ref at refs/<lower>
// would clash with, or "": a ref at the same path (differing in case), a ref
// at one of its parent folders, or a ref inside a folder at its path. An
// empty folder there (left by a crash during a delete) is removed. The
// caller holds the global refs lock.
func (r *Refs) clash(lower string, cur refState) (string, error) {
	if cur.exists {
		return cur.name, nil
	}
	for i := 0; i < len(lower); i++ {
		if lower[i] != '/' {
			continue
		}
		up, err := r.read(lower[:i])
		if err != nil {
			return "", err
		}
		if up.exists {
			return up.name, nil
		}
	}
	if !cur.isDir {
		return "", nil
	}
	var found string
	root := r.refPath(lower)
	var empty []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			empty = append(empty, p)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(p[len(r.refDir)+1:])
		found = rel
		if name, _, err := parseRef(b, rel); err == nil {
			found = name
		}
		return filepath.SkipAll
	})
	if err != nil {
		return "", fmt.Errorf("disk: check ref clash: %w", err)
	}
	if found != "" {
		return found, nil
	}
	for _, d := range slices.Backward(empty) {
		if err := r.s.fs.Remove(d); err != nil {
			return "", fmt.Errorf("disk: remove empty ref folder: %w", err)
		}
	}
	return "", nil
}

// removeRef removes refs/<lower>, syncs its folder, then removes the
// parent folders it leaves empty. The caller holds the global refs lock.
func (r *Refs) removeRef(lower string) error {
	path := r.refPath(lower)
	if err := r.s.fs.Remove(path); err != nil {
		return err
	}
	if r.s.durable {
		if err := r.s.fs.SyncDir(filepath.Dir(path)); err != nil {
			return err
		}
	}
	for d := filepath.Dir(lower); d != "." && d != "/"; d = filepath.Dir(d) {
		if r.s.fs.Remove(r.refPath(d)) != nil {
			break // not empty
		}
	}
	return nil
}

// beforeMove calls the test hook between a change's flushed log line and
// its ref's move.
func (r *Refs) beforeMove(name string) error {
	if h := r.s.opts.moveHook; h != nil {
		if err := h(name); err != nil {
			return fmt.Errorf("disk: ref %s: %w", name, err)
		}
	}
	return nil
}

// lockRef takes the exclusive lock of ref name's stripe, first the global
// refs lock too if global is set (a change that creates or deletes a name,
// or rewrites a log: no folder or case clash may appear meanwhile). unlock
// releases both.
func (r *Refs) lockRef(ctx context.Context, name string, global bool) (unlock func(), err error) {
	unlockG := func() {}
	if global {
		if unlockG, err = lockWait(ctx, r.globalLock, lockEx); err != nil {
			return nil, fmt.Errorf("disk: lock refs: %w", err)
		}
	}
	unlockR, err := lockWait(ctx, r.stripePath(strings.ToLower(name)), lockEx)
	if err != nil {
		unlockG()
		return nil, fmt.Errorf("disk: lock ref %s: %w", name, err)
	}
	return func() { unlockR(); unlockG() }, nil
}
