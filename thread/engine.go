package thread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/registry"
)

// Ref-name prefixes of threads and of their failure records.
const (
	ThreadPrefix  = "threads/"
	FailurePrefix = "failures/"
)

// ErrInvalidID is wrapped by errors about text that is not a thread ID (a
// ULID). It wraps [cas.ErrInvalidRefName].
var ErrInvalidID = fmt.Errorf("%w: invalid thread id", cas.ErrInvalidRefName)

// ErrNotActive is returned when a thread cannot be stepped: it is done,
// killed or suspended.
var ErrNotActive = errors.New("thread is not active")

// ConflictError reports a commit that lost a race: the thread's head was no
// longer the node the commit follows. It wraps [cas.ErrConflict]; the new
// node stays in the store until GC.
type ConflictError struct {
	Thread   string
	Expected cas.Hash // the head the commit followed
	Current  cas.Hash // the head now (zero: the thread was removed)
}

func (e *ConflictError) Error() string {
	if e.Current.IsZero() {
		return fmt.Sprintf("thread %s: it was removed while committing after %s", e.Thread, e.Expected)
	}
	return fmt.Sprintf("thread %s moved: its head is %s, not %s", e.Thread, e.Current, e.Expected)
}

// Unwrap returns [cas.ErrConflict].
func (e *ConflictError) Unwrap() error { return cas.ErrConflict }

// Options configure an [Engine]; nil means defaults.
type Options struct {
	// Now is the clock of step and mark times; nil means time.Now.
	Now func() time.Time
	// NewID makes thread IDs; nil means ulid.Make.
	NewID func() ulid.ULID
	// Logger receives debug and info events; nil discards them.
	Logger *slog.Logger
	// CacheSize bounds the decoded chain nodes kept in memory; 0 means
	// 4096, a negative value disables the cache.
	CacheSize int
}

// Engine creates, reads, forks and moves threads in a store, and runs their
// steps. It is safe for concurrent use; several engines (in several
// processes) may work on one store: every change of a thread is one
// compare-and-swap of its ref.
type Engine struct {
	repo  *cas.Repo
	refs  cas.Refs
	reg   *registry.Registry
	now   func() time.Time
	newID func() ulid.ULID
	log   *slog.Logger

	mu        sync.Mutex
	cache     map[cas.Hash]*Node
	entries   map[cas.Hash]*chainEntry // step-cache entries this engine derived or checked
	cacheSize int

	// workflows caches loaded workflows by hash (immutable, like nodes):
	// a step would otherwise read the workflow and its roles' nodes again,
	// a round trip each on PostgreSQL.
	wfMu      sync.Mutex
	workflows map[cas.Hash]*loadedWorkflow

	changes changes // the shared watches (changes.go)
}

// New returns an engine over repo.
func New(repo *cas.Repo, opts *Options) *Engine {
	e := &Engine{repo: repo, refs: repo.Refs(), reg: registry.New(repo), now: time.Now, newID: ulid.Make,
		cacheSize: 4096, cache: map[cas.Hash]*Node{}, entries: map[cas.Hash]*chainEntry{}}
	if opts != nil {
		if opts.Now != nil {
			e.now = opts.Now
		}
		if opts.NewID != nil {
			e.newID = opts.NewID
		}
		if opts.CacheSize != 0 {
			e.cacheSize = opts.CacheSize
		}
		if opts.Logger != nil {
			e.log = opts.Logger.With("component", "thread")
		}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e
}

// Repo returns the store the engine works on.
func (e *Engine) Repo() *cas.Repo { return e.repo }

// Registry returns the workflow registry of the engine's store.
func (e *Engine) Registry() *registry.Registry { return e.reg }

// Node reads and decodes a start, step or mark node, through the cache.
func (e *Engine) Node(ctx context.Context, h cas.Hash) (*Node, error) { return e.node(ctx, h, true) }

// node reads a chain node; keep says whether to add it to the cache (long
// iterations do not, so they do not evict the nodes steps need).
func (e *Engine) node(ctx context.Context, h cas.Hash, keep bool) (*Node, error) {
	if e.cacheSize > 0 {
		e.mu.Lock()
		n, ok := e.cache[h]
		e.mu.Unlock()
		if ok {
			return n, nil
		}
	}
	cn, err := e.repo.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	n, err := DecodeNode(h, cn)
	if err != nil {
		return nil, err
	}
	if keep && e.cacheSize > 0 {
		e.mu.Lock()
		if len(e.cache) >= e.cacheSize {
			for k := range e.cache {
				delete(e.cache, k)
				break
			}
		}
		e.cache[h] = n
		e.mu.Unlock()
	}
	return n, nil
}

func (e *Engine) nowMs() int64 { return e.now().UnixMilli() }

// ParseID checks a thread ID: a ULID of 26 Crockford Base32 characters. It
// returns the canonical (upper-case) form; the error wraps [ErrInvalidID].
func ParseID(s string) (string, error) {
	id, err := ulid.ParseStrict(strings.ToUpper(s))
	if err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrInvalidID, s, err)
	}
	return id.String(), nil
}

