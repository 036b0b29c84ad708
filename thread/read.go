package thread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/moderator"
)

// DefaultQuota is the default character quota of [Engine.Read].
const DefaultQuota = 8000

// ReadOptions configure [Engine.Read].
type ReadOptions struct {
	// Quota is how many characters of entries to keep, newest first; 0
	// means DefaultQuota. The newest entry is always shown, cut to the quota
	// if it alone is larger.
	Quota int
	// Before pages back: show only the entries older than this chain node
	// (the hash the previous page's hint names). Zero: from the head.
	Before cas.Hash
}

// Reading is a thread rendered for people and agents.
type Reading struct {
	Text    string   // the markdown
	Shown   int      // entries shown
	More    bool     // older entries exist that were not shown
	Oldest  cas.Hash // the oldest entry shown: pass it as Before for the previous page
	Reads   int      // nodes read to render it (for tests and curiosity)
	Entries []cas.Hash
}

// Read renders thread id as markdown: a header, then its entries (the start,
// each step with its role, agent, edge prompt, output and the body of its
// raw output, each mark) oldest first, keeping the newest entries that fit
// within the quota, with a hint line for paging back. It reads only the
// nodes it prints plus a few.
func (e *Engine) Read(ctx context.Context, id string, opts ReadOptions) (*Reading, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.ReadChain(ctx, id, head, opts)
}

// ReadChain renders the chain ending at head as [Engine.Read] does; id is
// only used in the header and the hint.
func (e *Engine) ReadChain(ctx context.Context, id string, head cas.Hash, opts ReadOptions) (*Reading, error) {
	quota := opts.Quota
	if quota <= 0 {
		quota = DefaultQuota
	}
	ctx = cas.WithReadMemo(ctx)
	r := &Reading{}
	get := func(h cas.Hash) (cas.Node, error) {
		r.Reads++
		return e.repo.Get(ctx, h)
	}
	hn, err := e.readNode(ctx, head, r)
	if err != nil {
		return nil, err
	}
	sn := hn
	if hn.Kind != KindStart {
		if sn, err = e.readNode(ctx, hn.StartHash(), r); err != nil {
			return nil, err
		}
	}
	status := hn.Status()
	from := hn
	if !opts.Before.IsZero() {
		bn, err := e.readNode(ctx, opts.Before, r)
		if err != nil {
			return nil, fmt.Errorf("read --before %s: %w", opts.Before, err)
		}
		if bn.StartHash() != sn.Hash || bn.Depth() > hn.Depth() {
			return nil, fmt.Errorf("read --before %s: %w: not a node of this thread", opts.Before, cas.ErrInvalid)
		}
		// A fork shares its start: check bn is on this chain (O(log n)).
		if anc, err := e.Ancestor(ctx, hn.Hash, bn.Depth()); err != nil || anc.Hash != bn.Hash {
			return nil, fmt.Errorf("read --before %s: %w: not a node of this thread", opts.Before, cas.ErrInvalid)
		}
		if bn.Kind == KindStart {
			from = nil
		} else if from, err = e.readNode(ctx, prevOf(bn), r); err != nil {
			return nil, err
		}
	}
	var sections []string
	used := 0
	// On a store with batch reads, the entries about to be rendered are
	// fetched a window at a time (8 chain nodes, then 16, 32, ...: at most
	// about as many as rendered are fetched in vain).
	window, fetchedTo := stepWindow, 0
	var fetch *chainFetch
	if from != nil && from.Kind != KindStart {
		fetch = e.newChainFetch(ctx, from)
		fetchedTo = from.Depth() - window + 1
		fetch.fetch(ctx, fetchedTo, nil, nil, nil)
	}
	for n := from; n != nil; {
		s, err := e.renderEntry(ctx, id, hn.Hash, n, get)
		if err != nil {
			return nil, err
		}
		if used+len(s) > quota && len(sections) > 0 {
			r.More = true
			break
		}
		if len(s) > quota {
			s = cutString(s, quota) + "\n[... cut to the quota]\n"
		}
		sections = append(sections, s)
		r.Entries = append(r.Entries, n.Hash)
		used += len(s)
		r.Oldest = n.Hash
		if n.Kind == KindStart {
			break
		}
		if n.Hash == sn.Hash {
			break
		}
		next := prevOf(n)
		if next == sn.Hash {
			n = sn
			continue
		}
		if fetch != nil && n.Depth()-1 < fetchedTo {
			window *= 2
			fetchedTo -= window
			fetch.fetch(ctx, fetchedTo, nil, nil, nil)
		}
		if n, err = e.readNode(ctx, next, r); err != nil {
			return nil, err
		}
	}
	r.Shown = len(sections)
	var b strings.Builder
	name := e.workflowName(ctx, sn.Start.Workflow)
	fmt.Fprintf(&b, "# Thread %s\n\nworkflow: %s · status: %s · depth: %d · head: %s\n", id, name, status, hn.Depth(), hn.Hash)
	if r.More {
		fmt.Fprintf(&b, "\n(older entries not shown: uwf thread read %s --before %s)\n", id, r.Oldest)
	}
	for _, s := range slices.Backward(sections) {
		b.WriteString("\n")
		b.WriteString(s)
	}
	r.Text = b.String()
	slices.Reverse(r.Entries)
	return r, nil
}

