package disk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
)

// The journal is the store-wide, append-only record of ref changes that
// [Refs.Watch] follows (SPEC §4, "Watching refs"). Ref logs cannot serve:
// their last line is an intent until the ref moves, and PruneLog and
// ImportLog rewrite them, so offsets in them do not last.
//
//	journal/<seg>            a segment: <seg> is its number, 16 decimal
//	                         digits, from 1; only the newest grows
//	journal/pruned           the newest PruneLog cutoff, in Unix ms
//	locks/journal            flock: shared by each change from before its
//	                         journal line until its ref has moved;
//	                         exclusive to start a segment, trim, or read
//	                         the head
//	locks/journal.gate       taken before locks/journal, exclusively by an
//	                         exclusive request while it waits, so that a
//	                         stream of changes cannot starve it
//
// A segment holds records "\n<JSON>\n", the JSON a ref-log line
// ({"old","new","time","message","name"[,"import"]}). Each record is one
// O_APPEND write, so records of concurrent writers never interleave; the
// leading newline ends a record torn by a crash, which readers skip as
// unparseable. A record is written and flushed with the ref's log line,
// under the ref's lock, before the ref moves: a crash can leave a record
// whose change never committed, so a reader delivers a record only once
// the ref's log, read under the ref's lock (so no writer of it is midway),
// shows its entry committed. "import" marks the creation of a ref by
// ImportLog, whose log line may itself be an imported one.
//
// The journal is an additive extra (docs/FORMAT.md): a version-1 binary
// neither writes nor reads it, and deleting the folder loses only the
// history that watchers could still resume from.
const (
	journalDir      = "journal"
	prunedFile      = "pruned"
	journalLockName = "journal"
	journalGateName = "journal.gate"
	// defaultSegmentSize is the size past which the next change starts a
	// new segment; GC removes whole segments.
	defaultSegmentSize = 8 << 20
	segNameLen         = 16
)

func segName(n int64) string {
	s := strconv.FormatInt(n, 10)
	return strings.Repeat("0", max(0, segNameLen-len(s))) + s
}