func refName(id string) string { return ThreadPrefix + id }

// Head returns a thread's head (for a branch thread joined into its
// parent, whose ref the join removed, its final head as its log says).
// The error wraps [ErrInvalidID] for a bad ID
// and [cas.ErrNotFound] for no such thread, saying so when the thread's
// ref is missing though its log says it exists (deleted behind uwf's back).
func (e *Engine) Head(ctx context.Context, id string) (cas.Hash, error) {
	id, err := ParseID(id)
	if err != nil {
		return 0, err
	}
	// Through a read memo, on PostgreSQL, the head node comes with the ref
	// (one round trip): see [cas.Repo.GetRefs].
	var h cas.Hash
	hs, err := e.repo.GetRefs(ctx, []string{refName(id)})
	if err == nil {
		if h = hs[0]; h.IsZero() {
			err = fmt.Errorf("ref %s: %w", refName(id), cas.ErrNotFound)
		}
	}
	if err != nil {
		if errors.Is(err, cas.ErrNotFound) {
			// A ref deleted behind uwf's back: say so, and how to get it back.
			if log, lerr := e.refs.Log(ctx, refName(id)); lerr == nil {
				// A branch joined into its parent: its ref went, the
				// join's edge keeps its final head, which its log names.
				if n := len(log); n > 0 && log[n-1].New.IsZero() && strings.HasPrefix(log[n-1].Message, joinedPrefix) {
					return log[n-1].Old, nil
				}
				if m := cas.MissingRef(refName(id), log); m != nil {
					return 0, fmt.Errorf("thread %s: %w: its ref %s is missing, though its log says it is at %s (restore it from its log: uwf cas ref restore %s)",
						id, cas.ErrNotFound, m.Name, m.Logged, m.Name)
				}
			}
			return 0, fmt.Errorf("thread %s: %w", id, cas.ErrNotFound)
		}
		return 0, err
	}
	return h, nil
}

// Start begins a thread: it stores the start node (identical starts share
// one) and creates the ref threads/<id>, logging "start". It runs nothing.
func (e *Engine) Start(ctx context.Context, workflow cas.Hash, prompt, cwd string) (id string, head cas.Hash, err error) {
	wn, err := e.repo.Get(ctx, workflow)
	if err != nil {
		return "", 0, fmt.Errorf("start: workflow %s: %w", workflow, err)
	}
	if !registry.IsWorkflowType(wn.Type) {
		return "", 0, fmt.Errorf("start: %s: %w: not a workflow node", workflow, cas.ErrInvalid)
	}
	s := &Start{Workflow: workflow, Prompt: prompt, Cwd: cwd}
	head, err = e.repo.Put(ctx, cas.StartSchema, s.Payload())
	if err != nil {
		return "", 0, fmt.Errorf("start: %w", err)
	}
	id = e.newID().String()
	if err := e.refs.CompareAndSwap(ctx, refName(id), 0, head, "start"); err != nil {
		return "", 0, fmt.Errorf("start: %w", err)
	}
	e.storeOrigin(ctx, id, Origin{Node: head})
	return id, head, nil
}

// Commit moves thread id to the step or mark node h, already stored: one
// compare-and-swap of threads/<id> from h's prev (or from its start when
// prev is null), logged with message. A thread that moved meanwhile fails
// with a *[ConflictError] naming its current head, and nothing changes.
func (e *Engine) Commit(ctx context.Context, id string, h cas.Hash, message string) error {
	id, err := ParseID(id)
	if err != nil {
		return err
	}
	n, err := e.Node(ctx, h)
	if err != nil {
		return err
	}
	return e.commit(ctx, id, h, n.Chain(), message)
}

// commit is [Engine.Commit] of the node h, whose chain fields are c (nil
// for a start node), known without reading it.
func (e *Engine) commit(ctx context.Context, id string, h cas.Hash, c *Chain, message string) error {
	if c == nil {
		return fmt.Errorf("commit %s: %w: a start node cannot follow anything", h, cas.ErrInvalid)
	}
	from := c.Prev
	if from.IsZero() {
		from = c.Start
	}
	if l := fenceOf(ctx, id); l != nil {
		// Under a lease: commit only while it is valid by this process's
		// clock, and say whose run it was.
		if err := l.Check(); err != nil {
			return fmt.Errorf("commit to thread %s: %w", id, err)
		}
		message += " (" + l.label() + ")"
	}
	err := e.refs.CompareAndSwap(ctx, refName(id), from, h, message)
	var ce *cas.ConflictError
	if errors.As(err, &ce) {
		return &ConflictError{Thread: id, Expected: from, Current: ce.Current}
	}
	if err != nil {
		return fmt.Errorf("commit to thread %s: %w", id, err)
	}
	return nil
}

