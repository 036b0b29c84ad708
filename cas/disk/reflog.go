package disk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// logLine is one line of a ref log file.
type logLine struct {
	Old     cas.Hash `json:"old"`
	New     cas.Hash `json:"new"`
	Time    int64    `json:"time"` // Unix milliseconds
	Message string   `json:"message"`
	Name    string   `json:"name"`             // the ref's case-preserved name
	Import  bool     `json:"import,omitempty"` // added by ImportLog: never an intent
}

func (l logLine) entry() cas.LogEntry {
	return cas.LogEntry{Old: l.Old, New: l.New, Time: l.Time, Message: l.Message}
}

// isIntent reports whether l, the last complete line of a log, is an
// uncommitted intent: a move or delete appended before a crash kept it
// from being applied to the ref file, which still holds cur, its old
// value. A line of another name than the ref file's (one differing in
// case, whose log shares the file) is never an intent: only changes of
// the ref the file holds are applied to it. With no ref file a last
// line is never an intent: a
// create interrupted by a crash cannot be told from a ref file deleted
// behind uwf's back after its creation, so the line is kept for fsck to
// report and for a restore or a forced change to decide.
func (l logLine) isIntent(cur refState) bool {
	return cur.exists && l.Name == cur.name && l.New != cur.hash && l.Old == cur.hash && !l.Import
}

func appendLine(b []byte, l logLine) []byte {
	j, err := json.Marshal(l)
	if err != nil {
		panic(err) // a struct of strings, numbers and text marshalers
	}
	b = append(b, j...)
	return append(b, '\n')
}

func parseLine(b []byte) (logLine, error) {
	var l logLine
	if err := json.Unmarshal(b, &l); err != nil {
		return l, err
	}
	if err := cas.ValidateRefName(l.Name); err != nil {
		return l, err
	}
	return l, nil
}

// parseLog parses a log file: its complete lines, without a torn last line
// (no final newline) and without a last line that is an uncommitted intent
// against cur, what the ref file holds. dirty reports whether either was
// dropped.
func parseLog(data []byte, cur refState, path string) (lines []logLine, dirty bool, err error) {
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data, dirty = data[:i+1], true
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		l, err := parseLine(data[:i])
		if err != nil {
			return nil, false, fmt.Errorf("disk: ref log %s line %d: %w", path, n, err)
		}
		lines = append(lines, l)
		data = data[i+1:]
	}
	if k := len(lines) - 1; k >= 0 && lines[k].isIntent(cur) {
		lines, dirty = lines[:k], true
	}
	return lines, dirty, nil
}

// encodeLog encodes lines as a log file.
func encodeLog(lines []logLine) []byte {
	var b []byte
	for _, l := range lines {
		b = appendLine(b, l)
	}
	return b
}

// appendLog appends line to logs/<lower>@.jsonl, after truncating a torn
// last line and an uncommitted intent (judged against cur, the ref file's
// value). It does not sync: it notes the file (and, for a new log file, its
// folder) with fp, whose flush makes the line durable. Folders created on
// the way are synced into their parents at once. The caller holds the
// ref's striped lock.
func (r *Refs) appendLog(lower string, cur refState, line logLine, fp *flushPoint) error {
	fsys, sync := r.s.fs, r.s.durable
	path := r.logPath(lower)
	created := false
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	// A new log's folder may be removed between its making and the file's
	// creation by a PruneLog that emptied it (it holds the global refs
	// lock, which a change of an existing ref does not): make it again.
	for try := 0; errors.Is(err, fs.ErrNotExist) && try < 3; try++ {
		if err := atomicfile.MkdirAll(fsys, filepath.Dir(path), sync); err != nil {
			return err
		}
		f, err = fsys.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
		created = true
	}
	if err != nil {
		return err
	}
	if !created {
		err = repairTail(f, cur)
	}
	if err == nil {
		_, err = f.Write(appendLine(nil, line))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fp.file(path)
	if created {
		fp.dir(filepath.Dir(path))
	}
	return nil
}

// repairTail truncates a torn last line, then an uncommitted intent.
func repairTail(f atomicfile.File, cur refState) error {
	size, err := f.Size()
	if err != nil || size == 0 {
		return err
	}
	t, err := readTail(f, size)
	if err != nil {
		return err
	}
	if t.end < size {
		if err := f.Truncate(t.end); err != nil {
			return err
		}
	}
	if t.ok && t.last.isIntent(cur) {
		return f.Truncate(t.start)
	}
	return nil
}

// tail describes the end of a log file.
type tail struct {
	end   int64   // the end of the last complete line (0: none)
	start int64   // where that line starts
	last  logLine // that line, if ok
	ok    bool    // the line parsed
}

// readTail reads backwards from the end of a log file of the given size, in
// growing windows, until it holds the last complete line.
func readTail(f atomicfile.File, size int64) (tail, error) {
	for w := int64(4096); ; w *= 2 {
		off := max(0, size-w)
		buf := make([]byte, size-off)
		if n, err := f.ReadAt(buf, off); err != nil && !(err == io.EOF && n == len(buf)) {
			return tail{}, err
		}
		i := bytes.LastIndexByte(buf, '\n')
		if i < 0 {
			if off == 0 {
				return tail{}, nil
			}
			continue
		}
		j := bytes.LastIndexByte(buf[:i], '\n')
		if j < 0 && off > 0 {
			continue
		}
		l, err := parseLine(buf[j+1 : i])
		return tail{end: off + int64(i) + 1, start: off + int64(j) + 1, last: l, ok: err == nil}, nil
	}
}

// readLog reads and parses the log of lower (see parseLog). A missing file
// is (nil, false, nil).
func (r *Refs) readLog(lower string, cur refState) ([]logLine, bool, error) {
	path := r.logPath(lower)
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("disk: read ref log: %w", err)
	}
	return parseLog(data, cur, path)
}

