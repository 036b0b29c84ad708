package cas

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Ref is a named pointer into the store, as [Refs.List] lists it.
type Ref struct {
	Name string `json:"name"` // as `uwf cas ref list --json` and the HTTP API print it
	Hash Hash   `json:"hash"`
}

// LogEntry is one change of a ref, as its log records it. A zero Old means
// the change created the ref; a zero New means it deleted it.
type LogEntry struct {
	Old     Hash   `json:"old"`
	New     Hash   `json:"new"`
	Time    int64  `json:"time"` // Unix milliseconds, UTC, by the store's clock
	Message string `json:"message"`
}

// Refs is the small mutable index of named refs: thread heads, registered
// workflows, schemas. Every successful change appends an entry to the ref's
// log. Implementations are safe for concurrent use, by goroutines and (for
// persistent backends) by processes.
type Refs interface {
	// Get returns the hash a ref points at. The error wraps [ErrNotFound]
	// if the ref does not exist, [ErrInvalidRefName] for a bad name, and
	// is a *[BadRefError] if its stored form cannot be read.
	Get(ctx context.Context, name string) (Hash, error)
	// List lists the refs whose names start with prefix ("" for all),
	// sorted by name. A ref whose stored form cannot be read is yielded as
	// a *[BadRefError] (with a zero Ref) in its place, and the listing goes
	// on if the caller continues; any other error ends the listing. A
	// damaged ref with a damaged name may be listed under a prefix it does
	// not match.
	List(ctx context.Context, prefix string) iter.Seq2[Ref, error]
	// CompareAndSwap moves ref name from old to new and appends
	// {old, new, now, message} to its log, atomically. A zero old means the
	// ref must not exist; a zero new deletes it. If the ref does not hold
	// old, or its name clashes with an existing ref, the error is a
	// *[ConflictError] carrying the current value, and nothing changes.
	// When old equals new and the ref holds it, nothing changes and nothing
	// is logged. A bad name wraps [ErrInvalidRefName]; a ref whose stored
	// form cannot be read fails with its *[BadRefError] ([Refs.Replace]
	// repairs it). Backends do not check that new is present in a store:
	// [Repo.Refs] does.
	CompareAndSwap(ctx context.Context, name string, old, new Hash, message string) error
	// Replace sets ref name to new, or deletes it if new is zero, whatever
	// it holds now: a value, nothing, or a stored form that cannot be read
	// (a *[BadRefError]). It is the repair of a damaged ref, and of a ref
	// that its log says exists but that does not. It appends {old, new,
	// now, message} to the log, old being the ref's value if it can be
	// read, else the New of its log's newest entry (zero if none), so a
	// repair never reads as the ref's creation (unless the log says the ref
	// was deleted, or has none). It changes and logs nothing when the ref
	// holds new, or when new is zero and neither the ref nor its log's
	// newest entry holds a value (a damaged ref with no logged value is
	// then removed, unlogged). Setting a name that clashes with
	// another live ref fails with a *[ConflictError]; deleting a missing
	// ref whose name another ref took since (differing in case) only logs
	// the deletion, leaving that ref alone. A bad name wraps
	// [ErrInvalidRefName]. Backends do not check that new is present in a
	// store: [Repo.Refs] does.
	Replace(ctx context.Context, name string, new Hash, message string) error
	// Log returns a ref's log, oldest first; a deleted ref keeps its log
	// until PruneLog removes it. The error wraps [ErrNotFound] if there is
	// no log for name.
	Log(ctx context.Context, name string) ([]LogEntry, error)
	// Logs lists the names of every ref that has a log, live or deleted,
	// sorted by name.
	Logs(ctx context.Context) iter.Seq2[string, error]
	// PruneLog drops log entries older than their ref's cutoff, except a
	// live ref's newest entry and its creation entry (the last entry with a
	// zero Old: the one that created the ref's current incarnation, a
	// fork's origin); a deleted ref's log is removed whole once its newest
	// entry is older than the cutoff. A ref's cutoff is the Before of the
	// longest of prefixes its name starts with, else before
	// ([LogCutoff]). The log of a missing ref (its newest entry has a
	// non-zero New, but the ref does not exist) and of a ref that cannot be
	// read is kept whole, whatever its age, until the ref is restored or
	// replaced. It returns how many entries it removed.
	PruneLog(ctx context.Context, before time.Time, prefixes ...PrefixCutoff) (int, error)
	// ImportLog adds entries to name's log as they are (times and messages
	// kept), skipping any entry already present (same old, new, time and
	// message), where [MergeLog] puts them: existing entries keep their
	// order, imported ones go where they link old-to-new, and those that
	// link nowhere go before the ref's current creation entry, so a live
	// ref's newest entry still equals it. If the ref does not exist and the
	// merged log's newest entry has a non-zero New, the ref is created at
	// that value, with no new log entry: this restores an exported ref
	// together with its history. An existing ref is never moved. An empty
	// import changes nothing.
	ImportLog(ctx context.Context, name string, entries []LogEntry) error
}

// PrefixCutoff gives the refs whose names start with Prefix (a plain
// string prefix, as [Refs.List] takes: "runs/") their own [Refs.PruneLog]
// cutoff.
type PrefixCutoff struct {
	Prefix string
	Before time.Time
}

// LogCutoff returns ref name's [Refs.PruneLog] cutoff: the Before of the
// longest prefix in prefixes that name starts with (the first of equal
// ones), else before.
func LogCutoff(name string, before time.Time, prefixes []PrefixCutoff) time.Time {
	best := -1
	for _, p := range prefixes {
		if len(p.Prefix) > best && strings.HasPrefix(name, p.Prefix) {
			best, before = len(p.Prefix), p.Before
		}
	}
	return before
}

// MaxRefNameLen is the longest allowed ref name.
const MaxRefNameLen = 200

// ValidateRefName reports whether name follows the ref-name grammar: 1-200
// characters, '/'-separated segments each matching [A-Za-z0-9][A-Za-z0-9._-]*.
// The error wraps [ErrInvalidRefName] and says what is wrong.
func ValidateRefName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidRefName, name, why)
	}
	if name == "" {
		return bad("empty")
	}
	if len(name) > MaxRefNameLen {
		return bad(fmt.Sprintf("%d characters, at most %d allowed", len(name), MaxRefNameLen))
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" {
			return bad("empty path segment")
		}
		if !isAlnum(seg[0]) {
			return bad(fmt.Sprintf("segment %q must start with a letter or digit", seg))
		}
		for i := 1; i < len(seg); i++ {
			c := seg[i]
			if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
				return bad(fmt.Sprintf("invalid character %q in segment %q", c, seg))
			}
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// RefsClash reports whether two distinct ref names cannot coexist: they differ
// only in case, or one is a folder of the other ("a/b" and "a/b/c", compared
// without regard to case).
func RefsClash(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := strings.ToLower(a), strings.ToLower(b)
	if la == lb {
		return true
	}
	return strings.HasPrefix(lb, la+"/") || strings.HasPrefix(la, lb+"/")
}
