package thread

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/cas"
)

// The step cache: what a step and [Engine.Show] need that would otherwise
// take the whole chain or the whole ref log, kept in the store's droppable
// [cas.Derived] cache and never trusted. Two kinds of entry:
//
//   - "chain/<node>": counts of the chain ending at a step or mark node
//     (its steps, its steps per role, the depth of its newest resumed mark
//     and its steps since then) and the running totals of the agent
//     sessions its runs reported (tokens and cost: see [Usage]). An entry
//     names its node and the node it
//     was derived from (prev, or the start); it is used only when it equals
//     what deriving it again from its predecessor's entry and the node
//     gives, so a missing, torn, foreign or poisoned entry is recomputed
//     (back to the newest pair of entries that agree, or the start).
//     Checking an entry's totals reads its node's detail node (a step's,
//     or a suspension's), the one node besides the entries it takes.
//   - "ref/threads/<id>": where the thread's current incarnation began (its
//     creation log entry: node and fork provenance). It is written when
//     the engine creates the thread, and lazily from the log; [cas.Repo]
//     drops it whenever the ref is created, deleted, replaced or imported.
//     It is used only if its checksum holds, it names the thread, and its
//     node is on the thread's chain at the depth it claims. What no node
//     records (whether the thread was forked, and from which thread) rests
//     on the checksum: damage is caught, a deliberate forgery that
//     recomputes it is not (one who can write the cache can as well
//     rewrite the ref log next to it).

// chainEntry is a "chain/<node>" entry.
type chainEntry struct {
	V           int            `json:"v"`
	Node        cas.Hash       `json:"node"`
	From        cas.Hash       `json:"from"`        // prev, or the start for depth 1
	Depth       int            `json:"depth"`       // the node's depth
	Steps       int            `json:"steps"`       // step nodes from the start to the node, included
	Roles       map[string]int `json:"roles"`       // of those, per role
	ResumeDepth int            `json:"resumeDepth"` // depth of the newest resumed mark; 0 if none
	SinceResume int            `json:"sinceResume"` // steps after it (or the start)
	Usage       Usage          `json:"usage"`       // the sessions its runs reported, summed
	// Composition: the calls from the start to the node, included, and
	// their branches; the newest call or join at or before the node, and
	// the one before that. They link a chain's calls and joins newest
	// first, so its children are listed a page at a time without walking
	// the steps between (see [Engine.Children]).
	Calls    int      `json:"calls,omitempty"`
	Children int      `json:"children,omitempty"`
	LastComp cas.Hash `json:"lastComp,omitempty"`
	PrevComp cas.Hash `json:"prevComp,omitempty"`
}

// chainEntryVersion 2 added Usage, 3 the composition fields: an entry of
// an older version (an older build's) is recomputed.
const chainEntryVersion = 3

// Usage is the running total of the agent sessions reported by the runs
// on a chain (its steps and its suspensions' agent runs, fork ancestry
// included): how many reported one, and the sums of what they reported.
// A run whose agent reported nothing adds nothing; failed runs, which
// leave no chain node, are not counted. Sums stop at [math.MaxInt64].
type Usage struct {
	Sessions         int64 `json:"sessions"` // runs that reported a session
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
	ReasoningTokens  int64 `json:"reasoningTokens"`
	Turns            int64 `json:"turns"`
	// CostNanoUSD is the cost in billionths of a US dollar: whole units
	// sum exactly, in any order, where float dollars would not.
	CostNanoUSD int64 `json:"costNanoUSD"`
}

// CostUSD returns the total cost in US dollars.
func (u Usage) CostUSD() float64 { return float64(u.CostNanoUSD) / 1e9 }

// Summary renders the totals for people on one line, as
// [Session.Summary] words a session: "3 sessions, 1234 in (1000 cached) /
// 56 out tokens, 7 turns, $0.0123". Sums that are zero are left out.
func (u Usage) Summary() string {
	parts := []string{strconv.FormatInt(u.Sessions, 10) + " sessions"}
	if u.Sessions == 1 {
		parts[0] = "1 session"
	}
	return strings.Join(usageWords(parts, u.InputTokens, u.CacheReadTokens, u.OutputTokens, u.ReasoningTokens, u.Turns, u.CostUSD()), ", ")
}