// putCommit stores nodes, the last one a step or mark whose chain fields
// are c, and commits it to thread id as [Engine.commit] does: on a store
// with [cas.LinkedSwapper] (PostgreSQL) in one atomic step, one round trip
// and one commit, with entries, the new node's step-cache entry (in the
// same round trip there). Before the nodes are stored it checks the lease,
// if any. stored says whether the nodes were stored (a failed commit
// leaves them, as a put and a failed commit do); a conflict is a
// *[ConflictError].
func (e *Engine) putCommit(ctx context.Context, id string, nodes []cas.Node, c *Chain, message string, entries []cas.DerivedEntry) (hs []cas.Hash, stored bool, err error) {
	from := c.Prev
	if from.IsZero() {
		from = c.Start
	}
	if l := fenceOf(ctx, id); l != nil {
		// Under a lease: commit only while it is valid by this process's
		// clock, and say whose run it was.
		if err := l.Check(); err != nil {
			for _, d := range entries {
				if err := e.repo.PutDerived(ctx, d.Key, d.Data); err != nil {
					e.log.Debug("step cache: write", "key", d.Key, "err", err)
				}
			}
			hs, perr := e.repo.PutNodes(ctx, nodes)
			if perr != nil {
				return nil, false, perr
			}
			return hs, true, fmt.Errorf("commit to thread %s: %w", id, err)
		}
		message += " (" + l.label() + ")"
		// And again right before the move, after the nodes' put where
		// that is a step of its own (it may outlast the lease).
		ctx = cas.WithMoveCheck(ctx, l.Check)
	}
	hs, err = e.repo.PutNodesMove(ctx, nodes, refName(id), from, message, entries...)
	var ce *cas.ConflictError
	switch {
	case hs == nil:
		return nil, false, err
	case errors.As(err, &ce):
		return hs, true, &ConflictError{Thread: id, Expected: from, Current: ce.Current}
	case err != nil:
		return hs, true, fmt.Errorf("commit to thread %s: %w", id, err)
	}
	return hs, true, nil
}

// appendMarkAfter appends a mark to thread id after head; detail is the
// agent run that asked for it (zero if none), sess that run's session (nil
// if none).
func (e *Engine) appendMarkAfter(ctx context.Context, id string, head *Node, kind, reason string, detail cas.Hash, sess *Session) (cas.Hash, error) {
	c, err := e.next(ctx, head)
	if err != nil {
		return 0, err
	}
	m := &Mark{Chain: c, Mark: kind, Reason: reason, At: e.nowMs(), Detail: detail}
	mn := cas.Node{Type: m.schema(), Payload: m.Payload()}
	// The mark, its step-cache entry and its commit in one (see
	// putCommit).
	var entries []cas.DerivedEntry
	if h, err := mn.Hash(); err == nil {
		if he, err := e.entry(ctx, head); err == nil {
			entries = e.followData(he, &Node{Hash: h, Kind: KindMark, Mark: m}, sess)
		}
	}
	hs, stored, err := e.putCommit(ctx, id, []cas.Node{mn}, &m.Chain, "mark "+kind, entries)
	if !stored {
		return 0, fmt.Errorf("mark %s: %w", kind, err)
	}
	if err != nil {
		return 0, err
	}
	return hs[0], nil
}

// headNode reads thread id's head node.
func (e *Engine) headNode(ctx context.Context, id string) (*Node, error) {
	head, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.Node(ctx, head)
}

// Kill appends a killed mark with reason, then drops the thread's run
// record if it has one ([Engine.DropRun]): it leaves the queue, and a
// worker running it loses its lease and ends its agent. Killing a finished
// thread is an error wrapping [ErrNotActive].
func (e *Engine) Kill(ctx context.Context, id, reason string) (cas.Hash, error) {
	hn, err := e.headNode(ctx, id)
	if err != nil {
		return 0, err
	}
	if st := hn.Status(); st == StatusDone || st == StatusKilled {
		return 0, fmt.Errorf("kill thread %s: %w: it is %s", id, ErrNotActive, st)
	}
	if reason == "" {
		reason = "killed by the user"
	}
	h, err := e.appendMarkAfter(ctx, id, hn, MarkKilled, reason, 0, nil)
	if err != nil {
		return 0, err
	}
	// Out of the queue; a lease holder sees its record dropped and ends
	// its run (its agent's process group).
	if _, err := e.DropRun(ctx, id, "killed"); err != nil {
		return h, fmt.Errorf("kill thread %s: killed, but %w", id, err)
	}
	// The branches of a call the thread was in end with it.
	if err := e.killChildren(ctx, id, hn, "parent "+id+" killed: "+reason); err != nil {
		return h, fmt.Errorf("kill thread %s: its branches: %w", id, err)
	}
	return h, nil
}

// Suspend appends a suspended mark with reason, pausing an active thread
// until it is resumed; routing then goes on from its last step, as after
// the step limit. Suspending a thread that is not active is an error
// wrapping [ErrNotActive]. A step running in another process when the
// mark lands fails to commit (the head moved) and is not recorded.
func (e *Engine) Suspend(ctx context.Context, id, reason string) (cas.Hash, error) {
	hn, err := e.headNode(ctx, id)
	if err != nil {
		return 0, err
	}
	if st := hn.Status(); st != StatusActive {
		return 0, fmt.Errorf("suspend thread %s: %w: it is %s", id, ErrNotActive, st)
	}
	if reason == "" {
		reason = "suspended by the user"
	}
	return e.appendMarkAfter(ctx, id, hn, MarkSuspended, reason, 0, nil)
}