func (e *Engine) readNode(ctx context.Context, h cas.Hash, r *Reading) (*Node, error) {
	r.Reads++
	return e.node(ctx, h, false)
}

func prevOf(n *Node) cas.Hash {
	c := n.Chain()
	if c.Prev.IsZero() {
		return c.Start
	}
	return c.Prev
}

func ms(t int64) string { return time.UnixMilli(t).UTC().Format(time.RFC3339) }

// callOwner returns the thread whose branches call cn on thread id's chain
// (ending at head) are, and whether its join is on the chain: the thread that made the join
// (a fork at or after the join shares its source's branches), or id while
// the call is pending (a fork taken before the join starts its own).
func (e *Engine) callOwner(ctx context.Context, id string, h cas.Hash, cn *Node) (string, bool) {
	// The join follows the call, after its marks (suspended, resumed).
	for d := cn.Depth() + 1; ; d++ {
		n, err := e.Ancestor(ctx, h, d)
		if err != nil || n == nil {
			return id, false
		}
		switch {
		case n.Kind == KindJoin && n.Join.Call == cn.Hash:
			return e.joinOwner(ctx, id, d), true
		case n.Kind != KindMark:
			return id, false
		}
	}
}

// renderEntry renders one chain node as a markdown section.
func (e *Engine) renderEntry(ctx context.Context, id string, head cas.Hash, n *Node, get func(cas.Hash) (cas.Node, error)) (string, error) {
	var b strings.Builder
	switch n.Kind {
	case KindStart:
		fmt.Fprintf(&b, "## 0 · start\n\n%s\n", strings.TrimSpace(n.Start.Prompt))
	case KindCall:
		c := n.Call
		fmt.Fprintf(&b, "## %d · %s · call (%s) · %s\n", c.Depth, c.Role, c.Mode, ms(c.At))
		if len(c.Branches) > 0 && strings.TrimSpace(c.Branches[0].Prompt) != "" {
			b.WriteString("\n> " + strings.ReplaceAll(strings.TrimSpace(c.Branches[0].Prompt), "\n", "\n> ") + "\n")
		}
		b.WriteString("\n")
		owner, joined := e.callOwner(ctx, id, head, n)
		for _, br := range c.Branches {
			cid := ChildID(owner, n.Hash, c.At, br.Key)
			fmt.Fprintf(&b, "- branch %s: thread %s", br.Key, cid)
			if !joined {
				if _, err := e.refs.Get(ctx, refName(cid)); errors.Is(err, cas.ErrNotFound) {
					fmt.Fprintf(&b, " (not started: stepping %s starts it)", id)
				}
			}
			b.WriteString("\n")
		}
	case KindJoin:
		if err := e.renderJoin(ctx, id, n, get, &b); err != nil {
			return "", err
		}
	case KindMark:
		m := n.Mark
		fmt.Fprintf(&b, "## %d · %s · %s\n", m.Depth, m.Mark, ms(m.At))
		if m.Reason != "" {
			fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(m.Reason))
		}
	case KindStep:
		s := n.Step
		fmt.Fprintf(&b, "## %d · %s · agent %s · %s\n", s.Depth, s.Role, s.Agent, ms(s.CompletedAt))
		dn, err := get(s.Detail)
		if err != nil {
			return "", fmt.Errorf("step %s: detail: %w", n.Hash, err)
		}
		d, err := DecodeDetail(dn)
		if err != nil {
			return "", fmt.Errorf("step %s: detail %s: %w", n.Hash, s.Detail, err)
		}
		if p := strings.TrimSpace(d.EdgePrompt); p != "" {
			b.WriteString("\n> " + strings.ReplaceAll(p, "\n", "\n> ") + "\n")
		}
		on, err := get(s.Output)
		if err != nil {
			return "", fmt.Errorf("step %s: output: %w", n.Hash, err)
		}
		fmt.Fprintf(&b, "\n%s\n", moderator.Text(on.Payload))
		rn, err := get(d.Raw)
		if err != nil {
			return "", fmt.Errorf("step %s: raw output: %w", n.Hash, err)
		}
		raw, err := DecodeContent(rn)
		if err != nil {
			return "", fmt.Errorf("step %s: raw output %s: %w", n.Hash, d.Raw, err)
		}
		if body := strings.TrimSpace(outputBody(raw)); body != "" {
			fmt.Fprintf(&b, "\n%s\n", body)
		}
	}
	return b.String(), nil
}