// add returns u with session s added (nil: u).
func (u Usage) add(s *Session) Usage {
	if s == nil {
		return u
	}
	sum := func(a, b int64) int64 {
		if b > 0 && a > math.MaxInt64-b {
			return math.MaxInt64
		}
		return a + max(b, 0)
	}
	u.Sessions = sum(u.Sessions, 1)
	u.InputTokens = sum(u.InputTokens, s.InputTokens)
	u.OutputTokens = sum(u.OutputTokens, s.OutputTokens)
	u.CacheReadTokens = sum(u.CacheReadTokens, s.CacheReadTokens)
	u.CacheWriteTokens = sum(u.CacheWriteTokens, s.CacheWriteTokens)
	u.ReasoningTokens = sum(u.ReasoningTokens, s.ReasoningTokens)
	u.Turns = sum(u.Turns, s.Turns)
	u.CostNanoUSD = sum(u.CostNanoUSD, nanoUSD(s.CostUSD))
	return u
}

// nanoUSD converts a reported cost to billionths of a dollar, rounded; a
// negative or non-finite cost is 0, one too large for int64 its maximum.
func nanoUSD(c float64) int64 {
	switch {
	case !(c > 0): // NaN too
		return 0
	case c*1e9 >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(math.Round(c * 1e9))
}

func chainKey(h cas.Hash) string { return "chain/" + h.String() }

// startEntry is the (never stored) entry of a start node.
func startEntry(start cas.Hash) *chainEntry {
	return &chainEntry{V: chainEntryVersion, Node: start, Roles: map[string]int{}}
}

// link is what deriving a chain node's entry needs of the node.
type link struct {
	hash, from cas.Hash // the node, and the node it follows: its prev, or its start
	first      bool     // it has no prev: it follows the start
	depth      int
	step       bool
	role       string // a step's
	resumed    bool   // a resumed mark
	detail     cas.Hash
	session    *Session // the detail's, once known
	known      bool     // session is known (nil: the run reported none)
	comp       bool     // a call or a join
	branches   int      // a call's branches; 0 for any other node
}

func linkOf(n *Node) link {
	c := n.Chain()
	l := link{hash: n.Hash, from: c.Prev, depth: c.Depth, first: c.Prev.IsZero()}
	if l.first {
		l.from = c.Start
	}
	switch {
	case n.Step != nil:
		l.step, l.role, l.detail = true, n.Step.Role, n.Step.Detail
	case n.Join != nil:
		l.step, l.role = true, n.Join.Role // a join counts as its role's step
		l.comp = true
	case n.Call != nil:
		l.comp, l.branches = true, len(n.Call.Branches)
	case n.Mark != nil:
		l.resumed, l.detail = n.Mark.Mark == MarkResumed, n.Mark.Detail
	}
	l.known = l.detail.IsZero()
	return l
}

// withSession returns l with its run's session read from its detail node,
// if not yet known. A detail node that is missing, corrupt or not a
// detail counts as no session (the damage is cas fsck's to report; the
// totals then agree with what the store holds); another error (the store
// unreachable, the context done) is returned.
func (e *Engine) withSession(ctx context.Context, l link) (link, error) {
	if l.known {
		return l, nil
	}
	cn, err := e.repo.Get(ctx, l.detail)
	switch {
	case err == nil:
		if d, err := DecodeDetail(cn); err == nil {
			l.session = d.Session
		}
	case !errors.Is(err, cas.ErrNotFound) && !errors.Is(err, cas.ErrCorrupt) && !errors.Is(err, cas.ErrInvalid):
		return l, fmt.Errorf("node %s: detail %s: %w", l.hash, l.detail, err)
	}
	l.known = true
	return l, nil
}

// derive returns the entry of chain node n (its session known) from p,
// the entry of the node it follows.
func derive(p *chainEntry, n link) *chainEntry {
	e := &chainEntry{V: chainEntryVersion, Node: n.hash, From: p.Node, Depth: n.depth, Steps: p.Steps,
		Roles: maps.Clone(p.Roles), ResumeDepth: p.ResumeDepth, SinceResume: p.SinceResume, Usage: p.Usage.add(n.session),
		Calls: p.Calls, Children: p.Children, LastComp: p.LastComp, PrevComp: p.PrevComp}
	if n.comp {
		e.LastComp, e.PrevComp = n.hash, p.LastComp
		if n.branches > 0 {
			e.Calls++
			e.Children += n.branches
		}
	}
	switch {
	case n.step:
		e.Steps++
		e.Roles[n.role]++
		e.SinceResume++
	case n.resumed:
		e.ResumeDepth, e.SinceResume = e.Depth, 0
	}
	return e
}

// checkpointEntry reports whether a recomputed entry at depth is stored:
// those at depths 0 and 1 modulo 1024 (a pair that can be checked against
// each other), besides the node asked for and its predecessor. A thread
// an older build wrote is thus filled with two entries per 1,024 nodes,
// and a lost entry is recomputed from at most 1,024 nodes back.
func checkpointEntry(depth int) bool { return depth%checkpointEvery <= 1 }

func (a *chainEntry) equal(b *chainEntry) bool {
	return a.V == b.V && a.Node == b.Node && a.From == b.From && a.Depth == b.Depth && a.Steps == b.Steps &&
		a.ResumeDepth == b.ResumeDepth && a.SinceResume == b.SinceResume && maps.Equal(a.Roles, b.Roles) && a.Usage == b.Usage &&
		a.Calls == b.Calls && a.Children == b.Children && a.LastComp == b.LastComp && a.PrevComp == b.PrevComp
}

// loadEntry reads the stored entry of node h at depth; nil if it is
// missing, unreadable, or not an entry of h at that depth.
func (e *Engine) loadEntry(ctx context.Context, h cas.Hash, depth int) *chainEntry {
	data, ok, err := e.repo.GetDerived(ctx, chainKey(h))
	if err != nil {
		e.log.Debug("step cache: read", "node", h, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	var ce chainEntry
	if json.Unmarshal(data, &ce) != nil || ce.V != chainEntryVersion || ce.Node != h || ce.Depth != depth || ce.Roles == nil {
		return nil
	}
	return &ce
}

func (e *Engine) storeEntry(ctx context.Context, ce *chainEntry) {
	data, err := json.Marshal(ce)
	if err == nil {
		err = e.repo.PutDerived(ctx, chainKey(ce.Node), data)
	}
	if err != nil {
		e.log.Debug("step cache: write", "node", ce.Node, "err", err)
	}
}

// entry returns the counts of the chain ending at n, from the cache when
// n's entry agrees with its predecessor's, else recomputed from the newest
// node back whose entry does (or the start), storing what it recomputes.
// For a thread whose entries are in place it reads two entries and n's
// detail node (if any); recomputing reads each node walked back and its
// detail.
func (e *Engine) entry(ctx context.Context, n *Node) (*chainEntry, error) {
	if n.Kind == KindStart {
		return startEntry(n.Hash), nil
	}
	return e.entryOf(ctx, linkOf(n), n)
}

// entryWith is [Engine.entry] of n whose run's session is known: sess
// (nil: none).
func (e *Engine) entryWith(ctx context.Context, n *Node, sess *Session) (*chainEntry, error) {
	if n.Kind == KindStart {
		return startEntry(n.Hash), nil
	}
	l := linkOf(n)
	l.session, l.known = sess, true
	return e.entryOf(ctx, l, n)
}

// entryOf is [Engine.entry] of n (not a start), whose link is cur.
func (e *Engine) entryOf(ctx context.Context, cur link, n *Node) (*chainEntry, error) {
	if ce := e.memoEntry(n.Hash); ce != nil {
		return ce, nil
	}
	// Walk back until a node whose entry derives from its predecessor's.
	var todo []link // newest first, their entries to recompute
	var base *chainEntry
	own := e.loadEntry(ctx, cur.hash, cur.depth)
	// sessionOf fills in a link's session, reading each detail node once.
	read := map[cas.Hash]*Session{}
	sessionOf := func(l link) (link, error) {
		if s, ok := read[l.detail]; ok && !l.known {
			l.session, l.known = s, true
		}
		l, err := e.withSession(ctx, l)
		if err == nil && !l.detail.IsZero() {
			read[l.detail] = l.session
		}
		return l, err
	}
	for base == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cur.first {
			// Its predecessor is the start.
			p := startEntry(cur.from)
			if own != nil && own.From == cur.from {
				var err error
				if cur, err = sessionOf(cur); err != nil {
					return nil, err
				}
				if derive(p, cur).equal(own) {
					base = own
					break
				}
			}
			todo = append(todo, cur)
			base = p
			break
		}
		pe := e.loadEntry(ctx, cur.from, cur.depth-1)
		if own != nil && pe != nil && own.From == cur.from {
			var err error
			if cur, err = sessionOf(cur); err != nil {
				return nil, err
			}
			if derive(pe, cur).equal(own) {
				base = own
				break
			}
		}
		todo = append(todo, cur)
		prev, err := e.node(ctx, cur.from, len(todo) < 16)
		if err != nil {
			return nil, err
		}
		if prev.Kind == KindStart {
			base = startEntry(prev.Hash)
			break
		}
		cur, own = linkOf(prev), pe
	}
	for i, t := range slices.Backward(todo) {
		t, err := sessionOf(t)
		if err != nil {
			return nil, err
		}
		base = derive(base, t)
		if i < 2 || checkpointEntry(t.depth) {
			e.storeEntry(ctx, base)
		}
	}
	e.memo(base)
	return base, nil
}

// memoEntry returns the entry of h this engine derived or checked, if it
// keeps it. Such entries are not read back from the store: they are
// trusted.
func (e *Engine) memoEntry(h cas.Hash) *chainEntry {
	if e.cacheSize <= 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.entries[h]
}

func (e *Engine) memo(ce *chainEntry) {
	if e.cacheSize <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.entries) >= e.cacheSize {
		for k := range e.entries {
			delete(e.entries, k)
			break
		}
	}
	e.entries[ce.Node] = ce
}

// followEntry stores the entry of next, a node just made to follow head,
// whose entry is he (nil: none known, nothing stored); sess is the session
// its run reported (nil: none, or no run).
func (e *Engine) followEntry(ctx context.Context, he *chainEntry, next *Node, sess *Session) {
	for _, d := range e.followData(he, next, sess) {
		if err := e.repo.PutDerived(ctx, d.Key, d.Data); err != nil {
			e.log.Debug("step cache: write", "node", next.Hash, "err", err)
		}
	}
}

// followData is [Engine.followEntry] that returns the entry to store with
// the node (none if he is nil) instead of storing it.
func (e *Engine) followData(he *chainEntry, next *Node, sess *Session) []cas.DerivedEntry {
	if he == nil {
		return nil
	}
	l := linkOf(next)
	l.session, l.known = sess, true
	ne := derive(he, l)
	e.memo(ne)
	data, err := json.Marshal(ne)
	if err != nil {
		e.log.Debug("step cache: encode", "node", ne.Node, "err", err)
		return nil
	}
	return []cas.DerivedEntry{{Key: chainKey(ne.Node), Data: data}}
}

// originEntry is a "ref/threads/<id>" entry.
type originEntry struct {
	V          int      `json:"v"`
	Ref        string   `json:"ref"`
	Node       cas.Hash `json:"node"`
	Depth      int      `json:"depth"`
	Forked     bool     `json:"forked"`
	ForkThread string   `json:"forkThread"`
}

// originFromEntry returns the origin a creation log entry gives.
func originFromEntry(le cas.LogEntry) Origin {
	o := Origin{Node: le.New}
	if rest, ok := strings.CutPrefix(le.Message, "fork from "); ok {
		o.Forked = true
		if t, _, ok := strings.Cut(rest, "@"); ok {
			o.ForkThread = t
		}
	}
	return o
}

// cachedOrigin returns thread id's origin from the cache, if its entry
// names the thread and a node of the depth it claims on the chain ending
// at head (the start is checked in no read; a fork point through the skip
// pointers: O(log distance) reads within 2^11 steps of head).
func (e *Engine) cachedOrigin(ctx context.Context, id string, head *Node) (Origin, bool) {
	data, ok, err := e.repo.GetDerived(ctx, cas.RefDerivedKey(refName(id)))
	if err != nil || !ok {
		return Origin{}, false
	}
	sum, body, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || string(sum) != checksum(body) {
		return Origin{}, false
	}
	var oe originEntry
	if json.Unmarshal(body, &oe) != nil || oe.V != 1 || oe.Ref != refName(id) || oe.Node.IsZero() ||
		oe.Depth < 0 || oe.Depth > head.Depth() || (!oe.Forked && oe.ForkThread != "") {
		return Origin{}, false
	}
	switch {
	case oe.Node == head.Hash:
		if oe.Depth != head.Depth() {
			return Origin{}, false
		}
	case oe.Depth == 0:
		if oe.Node != head.StartHash() {
			return Origin{}, false
		}
	default:
		anc, err := e.Ancestor(ctx, head.Hash, oe.Depth)
		if err != nil || anc.Hash != oe.Node {
			return Origin{}, false
		}
	}
	return Origin{Node: oe.Node, Depth: oe.Depth, Forked: oe.Forked, ForkThread: oe.ForkThread}, true
}

// storeOrigin caches thread id's origin.
func (e *Engine) storeOrigin(ctx context.Context, id string, o Origin) {
	body, err := json.Marshal(originEntry{V: 1, Ref: refName(id), Node: o.Node, Depth: o.Depth, Forked: o.Forked, ForkThread: o.ForkThread})
	if err == nil {
		data := append([]byte(checksum(body)+"\n"), body...)
		err = e.repo.PutDerived(ctx, cas.RefDerivedKey(refName(id)), data)
	}
	if err != nil {
		e.log.Debug("step cache: write origin", "thread", id, "err", err)
	}
}

// checksum is the hex SHA-256 that heads a ref entry: damage to what no
// node can confirm (whether the thread was forked, and from which thread)
// shows as a mismatch.
func checksum(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}