// Resume appends a resumed mark whose reason is text (included in the next
// prompt). It runs nothing. Resuming a thread in a call resumes its
// suspended branches too; a thread in a call whose branches failed may be
// resumed without a text (the next step retries them). Resuming an active or done thread is an error
// wrapping [ErrNotActive]... except that resuming an active thread with a
// text is allowed: the text reaches the next step.
func (e *Engine) Resume(ctx context.Context, id, text string) (cas.Hash, error) {
	hn, err := e.headNode(ctx, id)
	if err != nil {
		return 0, err
	}
	switch hn.Status() {
	case StatusDone:
		return 0, fmt.Errorf("resume thread %s: %w: it is done (fork it to go on)", id, ErrNotActive)
	case StatusActive:
		if text == "" {
			// A thread in a call whose branches failed or were cut short
			// may be resumed as it is: the next step retries them.
			if pc, err := e.pendingCall(ctx, hn); err != nil || pc == nil {
				return 0, fmt.Errorf("resume thread %s: %w: it is already active (give -p to add a note for the next step)", id, ErrNotActive)
			}
		}
	case StatusCancelled:
		return 0, fmt.Errorf("resume thread %s: %w: it is a branch its call cancelled (fork it to go on)", id, ErrNotActive)
	}
	h, err := e.appendMarkAfter(ctx, id, hn, MarkResumed, text, 0, nil)
	if err != nil {
		return 0, err
	}
	// Resuming a thread suspended by a branch resumes that branch.
	if err := e.resumeChildren(ctx, id, hn, text); err != nil {
		return h, fmt.Errorf("resume thread %s: its branches: %w", id, err)
	}
	return h, nil
}

// Fork creates a thread whose head is the start, step or mark node from.
// Nothing is copied. The new thread's log says where it came from:
// "fork from <thread>@<hash>" (or "fork from <hash>" when thread is "").
func (e *Engine) Fork(ctx context.Context, from cas.Hash, thread string) (string, error) {
	fn, err := e.Node(ctx, from)
	if err != nil {
		return "", fmt.Errorf("fork from %s: %w", from, err)
	}
	id := e.newID().String()
	msg := "fork from " + from.String()
	if thread != "" {
		msg = "fork from " + thread + "@" + from.String()
	}
	if err := e.refs.CompareAndSwap(ctx, refName(id), 0, from, msg); err != nil {
		return "", fmt.Errorf("fork: %w", err)
	}
	o := originFromEntry(cas.LogEntry{New: from, Message: msg})
	o.Depth = fn.Depth()
	e.storeOrigin(ctx, id, o)
	return id, nil
}

// ForkAt forks thread id at the node of its chain at depth (0: its start).
func (e *Engine) ForkAt(ctx context.Context, id string, depth int) (string, cas.Hash, error) {
	id, err := ParseID(id)
	if err != nil {
		return "", 0, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return "", 0, err
	}
	n, err := e.Ancestor(ctx, head, depth)
	if err != nil {
		return "", 0, err
	}
	nid, err := e.Fork(ctx, n.Hash, id)
	return nid, n.Hash, err
}

// Remove deletes the thread's ref, its run record (runs/<id>: a worker
// running it loses its lease), its failures ref and its start key
// (keys/<key>, if it was started under one: [Engine.StartKeyed]). Their logs keep
// them for the log retention; then GC reclaims what only they reached. A
// thread that keeps moving while Remove tries gives the last
// *[ConflictError]; a thread that does not exist wraps [cas.ErrNotFound]
// (unless a failures ref was left behind, which Remove then deletes).
func (e *Engine) Remove(ctx context.Context, id string) error {
	id, err := ParseID(id)
	if err != nil {
		return err
	}
	threadGone := false
	var lastErr error
	for range 5 {
		head, err := e.refs.Get(ctx, refName(id))
		if errors.Is(err, cas.ErrNotFound) {
			threadGone = true
			break
		}
		if err != nil {
			return err
		}
		// The branches of a call the thread is in go with it.
		if hn, err := e.Node(ctx, head); err == nil {
			if err := e.removeChildren(ctx, id, hn); err != nil {
				return fmt.Errorf("remove thread %s: its branches: %w", id, err)
			}
		}
		lastErr = e.refs.CompareAndSwap(ctx, refName(id), head, 0, "rm")
		if !errors.Is(lastErr, cas.ErrConflict) {
			break
		}
	}
	if lastErr != nil {
		return fmt.Errorf("remove thread %s: %w", id, lastErr)
	}
	// Its start key, if it has one, is free again (also after an rm that
	// stopped before this).
	if err := e.dropKey(ctx, id); err != nil {
		return err
	}
	dropped, err := e.DropRun(ctx, id, "rm")
	if err != nil {
		return fmt.Errorf("remove thread %s: %w", id, err)
	}
	if dropped != nil {
		threadGone = false // there was something to remove
	}
	fh, err := e.refs.Get(ctx, FailurePrefix+id)
	switch {
	case errors.Is(err, cas.ErrNotFound):
		if threadGone {
			return fmt.Errorf("thread %s: %w", id, cas.ErrNotFound)
		}
		return nil
	case err != nil:
		return fmt.Errorf("remove the failures of thread %s: %w", id, err)
	}
	if err := e.refs.CompareAndSwap(ctx, FailurePrefix+id, fh, 0, "rm"); err != nil {
		return fmt.Errorf("remove the failures of thread %s: %w", id, err)
	}
	return nil
}