// Log returns ref name's log, oldest first, as [cas.Refs] specifies: its
// complete, committed entries (a torn last line and an uncommitted intent
// are not returned). The error wraps [cas.ErrNotFound] if there is no log
// for name and [cas.ErrInvalidRefName] for a bad name. It reads under the
// ref's striped lock, shared.
func (r *Refs) Log(ctx context.Context, name string) ([]cas.LogEntry, error) {
	if err := r.s.ready(ctx); err != nil {
		return nil, err
	}
	if err := cas.ValidateRefName(name); err != nil {
		return nil, err
	}
	lower := strings.ToLower(name)
	unlock, err := lockWait(ctx, r.stripePath(lower), lockSh)
	if err != nil {
		return nil, fmt.Errorf("disk: lock ref %s: %w", name, err)
	}
	defer unlock()
	lines, err := r.visibleLog(lower)
	if err != nil {
		return nil, err
	}
	var out []cas.LogEntry
	for _, l := range lines {
		if l.Name == name {
			out = append(out, l.entry())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("log of ref %s: %w", name, cas.ErrNotFound)
	}
	return out, nil
}

// visibleLog reads the committed lines of logs/<lower>@.jsonl; the caller
// holds the ref's striped lock. When the ref file cannot be parsed, every
// complete line is returned (none is taken for an intent).
func (r *Refs) visibleLog(lower string) ([]logLine, error) {
	cur, err := r.read(lower)
	var bad *cas.BadRefError
	if err != nil && !errors.As(err, &bad) {
		return nil, err
	}
	lines, _, err := r.readLog(lower, cur)
	return lines, err
}

// logFiles returns the lower-cased names of every log file, sorted.
func (r *Refs) logFiles(ctx context.Context) ([]string, error) {
	var lowers []string
	err := filepath.WalkDir(r.logDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return ctx.Err()
		}
		rel := filepath.ToSlash(p[len(r.logDir)+1:])
		if lower, ok := strings.CutSuffix(rel, logSuffix); ok && cas.ValidateRefName(lower) == nil {
			lowers = append(lowers, lower)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("disk: list ref logs: %w", err)
	}
	slices.Sort(lowers)
	return lowers, nil
}

// Logs lists the names of every ref that has a log, live or deleted, sorted
// by name. The names come from the log lines themselves (a log file may hold
// the entries of several names differing in case, one after the other); a
// log file that cannot be parsed is listed under its lower-cased name, so
// that [Refs.Log] of it reports what is wrong. A failure to list or lock
// the logs yields the error and stops.
func (r *Refs) Logs(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := r.s.ready(ctx); err != nil {
			yield("", err)
			return
		}
		lowers, err := r.logFiles(ctx)
		if err != nil {
			yield("", err)
			return
		}
		var names []string
		for _, lower := range lowers {
			unlock, err := lockWait(ctx, r.stripePath(lower), lockSh)
			if err != nil {
				yield("", err)
				return
			}
			lines, err := r.visibleLog(lower)
			unlock()
			if err != nil {
				// A log that cannot be read or parsed is listed under its
				// lower-cased name, for Log to report its fault.
				names = append(names, lower)
			}
			for _, l := range lines {
				names = append(names, l.Name)
			}
		}
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			if !yield(n, nil) {
				return
			}
		}
	}
}