// maxBranchLines bounds the lines a join shows of each branch (its newest
// chain nodes).
const maxBranchLines = 12

// renderJoin renders a join: the role's output, then each branch inline
// and collapsed, a line per step of its thread, with how to read it whole.
func (e *Engine) renderJoin(ctx context.Context, id string, n *Node, get func(cas.Hash) (cas.Node, error), b *strings.Builder) error {
	j := n.Join
	cn, err := get(j.Call)
	if err != nil {
		return fmt.Errorf("join %s: call: %w", n.Hash, err)
	}
	call, err := DecodeNode(j.Call, cn)
	if err != nil || call.Call == nil {
		return fmt.Errorf("join %s: call %s: %w", n.Hash, j.Call, cas.ErrInvalid)
	}
	fmt.Fprintf(b, "## %d · %s · join of %d branch(es) (%s) · %s\n", j.Depth, j.Role, len(j.Branches), call.Call.Mode, ms(j.At))
	on, err := get(j.Output)
	if err != nil {
		return fmt.Errorf("join %s: output: %w", n.Hash, err)
	}
	fmt.Fprintf(b, "\n%s\n\n", moderator.Text(on.Payload))
	owner := e.joinOwner(ctx, id, j.Depth) // a fork's inherited join: the source's branches
	for _, br := range j.Branches {
		cid := ChildID(owner, j.Call, call.Call.At, br.Key)
		fmt.Fprintf(b, "- branch %s (%s): thread %s, head %s; read it whole: uwf thread read %s\n", br.Key, br.Status, cid, br.Head, cid)
		var lines []string
		more := 0 // earlier nodes not shown: the reading stays bounded however long the branch
		for cn, err := range e.NewestFirst(ctx, br.Head) {
			if err != nil {
				return fmt.Errorf("join %s: branch %s: %w", n.Hash, br.Key, err)
			}
			if len(lines) == maxBranchLines {
				more = cn.Depth()
				break
			}
			line := ""
			switch {
			case cn.Step != nil:
				line = fmt.Sprintf("%d · %s · agent %s", cn.Step.Depth, cn.Step.Role, cn.Step.Agent)
				if out, err := get(cn.Step.Output); err == nil {
					if st := outputStatus(out.Payload); st != "" {
						line += " · " + st
					}
				}
			case cn.Mark != nil:
				line = fmt.Sprintf("%d · %s", cn.Mark.Depth, cn.Mark.Mark)
			case cn.Call != nil:
				line = fmt.Sprintf("%d · %s · call (%s)", cn.Call.Depth, cn.Call.Role, cn.Call.Mode)
			case cn.Join != nil:
				line = fmt.Sprintf("%d · %s · join", cn.Join.Depth, cn.Join.Role)
			}
			if line != "" {
				lines = append(lines, "  - "+line)
			}
		}
		if more > 0 {
			fmt.Fprintf(b, "  - (%d earlier entries: read it whole)\n", more)
		}
		for _, l := range slices.Backward(lines) {
			b.WriteString(l + "\n")
		}
	}
	return nil
}

// workflowName reads a workflow node's name; the hash if it cannot.
func (e *Engine) workflowName(ctx context.Context, h cas.Hash) string {
	if lw := e.cachedWorkflow(h); lw != nil {
		return lw.wf.Name
	}
	n, err := e.repo.Get(ctx, h)
	if err != nil {
		return h.String()
	}
	if m, ok := n.Payload.(map[string]any); ok {
		if s, ok := m["name"].(string); ok {
			return s
		}
	}
	return h.String()
}

// cutString cuts s to at most n bytes, at a rune boundary.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