// Log returns the thread's ref log, oldest first.
func (e *Engine) Log(ctx context.Context, id string) ([]cas.LogEntry, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	entries, err := e.refs.Log(ctx, refName(id))
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", id, err)
	}
	return entries, nil
}

// Origin is where a thread began: a start of its own, or a fork.
type Origin struct {
	Node       cas.Hash // the first head
	Depth      int      // its depth: 0 unless forked from a step or mark
	ForkThread string   // the thread forked from, if known
	Forked     bool
}

// Origin returns where thread id's current incarnation began: a start of
// its own, or a fork (and from which thread). Once the step cache holds
// the thread's entry (written by Start and Fork, or by the first Show of a
// thread an older build wrote) it reads the head, its start and at most
// O(log distance) chain nodes to check the entry, and no ref log.
func (e *Engine) Origin(ctx context.Context, id string) (Origin, error) {
	id, err := ParseID(id)
	if err != nil {
		return Origin{}, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return Origin{}, err
	}
	hn, err := e.Node(ctx, head)
	if err != nil {
		return Origin{}, fmt.Errorf("thread %s: head: %w", id, err)
	}
	return e.origin(ctx, id, hn)
}

// origin returns where the thread's current incarnation began: its
// creation entry, the last log entry with a zero old value (PruneLog keeps
// it). It comes from the step cache when the entry there holds (see
// cachedOrigin: head is the thread's head), else from the whole log (then
// cached).
func (e *Engine) origin(ctx context.Context, id string, head *Node) (Origin, error) {
	if o, ok := e.cachedOrigin(ctx, id, head); ok {
		return o, nil
	}
	entries, err := e.refs.Log(ctx, refName(id))
	if err != nil {
		return Origin{}, fmt.Errorf("thread %s: %w", id, err)
	}
	for _, le := range slices.Backward(entries) {
		if !le.Old.IsZero() || le.New.IsZero() {
			continue
		}
		o := originFromEntry(le)
		n, err := e.Node(ctx, le.New)
		if err != nil {
			return Origin{}, err
		}
		o.Depth = n.Depth()
		e.storeOrigin(ctx, id, o)
		return o, nil
	}
	return Origin{}, fmt.Errorf("thread %s: %w: its log has no creation entry", id, cas.ErrNotFound)
}

// Info describes a thread, as [Engine.Show] reads it.
type Info struct {
	ID           string
	Head         cas.Hash
	Status       string
	Depth        int
	Workflow     cas.Hash
	WorkflowName string
	Prompt       string
	Created      time.Time // from the ULID
	Updated      time.Time // when the head was written: a step's completion, a mark's time; Created for a start
	Origin       Origin
	LastFailure  *Failure // nil if none, or a failure of a call the thread has joined since
	FailureHash  cas.Hash
	// Parent is set for a branch thread: the call it runs under.
	Parent *Parent
	// Branches are the branches of the call the thread is in, if it is in
	// one (set by [Engine.Show] and [Engine.List]).
	Branches []ChildInfo
	// Run is the thread's run record (runs/<id>), nil if it has none: its
	// run is then [RunNone]. [RunState] gives the word shown.
	Run *Run
	// Set by [Engine.Show] only:
	// ChildCount counts the branches of every call on the chain; Children
	// are the newest [ShowChildren] of them (see [Engine.Children]).
	ChildCount     int
	Children       []ChildInfo
	Steps          int         // step nodes on the chain, fork ancestry included
	Usage          Usage       // the sessions the chain's runs reported, summed
	LastRun        *SessionRun // the last run's session; nil if it reported none
	FailureSession *Session    // the last failure's run's session; nil if none
	// Err, set only by [Engine.List], says why the thread could not be
	// read: its head or start is a node of a kind this build does not
	// know (the error wraps [cas.ErrInvalid]); the other fields but ID and
	// Head are then zero.
	Err error
}

// SessionRun is the session of a run on a thread's chain, in [Info].
type SessionRun struct {
	Node    cas.Hash // the step, or the suspension mark
	Depth   int
	Session *Session
}