// PruneLog drops log entries older than their ref's cutoff
// ([cas.LogCutoff] of before and prefixes, compared in whole milliseconds,
// the precision of log times), except a live ref's newest entry and its
// creation entry (the last entry with a zero Old: the one that created the
// ref's current incarnation); a deleted ref's entries go entirely once its
// newest entry is older than the cutoff. A missing ref's
// entries (its newest entry has a non-zero New, but there is no ref file
// for that name) are all kept, and so is the log of a ref file that cannot
// be parsed. Each changed log is
// rewritten atomically (or removed when empty) under its ref's striped lock;
// a torn last line or an uncommitted intent is dropped on the way. The
// folders of logs/ that removed logs leave empty are then removed, under
// the global refs lock. It
// returns how many entries it removed; logs it could not prune are reported
// in the error (joined) after the others are done.
func (r *Refs) PruneLog(ctx context.Context, before time.Time, prefixes ...cas.PrefixCutoff) (int, error) {
	if err := r.s.ready(ctx); err != nil {
		return 0, err
	}
	lowers, err := r.logFiles(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	// recorded is the journal's prune cutoff: the newest cutoff of a ref
	// whose entries went (a prefix's shorter retention counts only where
	// it pruned something), and never older than before.
	recorded := before.UnixMilli()
	var errs []error
	var emptied []string // logs removed whole, in folders
	for _, lower := range lowers {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		n, cut, err := r.pruneOne(ctx, lower, before, prefixes)
		removed += n
		recorded = max(recorded, cut)
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 && strings.Contains(lower, "/") {
			if _, err := os.Lstat(r.logPath(lower)); errors.Is(err, fs.ErrNotExist) {
				emptied = append(emptied, lower)
			}
		}
	}
	if err := r.removeEmptyLogFolders(ctx, emptied); err != nil {
		errs = append(errs, err)
	}
	if err := r.trimJournal(ctx, recorded, before, prefixes); err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// removeEmptyLogFolders removes the folders of logs/ that the removal of
// the logs of lowers left empty, deepest first, as removing a ref does for
// refs/: without it, every folder a ref name ever had (slots/<workflow>/,
// a key's folders) would stay, empty, for good. It holds the global refs
// lock, which every change that may create a log file in a new folder
// (creating a ref, importing a log) holds too, so none is between making
// a folder and creating its file meanwhile; a folder that is not empty is
// left alone.
func (r *Refs) removeEmptyLogFolders(ctx context.Context, lowers []string) error {
	if len(lowers) == 0 {
		return nil
	}
	unlock, err := lockWait(ctx, r.globalLock, lockEx)
	if err != nil {
		return fmt.Errorf("disk: lock refs: %w", err)
	}
	defer unlock()
	for _, lower := range lowers {
		for d := filepath.Dir(lower); d != "." && d != "/"; d = filepath.Dir(d) {
			if r.s.fs.Remove(filepath.Join(r.logDir, d)) != nil {
				break // not empty (or gone already)
			}
		}
	}
	return nil
}

// pruneOne prunes one log file and returns how many entries it removed
// and the newest cutoff (Unix ms) of the names whose entries went (0 if
// none).
func (r *Refs) pruneOne(ctx context.Context, lower string, before time.Time, prefixes []cas.PrefixCutoff) (int, int64, error) {
	unlock, err := lockWait(ctx, r.stripePath(lower), lockEx)
	if err != nil {
		return 0, 0, fmt.Errorf("disk: lock ref log %s: %w", lower, err)
	}
	defer unlock()
	cur, err := r.read(lower)
	var bad *cas.BadRefError
	if errors.As(err, &bad) {
		return 0, 0, nil // kept whole until the ref is repaired
	}
	if err != nil {
		return 0, 0, err
	}
	lines, dirty, err := r.readLog(lower, cur)
	if err != nil || (lines == nil && !dirty) {
		return 0, 0, err
	}
	newest := map[string]int{}
	creation := map[string]int{}
	for i, l := range lines {
		newest[l.Name] = i
		if l.Old.IsZero() {
			creation[l.Name] = i
		}
	}
	// Times are whole milliseconds: compare at that precision, so an entry
	// logged at the instant before names is not older than it. The lines
	// of one file may be of names that differ in case, and so in prefix.
	cutoffs := map[string]int64{}
	for n := range newest {
		cutoffs[n] = cas.LogCutoff(n, before, prefixes).UnixMilli()
	}
	old := func(l logLine) bool { return l.Time < cutoffs[l.Name] }
	kept := lines[:0:0]
	var cut int64
	for i, l := range lines {
		n := l.Name
		var keep bool
		switch {
		case cur.exists && cur.name == n:
			c, hasCreation := creation[n]
			keep = !old(l) || i == newest[n] || hasCreation && i == c
		case !lines[newest[n]].New.IsZero():
			keep = true // a missing ref: kept until restored or removed by force
		case old(lines[newest[n]]):
			keep = false
		default:
			keep = !old(l)
		}
		if keep {
			kept = append(kept, l)
		} else {
			cut = max(cut, cutoffs[n])
		}
	}
	removed := len(lines) - len(kept)
	if removed == 0 && !dirty {
		return 0, 0, nil
	}
	path := r.logPath(lower)
	if len(kept) == 0 {
		err = r.s.fs.Remove(path)
		if err == nil && r.s.durable {
			err = r.s.fs.SyncDir(filepath.Dir(path))
		}
	} else {
		err = atomicfile.Replace(r.s.fs, r.s.tmpDir, path, encodeLog(kept), r.s.durable)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("disk: prune ref log: %w", err)
	}
	return removed, cut, nil
}

// interleave returns the lines of a log file with name's lines replaced by
// merged, which holds them in their order: every existing line keeps its
// place among the other names' lines (so the file's last line stays what
// it was, or becomes an imported one, never taken for an intent), the
// imported lines go beside their neighbours in merged, and those after
// name's last line go at the end.
func interleave(lines, merged []logLine, name string) []logLine {
	out := make([]logLine, 0, len(lines)+len(merged))
	i := 0
	for _, l := range lines {
		if l.Name != name {
			out = append(out, l)
			continue
		}
		for merged[i] != l { // a new line never equals an existing one
			out = append(out, merged[i])
			i++
		}
		out = append(out, merged[i])
		i++
	}
	return append(out, merged[i:]...)
}

// ImportLog adds entries to name's log as [cas.Refs] specifies: as they are
// (times and messages kept), skipping entries already present, merged by
// [cas.MergeLog]; the lines of names that differ from name only in case
// keep their places (see interleave). If the ref does not exist and the merged log's newest entry has a
// non-zero New, the ref is created at that value with no new entry; a name
// that clashes with an existing ref then fails with a *[cas.ConflictError]
// and nothing changes. An existing ref is never moved. Imported lines are
// marked, so they are never taken for an uncommitted intent. The log is
// rewritten atomically, then the ref created: a crash between leaves the
// log ahead of the ref, and importing again completes it.
func (r *Refs) ImportLog(ctx context.Context, name string, entries []cas.LogEntry) error {
	if err := r.s.ready(ctx); err != nil {
		return err
	}
	if err := cas.ValidateRefName(name); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	lower := strings.ToLower(name)
	unlock, err := r.lockRef(ctx, name, true)
	if err != nil {
		return err
	}
	var jw *journalWriter
	defer func() { unlock(); jw.wake() }() // the watchers wake once the lock is free

	cur, err := r.read(lower)
	if err != nil {
		return err
	}
	lines, dirty, err := r.readLog(lower, cur)
	if err != nil {
		return err
	}
	var mine []logLine
	for _, l := range lines {
		if l.Name == name {
			mine = append(mine, l)
		}
	}
	imported := make([]logLine, len(entries))
	for i, e := range entries {
		imported[i] = logLine{Old: e.Old, New: e.New, Time: e.Time, Message: e.Message, Name: name, Import: true}
	}
	merged := cas.MergeLog(mine, imported, logLine.entry, cur.value(name))
	added := len(merged) - len(mine)
	var newest *logLine
	if len(merged) > 0 {
		newest = &merged[len(merged)-1]
	}
	create := cur.value(name).IsZero() && newest != nil && !newest.New.IsZero()
	if create {
		clash, err := r.clash(lower, cur)
		if err != nil {
			return err
		}
		if clash != "" {
			return &cas.ConflictError{Name: name, Clash: clash}
		}
	}
	if create {
		// The creation is a change watchers see: its journal record,
		// flushed before the log is rewritten and the ref created.
		jw, err = r.beginJournal(ctx)
		if err != nil {
			return fmt.Errorf("disk: import ref %s: %w", name, err)
		}
		defer jw.end()
		rec := *newest
		rec.Import = true
		err = jw.write(rec)
		if err == nil && r.s.durable {
			err = jw.sync()
		}
		if err != nil {
			return fmt.Errorf("disk: import ref %s: %w", name, err)
		}
	}
	if len(merged) > 0 && (added > 0 || dirty) {
		if err := atomicfile.Replace(r.s.fs, r.s.tmpDir, r.logPath(lower), encodeLog(interleave(lines, merged, name)), r.s.durable); err != nil {
			return fmt.Errorf("disk: import ref log %s: %w", name, err)
		}
	}
	if create {
		if err := atomicfile.Replace(r.s.fs, r.s.tmpDir, r.refPath(lower), refFile(name, newest.New), r.s.durable); err != nil {
			return fmt.Errorf("disk: import ref %s: %w", name, err)
		}
	}
	return nil
}