func parseSegName(s string) (int64, bool) {
	if len(s) != segNameLen {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func (r *Refs) journalPath() string     { return filepath.Join(r.s.dir, journalDir) }
func (r *Refs) segPath(n int64) string  { return filepath.Join(r.s.dir, journalDir, segName(n)) }
func (r *Refs) prunedPath() string      { return filepath.Join(r.s.dir, journalDir, prunedFile) }
func (r *Refs) journalLockPath() string { return filepath.Join(r.lockDir, journalLockName) }
func (r *Refs) journalGatePath() string { return filepath.Join(r.lockDir, journalGateName) }

// journalRecord is the bytes of l's record.
func journalRecord(l logLine) []byte { return appendLine([]byte{'\n'}, l) }

// segmentLimit is the size past which a change starts a new segment. It
// is soft: a change that found the newest segment full a few times over
// (others keep filling new ones) writes to it anyway (beginJournal).
func (r *Refs) segmentLimit() int64 {
	if n := r.s.opts.journalSegment; n > 0 {
		return n
	}
	return defaultSegmentSize
}

// lockJournal takes locks/journal, through locks/journal.gate (see the
// journal's description).
func (r *Refs) lockJournal(ctx context.Context, exclusive bool) (func(), error) {
	unlockGate, err := lockWait(ctx, r.journalGatePath(), exclusive)
	if err != nil {
		return nil, fmt.Errorf("disk: lock the journal: %w", err)
	}
	unlock, err := lockWait(ctx, r.journalLockPath(), exclusive)
	unlockGate()
	if err != nil {
		return nil, fmt.Errorf("disk: lock the journal: %w", err)
	}
	return unlock, nil
}

// segments lists the journal's segment numbers, in order (none if there is
// no journal yet).
func (r *Refs) segments() ([]int64, error) {
	names, err := readDirNames(r.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("disk: list the journal: %w", err)
	}
	var segs []int64
	for _, n := range names {
		if s, ok := parseSegName(n); ok {
			segs = append(segs, s)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// journalWriter is a change's hold on the journal: the shared lock, kept
// until the ref has moved, and the newest segment, open for appending.
type journalWriter struct {
	r      *Refs
	f      atomicfile.File
	seg    int64
	path   string // the segment's, for the flush point that covers the record
	unlock func()

	// The record written, if this Store's watchers are told of it (see
	// ownRecords), and whether the caller saw its change commit.
	told      bool
	line      logLine
	committed bool
}

// beginJournal takes the journal's shared lock and opens its newest
// segment, starting the journal or a new segment first if needed. The
// caller holds the ref's lock, writes its record with write, flushes it
// with sync (with the log line: see appendLog), moves the ref, then calls
// end.
func (r *Refs) beginJournal(ctx context.Context) (*journalWriter, error) {
	for try := range 8 {
		unlock, err := r.lockJournal(ctx, lockSh)
		if err != nil {
			return nil, err
		}
		seg := r.s.jseg.Load()
		known := false // seg+1 is known not to exist
		if seg == 0 {
			seg = r.probeSegments()
			known = seg > 0
		}
		if seg == 0 || !known && r.exists(r.segPath(seg+1)) {
			segs, err := r.segments()
			if err != nil {
				unlock()
				return nil, err
			}
			if len(segs) > 0 {
				seg = segs[len(segs)-1]
				r.s.jseg.Store(seg)
			} else {
				seg = 0
			}
		}
		if seg > 0 {
			r.s.jseg.Store(seg)
			f, err := r.s.fs.OpenFile(r.segPath(seg), os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				size, err := f.Size()
				if err == nil && (size < r.segmentLimit() || try >= 3) {
					return &journalWriter{r: r, f: f, seg: seg, path: r.segPath(seg), unlock: unlock}, nil
				}
				f.Close()
				if err != nil {
					unlock()
					return nil, fmt.Errorf("disk: journal: %w", err)
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				unlock()
				return nil, fmt.Errorf("disk: journal: %w", err)
			}
		}
		unlock()
		if err := r.startSegment(ctx, seg); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("disk: journal: could not open its newest segment (the journal keeps changing)")
}

// probeSegments returns the newest segment of a journal that still holds
// segment 1 and at most 4 segments in all, found by looking for each in
// turn (a process's first change: cheaper than listing journal/); 0 when
// the journal is not such (no journal, trimmed, or longer), for the
// caller to list. The caller holds the journal's lock shared, so no
// segment is started meanwhile.
func (r *Refs) probeSegments() int64 {
	for n := int64(1); n <= 4; n++ {
		if !r.exists(r.segPath(n)) {
			return n - 1
		}
	}
	return 0
}

func (r *Refs) exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// startSegment starts segment after+1, under the journal's exclusive
// lock, unless a newer segment than after exists by then (another writer
// started it) or after is not full.
func (r *Refs) startSegment(ctx context.Context, after int64) error {
	unlock, err := r.lockJournal(ctx, lockEx)
	if err != nil {
		return err
	}
	defer unlock()
	segs, err := r.segments()
	if err != nil {
		return err
	}
	if n := len(segs); n > 0 && segs[n-1] != after {
		return nil // another writer was first
	}
	if after > 0 {
		f, err := r.s.fs.OpenFile(r.segPath(after), os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("disk: journal: %w", err)
		}
		size, err := f.Size()
		f.Close()
		if err != nil {
			return fmt.Errorf("disk: journal: %w", err)
		}
		if size < r.segmentLimit() {
			return nil
		}
	}
	if err := atomicfile.MkdirAll(r.s.fs, r.journalPath(), r.s.durable); err != nil {
		return fmt.Errorf("disk: start the journal: %w", err)
	}
	f, err := r.s.fs.OpenFile(r.segPath(after+1), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("disk: start journal segment %d: %w", after+1, err)
	}
	if err == nil {
		if err := f.Close(); err != nil {
			return fmt.Errorf("disk: start journal segment %d: %w", after+1, err)
		}
	}
	if r.s.durable {
		if err := r.s.fs.SyncDir(r.journalPath()); err != nil {
			return fmt.Errorf("disk: start journal segment %d: %w", after+1, err)
		}
	}
	r.s.jseg.Store(after + 1)
	return nil
}

// write appends l's record.
func (j *journalWriter) write(l logLine) error {
	if !j.told && j.r.s.watch.watching() {
		j.r.s.confirmed.own.midway(j.seg, l)
		j.told, j.line = true, l
	}
	if _, err := j.f.Write(journalRecord(l)); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// sync flushes what write wrote.
func (j *journalWriter) sync() error {
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// end closes the segment and releases the shared lock; the change's ref
// has moved (or failed to).
func (j *journalWriter) end() {
	if j == nil {
		return
	}
	j.f.Close()
	if j.told {
		j.r.s.confirmed.own.end(j.seg, j.line, j.committed)
	}
	j.unlock()
}

// wake wakes this process's watchers after a change wrote its record
// (nothing if j is nil: none was written). It is called once the ref's
// lock is released, not under it: a watcher confirms the record under
// that lock, and woken earlier it would block on the writer it was woken
// by (BenchmarkEvents in serve: see bench/README.md section G).
func (j *journalWriter) wake() {
	if j != nil {
		j.r.s.watch.Broadcast()
	}
}

// jpos is a position in the journal: segment and byte offset (just after
// a record). The zero jpos is the start of the oldest segment.
type jpos struct{ seg, off int64 }

// cursorPrefix starts every disk cursor.
const cursorPrefix = "d."

func (p jpos) cursor() cas.Cursor {
	return cas.Cursor(cursorPrefix + strconv.FormatInt(p.seg, 10) + "." + strconv.FormatInt(p.off, 10))
}

// parseCursor reads a cursor made by cursor; "" is the zero jpos.
func parseCursor(c cas.Cursor) (jpos, error) {
	if c == "" {
		return jpos{}, nil
	}
	bad := func(why string) (jpos, error) {
		return jpos{}, fmt.Errorf("%w %q: %s", cas.ErrInvalidCursor, c, why)
	}
	rest, ok := strings.CutPrefix(string(c), cursorPrefix)
	if !ok {
		return bad("not a disk store's cursor (want d.<segment>.<offset>)")
	}
	a, b, ok := strings.Cut(rest, ".")
	seg, err1 := strconv.ParseInt(a, 10, 64)
	off, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || seg < 1 || off < 0 ||
		strconv.FormatInt(seg, 10) != a || strconv.FormatInt(off, 10) != b {
		return bad("not a disk store's cursor (want d.<segment>.<offset>)")
	}
	return jpos{seg, off}, nil
}

// record is one journal record read back, with the position after it.
type record struct {
	line logLine
	end  jpos
}

// readJournal reads the complete records after p, at most limit bytes of
// them: the records, the position after the last one read, and whether
// records between p and the oldest segment were trimmed (p is then moved
// to the oldest). With check set, a p that cannot be a position in this
// journal is an error wrapping [cas.ErrInvalidCursor].
func (r *Refs) readJournal(p jpos, limit int64, check bool) (recs []record, next jpos, gone bool, err error) {
	segs, err := r.segments()
	if err != nil {
		return nil, p, false, err
	}
	if len(segs) == 0 {
		if p.seg != 0 {
			return nil, p, false, fmt.Errorf("%w %q: this store's journal is empty", cas.ErrInvalidCursor, p.cursor())
		}
		return nil, p, false, nil
	}
	switch i, found := slices.BinarySearch(segs, p.seg); {
	case p.seg == 0:
		p = jpos{segs[0], 0}
	case !found && p.seg > segs[len(segs)-1]:
		return nil, p, false, fmt.Errorf("%w %q: beyond this store's journal (its newest segment is %d)", cas.ErrInvalidCursor, p.cursor(), segs[len(segs)-1])
	case !found:
		p, gone = jpos{segs[i], 0}, true
	}
	for limit > 0 {
		i, _ := slices.BinarySearch(segs, p.seg)
		hasNext := i+1 < len(segs)
		data, eof, err := readFrom(r.segPath(p.seg), p.off, limit)
		if errors.Is(err, fs.ErrNotExist) {
			// Trimmed meanwhile: from the oldest segment left.
			if segs, err = r.segments(); err != nil {
				return recs, p, gone, err
			}
			if len(segs) == 0 || segs[0] <= p.seg {
				return recs, p, gone, nil
			}
			p, gone = jpos{segs[0], 0}, true
			continue
		}
		if err != nil {
			return recs, p, gone, fmt.Errorf("disk: read the journal: %w", err)
		}
		if check {
			check = false
			if data == nil {
				return nil, p, false, fmt.Errorf("%w %q: beyond the end of journal segment %d", cas.ErrInvalidCursor, p.cursor(), p.seg)
			}
			if data[0] != '\n' {
				return nil, p, false, fmt.Errorf("%w %q: not at a record's end in journal segment %d", cas.ErrInvalidCursor, p.cursor(), p.seg)
			}
		}
		if len(data) == 0 {
			return recs, p, gone, nil // p is beyond the end: another store's cursor, caught above
		}
		data = data[1:] // the byte before p.off (a newline), or one added at 0
		end := bytes.LastIndexByte(data, '\n')
		for off := 0; off <= end; {
			k := off + bytes.IndexByte(data[off:], '\n')
			if k > off {
				var l logLine
				if json.Unmarshal(data[off:k], &l) == nil && cas.ValidateRefName(l.Name) == nil {
					recs = append(recs, record{line: l, end: jpos{p.seg, p.off + int64(k) + 1}})
				}
				// An unparseable record was torn by a crash: skipped.
			}
			off = k + 1
		}
		p.off += int64(end + 1)
		limit -= int64(end + 1)
		if !eof {
			return recs, p, gone, nil // enough for one pass
		}
		if !hasNext {
			// At the end of the newest segment (a record may be being
			// written after p). Another writer may have started a segment
			// since segs was read: then this one is final.
			if !r.exists(r.segPath(p.seg + 1)) {
				return recs, p, gone, nil
			}
			if segs, err = r.segments(); err != nil {
				return recs, p, gone, err
			}
			continue // read this one to its end again, then move on
		}
		// A later segment exists, so no writer appends to this one: what
		// follows p, if anything, is a record a crash tore.
		p = jpos{segs[i+1], 0}
	}
	return recs, p, gone, nil
}

// readFrom reads up to limit bytes of the file at path from off-1 (so the
// caller sees whether off follows a newline), or from 0 when off is 0
// (with a newline put first), and reports whether it read to the file's
// end. It returns nil, with no error, when off is beyond the file's end.
func readFrom(path string, off, limit int64) (data []byte, eof bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := fi.Size()
	if off > size {
		return nil, true, nil
	}
	start := max(0, off-1)
	n := min(size-start, limit+1)
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, start)
	switch {
	case err == io.EOF:
		buf, eof = buf[:m], true // shorter than its size said: truncated meanwhile
	case err != nil:
		return nil, false, err
	default:
		eof = start+n == size
	}
	if off == 0 {
		return append([]byte{'\n'}, buf...), eof, nil
	}
	return buf, eof, nil
}

// confirm reports, for each record, whether its change committed: whether
// the ref's log holds its entry. It reads each ref's log once, under the
// ref's striped lock shared, so no change of it is midway; the records of
// one ref are matched from its log's end backwards, so a reader that keeps
// up reads only the log's last lines.
//
// With wait unset it does not wait for a lock another holds (a writer
// midway through the change of a record's ref): it settles the records
// before the first such record and returns their number n, leaving the
// rest (ok beyond n is meaningless). With wait set it settles them all
// (n is len(recs)).
func (r *Refs) confirm(ctx context.Context, recs []record, wait bool) (ok []bool, n int, err error) {
	ok = make([]bool, len(recs))
	byLower := map[string][]int{}
	var order []string
	for i, rc := range recs {
		lower := strings.ToLower(rc.line.Name)
		if _, seen := byLower[lower]; !seen {
			order = append(order, lower)
		}
		byLower[lower] = append(byLower[lower], i)
	}
	// order is by first record, so the refs before a busy one hold every
	// record before its first.
	for _, lower := range order {
		idx := byLower[lower]
		settled, err := r.confirmRef(ctx, lower, recs, idx, ok, wait)
		if err != nil {
			return nil, 0, err
		}
		if !settled {
			return ok, idx[0], nil
		}
	}
	return ok, len(recs), nil
}

// logKey is what ties a journal record to its log line. imp is set for
// the record of a creation by ImportLog, which an imported line confirms
// too; other records are confirmed only by lines their change appended.
type logKey struct {
	name     string
	old, new cas.Hash
	time     int64
	message  string
	imp      bool
}

func keyOf(l logLine) logKey { return logKey{l.Name, l.Old, l.New, l.Time, l.Message, l.Import} }

// confirmRef settles the records idx of ref lower in ok, reporting false
// (and settling nothing) when wait is unset and another holds the ref's
// lock.
func (r *Refs) confirmRef(ctx context.Context, lower string, recs []record, idx []int, ok []bool, wait bool) (bool, error) {
	var unlock func()
	var err error
	if wait {
		unlock, err = lockWait(ctx, r.stripePath(lower), lockSh)
	} else {
		unlock, err = tryLock(r.stripePath(lower), lockSh)
		if unlock == nil && err == nil {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("disk: lock ref %s: %w", lower, err)
	}
	defer unlock()
	r.s.confirmed.locked.Add(int64(len(idx)))
	cur, err := r.read(lower)
	var bad *cas.BadRefError
	if err != nil && !errors.As(err, &bad) {
		return false, err
	}
	// need counts the records of each key; found counts the committed
	// lines met so far, newest first. Imported lines confirm only records
	// of creations by import.
	need := map[logKey]int{}
	for _, i := range idx {
		need[keyOf(recs[i].line)]++
	}
	found := map[logKey]int{}
	missing := len(need)
	// newer holds, by name, the Old of the line after the one at hand.
	newer := map[string]cas.Hash{}
	err = scanLogBackwards(r.logPath(lower), cur, func(l logLine) bool {
		next, hasNext := newer[l.Name]
		newer[l.Name] = l.Old
		if l.Old.IsZero() && !l.Import {
			// A create interrupted by a crash is not an intent (see
			// isIntent): it committed only if the ref file holds it, or
			// the name's next line moves or deletes what it created (a
			// retried create follows it with another zero Old).
			if hasNext && next.IsZero() || !hasNext && cur.value(l.Name) != l.New {
				return true
			}
		}
		k := keyOf(l)
		keys := []logKey{k}
		if !k.imp {
			k.imp = true
			keys = append(keys, k)
		}
		for _, k := range keys {
			if n, wanted := need[k]; wanted && found[k] < n {
				found[k]++
				if found[k] == n {
					missing--
				}
				break
			}
		}
		return missing > 0
	})
	if err != nil {
		return false, err
	}
	// The last found[k] records of each key committed: a record of the
	// same change written before a crash comes before its retry.
	for _, i := range slices.Backward(idx) {
		k := keyOf(recs[i].line)
		if found[k] > 0 {
			found[k]--
			ok[i] = true
		}
	}
	return true, nil
}

// scanLogBackwards calls f with the committed lines of the log at path,
// newest first (without a torn last line or an uncommitted intent against
// cur), until f returns false or the lines run out. It reads the file in
// growing windows from its end.
func scanLogBackwards(path string, cur refState, f func(logLine) bool) error {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("disk: read ref log: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return fmt.Errorf("disk: read ref log: %w", err)
	}
	end := fi.Size() // lines before end are still to be seen
	first := true
	for w := int64(8192); end > 0; w *= 4 {
		off := max(0, end-w)
		buf := make([]byte, end-off)
		if n, err := file.ReadAt(buf, off); err != nil && !(err == io.EOF && n == len(buf)) {
			return fmt.Errorf("disk: read ref log: %w", err)
		}
		if first {
			// Drop a torn last line.
			i := bytes.LastIndexByte(buf, '\n')
			buf = buf[:i+1]
			end = off + int64(i+1)
		}
		// The complete lines in buf: those after its first newline, or all
		// of it from the file's start.
		start := 0
		if off > 0 {
			start = bytes.IndexByte(buf, '\n') + 1
			if start == 0 {
				continue // one line longer than the window
			}
		}
		lines := bytes.Split(bytes.TrimSuffix(buf[start:], []byte{'\n'}), []byte{'\n'})
		for i := len(lines) - 1; i >= 0; i-- {
			if len(lines[i]) == 0 {
				continue
			}
			l, err := parseLine(lines[i])
			if err != nil {
				return fmt.Errorf("disk: ref log %s: %w", path, err)
			}
			if first && l.isIntent(cur) {
				first = false
				continue
			}
			first = false
			if !f(l) {
				return nil
			}
		}
		first = false
		end = off + int64(start)
	}
	return nil
}

// journalHead returns the position after the newest record, once every
// change that wrote a record before it has committed or failed (it takes
// the journal's lock exclusively, which each change holds shared until
// its ref has moved).
func (r *Refs) journalHead(ctx context.Context) (jpos, error) {
	segs, err := r.segments()
	if err != nil || len(segs) == 0 {
		return jpos{}, err
	}
	unlock, err := r.lockJournal(ctx, lockEx)
	if err != nil {
		return jpos{}, err
	}
	defer unlock()
	if segs, err = r.segments(); err != nil {
		return jpos{}, err
	}
	seg := segs[len(segs)-1]
	fi, err := os.Stat(r.segPath(seg))
	if err != nil {
		return jpos{}, fmt.Errorf("disk: journal: %w", err)
	}
	size := fi.Size()
	if size > 0 {
		// A torn record at the end (a crash): the head is before it.
		data, _, err := readFrom(r.segPath(seg), max(1, size-64*1024), 64*1024)
		if err != nil {
			return jpos{}, fmt.Errorf("disk: journal: %w", err)
		}
		size -= int64(len(data) - 1 - bytes.LastIndexByte(data, '\n'))
	}
	return jpos{seg, size}, nil
}

// prunedCutoff returns the newest PruneLog cutoff (Unix ms; 0 if none).
func (r *Refs) prunedCutoff() int64 {
	b, err := os.ReadFile(r.prunedPath())
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// trimJournal records cutoff (Unix ms) as the newest prune cutoff, if it
// is newer than the one recorded, and removes the oldest segments whose
// every record is older than its ref's cutoff ([cas.LogCutoff] of before
// and prefixes), never the newest segment. It does nothing when there is
// no journal.
//
// A watch takes a record that its ref's log no longer shows, and that is
// older than the recorded cutoff, for pruned (cas.ErrCursorGone). PruneLog
// records the newest cutoff of the refs whose entries it removed, so that
// a record pruned under a prefix's short retention is never taken for one
// a crash kept from committing, and skipped unsaid.
func (r *Refs) trimJournal(ctx context.Context, cutoff int64, before time.Time, prefixes []cas.PrefixCutoff) error {
	recCutoff := func(name string) int64 { return cas.LogCutoff(name, before, prefixes).UnixMilli() }
	segs, err := r.segments()
	if err != nil || len(segs) == 0 {
		return err
	}
	unlock, err := r.lockJournal(ctx, lockEx)
	if err != nil {
		return err
	}
	defer unlock()
	if cutoff > r.prunedCutoff() {
		if err := atomicfile.Replace(r.s.fs, r.s.tmpDir, r.prunedPath(), []byte(strconv.FormatInt(cutoff, 10)+"\n"), r.s.durable); err != nil {
			return fmt.Errorf("disk: journal: record the prune cutoff: %w", err)
		}
	}
	if segs, err = r.segments(); err != nil {
		return err
	}
	removed := false
	for _, seg := range segs[:len(segs)-1] {
		data, err := os.ReadFile(r.segPath(seg))
		if err != nil {
			return fmt.Errorf("disk: journal: %w", err)
		}
		old := true
		for rec := range bytes.SplitSeq(data, []byte{'\n'}) {
			var l logLine
			if len(rec) > 0 && json.Unmarshal(rec, &l) == nil && l.Time >= recCutoff(l.Name) {
				old = false
				break
			}
		}
		if !old {
			break
		}
		if err := r.s.fs.Remove(r.segPath(seg)); err != nil {
			return fmt.Errorf("disk: journal: trim: %w", err)
		}
		removed = true
	}
	if removed && r.s.durable {
		if err := r.s.fs.SyncDir(r.journalPath()); err != nil {
			return fmt.Errorf("disk: journal: trim: %w", err)
		}
	}
	return nil
}