// Show reads a thread's status, workflow, depth, head, provenance and last
// failure, its last run's session and the totals of its runs' sessions.
// The totals come from the step cache (see [Engine.entry]): a few reads at
// any depth once the cache holds the thread's entries.
func (e *Engine) Show(ctx context.Context, id string) (*Info, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	// Show reads its refs in one read and what they lead to in a few
	// batches (on PostgreSQL a round trip each: see prefetchShow), through
	// a read memo.
	ctx = cas.WithReadMemo(ctx)
	refs, err := e.repo.GetRefs(ctx, []string{refName(id), runRef(id), FailurePrefix + id})
	if err != nil {
		return nil, err
	}
	head, runHash, fh := refs[0], refs[1], refs[2]
	if head.IsZero() {
		// No ref: a branch joined into its parent, or a thread that is
		// not there (Head says which).
		if head, err = e.Head(ctx, id); err != nil {
			return nil, err
		}
	}
	e.prefetchShow(ctx, id, head, fh)
	info, err := e.info(ctx, id, head)
	if err != nil {
		return nil, err
	}
	hn, err := e.Node(ctx, head)
	if err != nil {
		return nil, err
	}
	if info.Origin, err = e.origin(ctx, id, hn); err != nil {
		return nil, err
	}
	if !runHash.IsZero() {
		if info.Run, err = e.ReadRun(ctx, runHash); err != nil {
			return nil, err
		}
	}
	if !fh.IsZero() {
		fn, err := e.repo.Get(ctx, fh)
		if err != nil {
			return nil, fmt.Errorf("thread %s: last failure: %w", id, err)
		}
		if info.LastFailure, err = DecodeFailure(fn); err != nil {
			return nil, fmt.Errorf("thread %s: last failure %s: %w", id, fh, err)
		}
		// The failure of a call the thread has joined since is settled:
		// not reported (its record is one the join could not remove, or
		// an older build's). A failure whose nodes cannot be read is.
		if joined, err := e.joinedCall(ctx, info.LastFailure, hn); err == nil && joined {
			info.LastFailure = nil
		} else {
			info.FailureHash = fh
			info.FailureSession, _ = e.detailSession(ctx, info.LastFailure.Detail)
		}
	}
	// The last run: the head's (a step, or a suspension's agent run), else,
	// under a mark without one (done, killed, resumed), the step before it.
	last := hn
	if hn.Mark != nil && hn.Mark.Detail.IsZero() && !hn.Mark.Prev.IsZero() {
		if pn, err := e.Node(ctx, hn.Mark.Prev); err == nil && pn.Step != nil {
			last = pn
		}
	}
	var det cas.Hash
	switch {
	case last.Step != nil:
		det = last.Step.Detail
	case last.Mark != nil:
		det = last.Mark.Detail
	}
	s, sure := e.detailSession(ctx, det)
	if s != nil {
		info.LastRun = &SessionRun{Node: last.Hash, Depth: last.Depth(), Session: s}
	}
	// The totals, from the step cache; the head's session, just read, is
	// not read again to check its entry (unless the read failed for
	// another reason than damage).
	var ce *chainEntry
	if last == hn && sure {
		ce, err = e.entryWith(ctx, hn, s)
	} else {
		ce, err = e.entry(ctx, hn)
	}
	if err != nil {
		return nil, fmt.Errorf("thread %s: totals: %w", id, err)
	}
	info.Steps, info.Usage = ce.Steps, ce.Usage
	if ce.Children > 0 {
		page, err := e.children(ctx, id, hn, ChildrenOptions{Limit: ShowChildren})
		if err != nil {
			return nil, err
		}
		info.ChildCount, info.Children = page.Total, page.Children
	}
	return info, nil
}

// prefetchShow fetches into ctx's read memo, in two batches of one round
// trip each on a store with batch reads (PostgreSQL), what [Engine.Show]
// reads after the refs (the head node, and the failure node fh, came with
// them): the start node, the details of the head and of the last failure,
// the mark's previous node, the step cache's entries of the head and its
// predecessor and the thread's origin entry; then the workflow and the
// details of a mark's previous step (neither, for a workflow the engine
// keeps loaded and a head that is no mark: no second batch). A read that
// fails is left to Show to report; it does nothing on other stores.
func (e *Engine) prefetchShow(ctx context.Context, id string, head, fh cas.Hash) {
	if !e.repo.CanPrefetch(ctx) {
		return
	}
	hn, err := e.Node(ctx, head)
	if err != nil {
		return
	}
	var hs []cas.Hash
	var keys []string
	if fh != 0 {
		if fn, err := e.repo.Get(ctx, fh); err == nil {
			if f, err := DecodeFailure(fn); err == nil {
				hs = append(hs, f.Detail)
			}
		}
	}
	if c := hn.Chain(); c != nil {
		from := c.Prev
		if from.IsZero() {
			from = c.Start
		}
		hs = append(hs, c.Start, c.Prev)
		keys = append(keys, chainKey(head), chainKey(from), cas.RefDerivedKey(refName(id)))
	}
	switch {
	case hn.Step != nil:
		hs = append(hs, hn.Step.Detail)
	case hn.Mark != nil:
		hs = append(hs, hn.Mark.Detail)
	}
	e.repo.PrefetchWith(ctx, hs, keys)
	hs = nil
	if sn, err := e.Node(ctx, hn.StartHash()); err == nil && sn.Start != nil && e.cachedWorkflow(sn.Start.Workflow) == nil {
		hs = append(hs, sn.Start.Workflow)
	}
	if c := hn.Chain(); c != nil && hn.Mark != nil && !c.Prev.IsZero() {
		if pn, err := e.Node(ctx, c.Prev); err == nil && pn.Step != nil {
			hs = append(hs, pn.Step.Detail)
		}
	}
	e.repo.Prefetch(ctx, hs)
}

// ShowChildren is how many children [Engine.Show] lists, newest first.
const ShowChildren = 10

// detailSession returns the session the detail node at h records; nil if
// none: no detail, a detail without a session, or one that cannot be read
// (Show then shows the rest). sure is false when the read failed for
// another reason than a missing or damaged node (the store unreachable).
func (e *Engine) detailSession(ctx context.Context, h cas.Hash) (s *Session, sure bool) {
	if h.IsZero() {
		return nil, true
	}
	n, err := e.repo.Get(ctx, h)
	if err != nil {
		return nil, errors.Is(err, cas.ErrNotFound) || errors.Is(err, cas.ErrCorrupt) || errors.Is(err, cas.ErrInvalid)
	}
	d, err := DecodeDetail(n)
	if err != nil {
		return nil, true
	}
	return d.Session, true
}

// info reads what List shows of a thread: head, status, depth, workflow.
func (e *Engine) info(ctx context.Context, id string, head cas.Hash) (*Info, error) {
	hn, err := e.Node(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("thread %s: head: %w", id, err)
	}
	sn := hn
	if hn.Kind != KindStart {
		if sn, err = e.Node(ctx, hn.StartHash()); err != nil {
			return nil, fmt.Errorf("thread %s: start: %w", id, err)
		}
	}
	info := &Info{ID: id, Head: head, Status: hn.Status(), Depth: hn.Depth(), Workflow: sn.Start.Workflow, Prompt: sn.Start.Prompt}
	if sn.Start.IsChild() {
		// A branch thread, unless its log says it was forked from one (a
		// fork of a branch shares its start, and is a thread of its own).
		if p := e.parentThread(ctx, id); p != "" {
			info.Parent = &Parent{Thread: p, Call: sn.Start.Call, Key: sn.Start.Key}
		}
	}
	// A thread in a call (its head the call, or a suspension or resume
	// after it) lists the call's branches: List shows them under it.
	if hn.Kind == KindCall || (hn.Mark != nil && (hn.Mark.Mark == MarkSuspended || hn.Mark.Mark == MarkResumed) && !hn.Chain().Prev.IsZero()) {
		if info.Branches, err = e.branches(ctx, id, hn); err != nil {
			return nil, err
		}
	}
	if u, err := ulid.ParseStrict(id); err == nil {
		info.Created = ulid.Time(u.Time()).UTC()
	}
	switch {
	case hn.Step != nil:
		info.Updated = time.UnixMilli(hn.Step.CompletedAt).UTC()
	case hn.Mark != nil:
		info.Updated = time.UnixMilli(hn.Mark.At).UTC()
	default:
		info.Updated = info.Created
	}
	info.WorkflowName = e.workflowName(ctx, sn.Start.Workflow)
	return info, nil
}

// branchSkipper tells, for the threads List's Offset skips, whether each
// is a branch thread (left out, so not counted), reading only what that
// takes: its head node and its start node, prefetched a batch of refs at
// a time (one statement per batch on PostgreSQL), and the creation log of
// a thread whose start names a call (a branch, or a fork of one). A
// thread that cannot be read counts as no branch: it is skipped as it
// would have been listed.
type branchSkipper struct {
	memo    context.Context // a read memo for the batch being looked at
	batchTo int             // refs before this index are prefetched
}

// skipBatch is how many refs branchSkipper prefetches at once.
const skipBatch = 256

func (b *branchSkipper) branch(ctx context.Context, e *Engine, refs []cas.Ref, i int) bool {
	if i >= b.batchTo || b.memo == nil {
		b.memo = cas.WithReadMemo(ctx) // a new memo per batch: the read nodes go with it
		b.batchTo = min(i+skipBatch, len(refs))
		if e.repo.CanPrefetch(b.memo) {
			heads := make([]cas.Hash, 0, b.batchTo-i)
			for _, r := range refs[i:b.batchTo] {
				heads = append(heads, r.Hash)
			}
			e.repo.Prefetch(b.memo, heads)
			starts := make([]cas.Hash, 0, len(heads))
			for _, h := range heads {
				if n, err := e.node(b.memo, h, false); err == nil && n.Kind != KindStart {
					starts = append(starts, n.StartHash())
				}
			}
			e.repo.Prefetch(b.memo, starts)
		}
	}
	hn, err := e.node(b.memo, refs[i].Hash, false)
	if err != nil {
		return false
	}
	sn := hn
	if hn.Kind != KindStart {
		if sn, err = e.node(b.memo, hn.StartHash(), false); err != nil {
			return false
		}
	}
	if sn.Start == nil || !sn.Start.IsChild() {
		return false
	}
	return e.parentThread(ctx, strings.TrimPrefix(refs[i].Name, ThreadPrefix)) != ""
}

// ListOptions select threads for [Engine.List].
type ListOptions struct {
	// Status keeps only threads with this status (active, done, killed,
	// suspended) or this run (queued, running, retrying, failed, none);
	// "" for all.
	Status string
	// Workflow keeps only threads of this workflow: its name, or the hash
	// of one version; "" for all.
	Workflow string
	// Before keeps only threads whose id sorts before it (older ones): the
	// id of the last thread of a page gives the next page.
	Before string
	// Since keeps only threads created at or after it (the time in their
	// ULID); zero for all. The listing stops at the first older thread,
	// reading none of the older ones.
	Since  time.Time
	Limit  int // at most this many; 0 for all
	Offset int // skip this many (after filtering)
	// Children lists branch threads too (threads a call runs, until their
	// join); without it they are left out, as they show under their
	// parent, and do not count toward Offset: the threads Offset skips
	// are then read as far as telling a branch (its head and start nodes,
	// fetched in batches where the store can; the log of a thread whose
	// start names a call), not as a whole listed thread. Before pages
	// with no such reads.
	Children bool
	// Parent lists only the children of this thread (see
	// [Engine.Children]), newest call first, joined ones too; the other
	// options filter and page them (Before and Since do not apply). Each
	// child listed is read as a listed thread; a filter reads every child.
	Parent string
}

// keeps reports whether info passes o's filters of status (or run) and
// workflow.
func (o *ListOptions) keeps(info *Info) bool {
	if o.Status != "" && info.Status != o.Status && RunState(info.Run) != o.Status {
		return false
	}
	return o.Workflow == "" || info.WorkflowName == o.Workflow || info.Workflow.String() == o.Workflow
}

// List returns threads newest first (by the time in their ULID), filtered
// and paged as opts says. Without a status or workflow filter only the threads on the
// page are read. A thread ref that cannot be read (a *[cas.BadRefError]),
// or a thread whose head or start node is missing, corrupt or cannot be
// read (an I/O or permission error, a lost connection), is damage: it is
// left out and the listing goes on, and List then returns the others
// together with an error joining one error per thread left out. A thread
// whose head or start is a node of a kind this build does not know (the
// error wraps [cas.ErrInvalid]) is not damage: it is listed with only ID,
// Head and Err set, whatever the status filter, and counts toward the
// limit and offset like the others.
func (e *Engine) List(ctx context.Context, opts ListOptions) ([]*Info, error) {
	if opts.Parent != "" {
		return e.listChildren(ctx, opts)
	}
	var refs []cas.Ref
	var left []error
	for r, err := range e.refs.List(ctx, ThreadPrefix) {
		if errors.Is(err, cas.ErrBadRef) {
			left = append(left, err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list threads: %w", err)
		}
		refs = append(refs, r)
	}
	slices.Reverse(refs)
	// The run records, listed once (none in a store that never queued);
	// a listed thread's record is read only if it has one.
	runs := map[string]cas.Hash{}
	for r, err := range e.refs.List(ctx, RunPrefix) {
		if err != nil {
			if errors.Is(err, cas.ErrBadRef) {
				left = append(left, err)
				continue
			}
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs[strings.TrimPrefix(r.Name, RunPrefix)] = r.Hash
	}
	var out []*Info
	skipped := 0
	filtered := opts.Status != "" || opts.Workflow != ""
	skip := branchSkipper{}
	for i, r := range refs {
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
		id := strings.TrimPrefix(r.Name, ThreadPrefix)
		if opts.Before != "" && id >= opts.Before {
			continue
		}
		if u, err := ulid.ParseStrict(id); err == nil && !opts.Since.IsZero() && ulid.Time(u.Time()).Before(opts.Since) {
			break // newest first: every later one is older still
		}
		if !filtered && skipped < opts.Offset {
			if !opts.Children && skip.branch(ctx, e, refs, i) {
				continue // a branch: left out, so not counted
			}
			skipped++
			continue
		}
		info, err := e.info(ctx, id, r.Hash)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if !errors.Is(err, cas.ErrInvalid) {
				// Missing, corrupt or unreadable (EIO, EACCES, a lost
				// connection): damage, left out and reported.
				left = append(left, err)
				continue
			}
			info = &Info{ID: id, Head: r.Hash, Err: err}
		}
		if info.Parent != nil && !opts.Children {
			continue
		}
		if rh, ok := runs[id]; ok && info.Err == nil {
			if info.Run, err = e.ReadRun(ctx, rh); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				left = append(left, fmt.Errorf("thread %s: %w", id, err))
				continue
			}
		}
		if filtered && info.Err == nil {
			if !opts.keeps(info) {
				continue
			}
			if skipped < opts.Offset {
				skipped++
				continue
			}
		}
		out = append(out, info)
	}
	if len(left) > 0 {
		if out == nil {
			out = []*Info{} // not nil: the others were listed
		}
		return out, fmt.Errorf("list threads: %d thread%s left out:\n%w", len(left), map[bool]string{true: "", false: "s"}[len(left) == 1], errors.Join(left...))
	}
	return out, nil
}
