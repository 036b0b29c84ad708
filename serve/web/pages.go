package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/extract"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// statuses are the thread statuses the list can filter by.
var statuses = []string{thread.StatusActive, thread.StatusDone, thread.StatusSuspended, thread.StatusKilled}

// runStates are the run states the list can filter by (the same filter:
// the engine takes a status or a run state).
var runStates = []string{thread.RunQueued, thread.RunRunning, thread.RunRetrying, thread.RunFailed}

// maxScan bounds the threads the fork tree reads.
const maxScan = 20000

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"short":      func(s string) string { return cut(s, 140) },
	"pathEscape": url.PathEscape,
	"isZero":     func(h cas.Hash) bool { return h.IsZero() },
	"msTime":     func(ms int64) time.Time { return time.UnixMilli(ms) },
}

// cut shortens s to n runes with an ellipsis, on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// ---- the thread list ----

type threadRow struct {
	ID, Status, Workflow, Prompt string
	Run                          string // its run's state; "none" when it has no run record
	Depth                        int
	Created, Updated             time.Time
	Head                         cas.Hash
	Err                          string
}

type listPage struct {
	Title            string
	Status, Workflow string
	Statuses         []string
	RunStates        []string
	Workflows        []string // registered workflow names, for the filter
	Threads          []threadRow
	Page             int
	Prev, Next       string
	FragURL          string
	Damage           string
}

func (h *Handler) threads(w http.ResponseWriter, r *http.Request) {
	p, err := h.listData(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	wfs, _ := h.eng.Registry().List(r.Context()) // damaged ones are left out; the filter is a convenience
	for _, wf := range wfs {
		p.Workflows = append(p.Workflows, wf.Name)
	}
	h.render(w, r, "threads.html", p)
}

func (h *Handler) threadsFrag(w http.ResponseWriter, r *http.Request) {
	p, err := h.listData(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "threadrows", p)
}

func (h *Handler) listData(r *http.Request) (*listPage, error) {
	q := r.URL.Query()
	p := &listPage{Title: "Threads", Status: q.Get("status"), Workflow: q.Get("workflow"), Statuses: statuses, RunStates: runStates}
	if p.Status != "" && !slices.Contains(statuses, p.Status) && !slices.Contains(runStates, p.Status) {
		return nil, &badRequest{fmt.Errorf("status %s: not one of %s, nor a run state (%s)", quote(p.Status), strings.Join(statuses, ", "), strings.Join(runStates, ", "))}
	}
	if p.Workflow != "" && !registry.ValidName(p.Workflow) {
		return nil, &badRequest{fmt.Errorf("workflow %s: not a workflow name", quote(p.Workflow))}
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 1_000_000 {
			return nil, &badRequest{fmt.Errorf("page %s: not a page number", quote(s))}
		}
		p.Page = n
	}
	infos, damage := h.eng.List(r.Context(), thread.ListOptions{Status: p.Status, Workflow: p.Workflow, Limit: h.pageSize + 1, Offset: p.Page * h.pageSize})
	more := false
	if len(infos) > h.pageSize {
		infos, more = infos[:h.pageSize], true
	}
	if infos == nil && damage != nil {
		return nil, damage
	}
	if damage != nil {
		p.Damage = h.userError(damage.Error())
	}
	for _, in := range infos {
		row := threadRow{ID: in.ID, Status: in.Status, Run: thread.RunState(in.Run), Workflow: in.WorkflowName, Prompt: in.Prompt, Depth: in.Depth, Created: in.Created, Updated: in.Updated, Head: in.Head}
		if in.Err != nil {
			row.Err, row.Status = h.userError(in.Err.Error()), "unknown"
		}
		p.Threads = append(p.Threads, row)
	}
	link := func(page int) string {
		v := url.Values{}
		if p.Status != "" {
			v.Set("status", p.Status)
		}
		if p.Workflow != "" {
			v.Set("workflow", p.Workflow)
		}
		if page > 0 {
			v.Set("page", strconv.Itoa(page))
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	if p.Page > 0 {
		p.Prev = link(p.Page - 1)
	}
	if more {
		p.Next = link(p.Page + 1)
	}
	p.FragURL = "/frag/threads" + strings.TrimPrefix(link(p.Page), "/")
	return p, nil
}

// ---- a thread ----

// field is one frontmatter field of an output.
type field struct {
	Name, Value string
	Block       bool // a multi-line or structured value
	Differs     bool // in a diff: the other side has another value
}

// entry is one node of a thread's timeline.
type entry struct {
	Hash  cas.Hash
	Kind  string
	Depth int

	Prompt, Cwd string // a start
	Workflow    cas.Hash

	Role, Agent, Status string // a step
	Started             time.Time
	Duration            string
	EdgePrompt          string
	Fields              []field
	OutputJSON          string // the output as indented JSON, for a fork with an edit
	Body                template.HTML
	Output, Detail      cas.Hash
	ExitCode            int
	Attempts            int

	Mark, Reason string // a mark
	At           time.Time

	Branches []branchColumn // a call's or join's branches, drawn side by side

	Session *thread.Session // what the step's agent reported of its session; nil if nothing
}

// branchColumn is one branch of a call or join, as the timeline draws it:
// its thread and a line per chain node, oldest first.
type branchColumn struct {
	Key, Thread, Status string
	Head                cas.Hash
	Lines               []string
	Live                bool // the branch thread's ref is there (a join removes it): its page opens
}

// branchThreads names the branch thread of each of a call's or join's
// branches (thread id made the call), and for a pending call reads its
// status; a branch whose thread is there links to its page.
func (h *Handler) branchThreads(ctx context.Context, id string, n *thread.Node, e *entry) {
	var call *thread.Node
	switch {
	case n.Call != nil:
		call = n
	case n.Join != nil:
		cn, err := h.eng.Node(ctx, n.Join.Call)
		if err != nil || cn.Call == nil {
			return
		}
		call = cn
	default:
		return
	}
	for i := range e.Branches {
		b := &e.Branches[i]
		b.Thread = thread.ChildID(id, call.Hash, call.Call.At, b.Key)
		head, err := h.eng.Head(ctx, b.Thread)
		if err != nil {
			continue
		}
		b.Live = true
		if n.Call != nil {
			b.Head = head
			if bn, err := h.eng.Node(ctx, head); err == nil {
				b.Status = bn.Status()
			}
		}
	}
}

type threadPage struct {
	Title     string
	Info      *thread.Info
	Run       *runView // the thread's run record; nil if it has none
	Entries   []*entry
	Older     string // the link to older entries; "" at the start
	Live      bool   // the page shows the newest entries, so it follows the thread
	LastDepth int
	Graph     template.HTML
	NextRole  string
	Failure   *thread.Failure
	Gap       bool // (fragment) more new entries than a page: reload
}

func (h *Handler) thread(w http.ResponseWriter, r *http.Request) {
	p, err := h.threadData(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "thread.html", p)
}

// threadFrag renders the thread's header and the entries newer than
// ?after=<depth>, for the script to append.
func (h *Handler) threadFrag(w http.ResponseWriter, r *http.Request) {
	p, err := h.threadData(r, true)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "threadfrag", p)
}

func depthParam(r *http.Request, name string) (int, bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, &badRequest{fmt.Errorf("%s %s: not a depth", name, quote(s))}
	}
	return n, true, nil
}

func (h *Handler) threadData(r *http.Request, frag bool) (*threadPage, error) {
	ctx := r.Context()
	id, err := threadID(r)
	if err != nil {
		return nil, err
	}
	info, err := h.eng.Show(ctx, id)
	if err != nil {
		return nil, err
	}
	p := &threadPage{Title: "Thread " + id, Info: info, Failure: info.LastFailure, LastDepth: info.Depth}
	if info.Run != nil {
		p.Run = h.runView(ctx, info.Run)
	}
	from := info.Head
	floor := -1 // entries deeper than this
	switch {
	case frag:
		after, _, err := depthParam(r, "after")
		if err != nil {
			return nil, err
		}
		floor = after
		p.Live = true
	default:
		before, ok, err := depthParam(r, "before")
		if err != nil {
			return nil, err
		}
		p.Live = !ok || before > info.Depth
		if ok && before <= info.Depth {
			if before == 0 {
				return nil, &badRequest{errors.New("before 0: nothing is older than the start")}
			}
			n, err := h.eng.Ancestor(ctx, info.Head, before-1)
			if err != nil {
				return nil, err
			}
			from = n.Hash
		}
	}
	for n, err := range h.eng.NewestFirst(ctx, from) {
		if err != nil {
			return nil, err
		}
		if n.Depth() <= floor {
			break
		}
		if len(p.Entries) == h.pageSize {
			if frag {
				p.Gap = true
			} else {
				p.Older = fmt.Sprintf("/threads/%s?before=%d", id, p.Entries[len(p.Entries)-1].Depth)
			}
			break
		}
		e, err := h.entry(ctx, n)
		if err != nil {
			return nil, err
		}
		h.branchThreads(ctx, id, n, e)
		p.Entries = append(p.Entries, e)
	}
	slices.Reverse(p.Entries)
	if wf, err := h.eng.Registry().Load(ctx, info.Workflow); err == nil {
		p.NextRole = h.nextRole(ctx, info, wf)
		p.Graph = template.HTML(LayoutGraph(wf.Graph, wf.RoleNames(), p.NextRole).SVG())
	}
	return p, nil
}

// entry reads what the timeline shows of chain node n.
func (h *Handler) entry(ctx context.Context, n *thread.Node) (*entry, error) {
	e := &entry{Hash: n.Hash, Kind: n.Kind, Depth: n.Depth()}
	switch {
	case n.Start != nil:
		e.Prompt, e.Cwd, e.Workflow = n.Start.Prompt, n.Start.Cwd, n.Start.Workflow
	case n.Mark != nil:
		e.Mark, e.Reason, e.At, e.Detail = n.Mark.Mark, n.Mark.Reason, time.UnixMilli(n.Mark.At), n.Mark.Detail
	case n.Step != nil:
		s := n.Step
		e.Role, e.Agent, e.Output, e.Detail = s.Role, s.Agent, s.Output, s.Detail
		e.Started = time.UnixMilli(s.StartedAt)
		e.Duration = duration(s.CompletedAt - s.StartedAt)
		out, err := h.eng.Repo().Get(ctx, s.Output)
		if err != nil {
			return nil, fmt.Errorf("step %s: output: %w", n.Hash, err)
		}
		e.Fields, e.OutputJSON = fields(out.Payload), pretty(out.Payload)
		if m, ok := out.Payload.(map[string]any); ok {
			e.Status, _ = m["status"].(string)
		}
		dn, err := h.eng.Repo().Get(ctx, s.Detail)
		if err != nil {
			return nil, fmt.Errorf("step %s: detail: %w", n.Hash, err)
		}
		d, err := thread.DecodeDetail(dn)
		if err != nil {
			return nil, fmt.Errorf("step %s: detail: %w", n.Hash, err)
		}
		e.EdgePrompt, e.ExitCode, e.Attempts, e.Session = d.EdgePrompt, d.ExitCode, len(d.Attempts), d.Session
		raw, err := h.content(ctx, d.Raw)
		if err != nil {
			return nil, fmt.Errorf("step %s: raw output: %w", n.Hash, err)
		}
		body := raw
		if _, b, err := extract.Split(raw); err == nil {
			body = b
		}
		e.Body = RenderMarkdown(body)
	case n.Call != nil:
		e.Role, e.Agent, e.At = n.Call.Role, n.Call.Mode, time.UnixMilli(n.Call.At)
		if len(n.Call.Branches) > 0 {
			e.EdgePrompt = n.Call.Branches[0].Prompt
		}
		for _, b := range n.Call.Branches {
			e.Branches = append(e.Branches, branchColumn{Key: b.Key})
		}
	case n.Join != nil:
		// A join: its role's output (the branches' outputs, for a stage).
		e.Role, e.Output, e.At = n.Join.Role, n.Join.Output, time.UnixMilli(n.Join.At)
		if cn, err := h.eng.Node(ctx, n.Join.Call); err == nil && cn.Call != nil {
			e.Agent = cn.Call.Mode
		}
		out, err := h.eng.Repo().Get(ctx, n.Join.Output)
		if err != nil {
			return nil, fmt.Errorf("join %s: output: %w", n.Hash, err)
		}
		e.Fields, e.OutputJSON = fields(out.Payload), pretty(out.Payload)
		if m, ok := out.Payload.(map[string]any); ok {
			e.Status, _ = m["status"].(string)
		}
		for _, b := range n.Join.Branches {
			col := branchColumn{Key: b.Key, Status: b.Status, Head: b.Head}
			for bn, err := range h.eng.OldestFirst(ctx, b.Head) {
				if err != nil {
					return nil, fmt.Errorf("join %s: branch %s: %w", n.Hash, b.Key, err)
				}
				switch {
				case bn.Step != nil:
					col.Lines = append(col.Lines, fmt.Sprintf("#%d %s · %s", bn.Step.Depth, bn.Step.Role, bn.Step.Agent))
				case bn.Mark != nil:
					col.Lines = append(col.Lines, fmt.Sprintf("#%d %s", bn.Mark.Depth, bn.Mark.Mark))
				case bn.Call != nil:
					col.Lines = append(col.Lines, fmt.Sprintf("#%d %s · call (%s)", bn.Call.Depth, bn.Call.Role, bn.Call.Mode))
				case bn.Join != nil:
					col.Lines = append(col.Lines, fmt.Sprintf("#%d %s · join", bn.Join.Depth, bn.Join.Role))
				}
			}
			e.Branches = append(e.Branches, col)
		}
	}
	return e, nil
}

func (h *Handler) content(ctx context.Context, hash cas.Hash) (string, error) {
	n, err := h.eng.Repo().Get(ctx, hash)
	if err != nil {
		return "", err
	}
	return thread.DecodeContent(n)
}

// duration formats milliseconds for people: 850ms, 12.3s, 4m05s, 2h10m.
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms < 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// fields lists an output's fields in name order, "status" first.
func fields(payload any) []field {
	m, ok := payload.(map[string]any)
	if !ok {
		return []field{{Name: "(output)", Value: pretty(payload), Block: true}}
	}
	keys := slices.Sorted(maps.Keys(m))
	if i := slices.Index(keys, "status"); i > 0 {
		keys = append([]string{"status"}, slices.Delete(keys, i, i+1)...)
	}
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		f := field{Name: k}
		if s, ok := m[k].(string); ok {
			f.Value, f.Block = s, strings.Contains(s, "\n")
		} else {
			f.Value = pretty(m[k])
			_, obj := m[k].(map[string]any)
			_, arr := m[k].([]any)
			f.Block = obj || arr
		}
		out = append(out, f)
	}
	return out
}

// pretty is v as indented JSON, with <, > and & as they are (the page
// escapes them).
func pretty(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// nextRole is the role an active thread runs next: routed from its head
// step, or from $START for a fresh thread; "" otherwise (a mark at the
// head, $END, an output the graph does not route).
func (h *Handler) nextRole(ctx context.Context, info *thread.Info, wf *registry.Workflow) string {
	if info.Status != thread.StatusActive {
		return ""
	}
	n, err := h.eng.Node(ctx, info.Head)
	if err != nil {
		return ""
	}
	var d moderator.Decision
	switch {
	case n.Start != nil:
		d, err = moderator.RouteStart(wf.Graph)
	case n.Step != nil || n.Join != nil:
		role, output := "", cas.Hash(0)
		if n.Step != nil {
			role, output = n.Step.Role, n.Step.Output
		} else {
			role, output = n.Join.Role, n.Join.Output
		}
		out, gerr := h.eng.Repo().Get(ctx, output)
		if gerr != nil {
			return ""
		}
		d, err = moderator.Route(wf.Graph, role, out.Payload)
	default:
		return ""
	}
	if err != nil || d.Role == moderator.End || d.Role == moderator.Suspend {
		return ""
	}
	return d.Role
}

// ---- a detail (step, failure or suspension), on demand ----

type detailPage struct {
	Title       string
	Hash        cas.Hash
	Detail      *thread.Detail
	Prompt, Raw string
	Stderr      string
	Attempts    []string
	Duration    string
}

// pathNode reads the node the request's {hash} names (what, in an
// error, says what it should be); on failure it has answered the request.
func (h *Handler) pathNode(w http.ResponseWriter, r *http.Request, what string) (cas.Hash, cas.Node, bool) {
	hash, err := parseHash(what, r.PathValue("hash"))
	if err != nil {
		h.fail(w, r, err)
		return 0, cas.Node{}, false
	}
	n, err := h.eng.Repo().Get(r.Context(), hash)
	if err != nil {
		h.fail(w, r, err)
		return 0, cas.Node{}, false
	}
	return hash, n, true
}

func (h *Handler) stepDetail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	hash, dn, ok := h.pathNode(w, r, "detail")
	if !ok {
		return
	}
	d, err := thread.DecodeDetail(dn)
	if err != nil {
		h.fail(w, r, &badRequest{fmt.Errorf("node %s: %w", hash, err)})
		return
	}
	p := &detailPage{Title: "Detail " + hash.String(), Hash: hash, Detail: d, Duration: duration(d.DurationMs)}
	if p.Prompt, err = h.content(ctx, d.Prompt); err == nil {
		if p.Raw, err = h.content(ctx, d.Raw); err == nil && !d.Stderr.IsZero() {
			p.Stderr, err = h.content(ctx, d.Stderr)
		}
	}
	for _, a := range d.Attempts {
		if err != nil {
			break
		}
		var t string
		t, err = h.content(ctx, a)
		p.Attempts = append(p.Attempts, t)
	}
	if err != nil {
		h.fail(w, r, fmt.Errorf("detail %s: %w", hash, err))
		return
	}
	if r.URL.Query().Has("frag") {
		h.render(w, r, "detailfrag", p)
		return
	}
	h.render(w, r, "detail.html", p)
}

// ---- forks ----

type forkNode struct {
	ID, Status string
	Depth      int // where it was forked from its parent
	Forked     bool
	Here       bool
	Children   []*forkNode
}

type forksPage struct {
	Title  string
	ID     string
	Root   *forkNode
	Origin thread.Origin
}

// forkOrigin is a thread's parent and the depth it was forked at, as
// [thread.Engine.Origin] gives it: from the step cache, checked against
// the thread's chain, without reading its ref log; ok is false for a
// thread that was started, or forked from a bare node.
func (h *Handler) forkOrigin(ctx context.Context, id string) (parent string, depth int, ok bool) {
	o, err := h.eng.Origin(ctx, id)
	if err != nil || !o.Forked || o.ForkThread == "" {
		return "", 0, false
	}
	return o.ForkThread, o.Depth, true
}

func (h *Handler) forks(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := threadID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	info, err := h.eng.Show(ctx, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	parent := map[string]string{}
	depth := map[string]int{}
	children := map[string][]string{}
	n := 0
	for ref, err := range h.eng.Repo().Refs().List(ctx, thread.ThreadPrefix) {
		if err != nil {
			continue
		}
		if n++; n > maxScan {
			break
		}
		t := strings.TrimPrefix(ref.Name, thread.ThreadPrefix)
		if p, d, ok := h.forkOrigin(ctx, t); ok {
			parent[t], depth[t] = p, d
			children[p] = append(children[p], t)
		}
	}
	root := id
	for seen := map[string]bool{id: true}; parent[root] != "" && !seen[parent[root]]; {
		root = parent[root]
		seen[root] = true
	}
	var build func(t string, level int) *forkNode
	build = func(t string, level int) *forkNode {
		_, forked := parent[t]
		fn := &forkNode{ID: t, Depth: depth[t], Forked: forked, Here: t == id, Status: "removed"}
		if in, err := h.eng.Show(ctx, t); err == nil {
			fn.Status = in.Status
		}
		if level < 32 {
			for _, c := range children[t] {
				fn.Children = append(fn.Children, build(c, level+1))
			}
		}
		return fn
	}
	h.render(w, r, "forks.html", &forksPage{Title: "Forks of " + id, ID: id, Root: build(root, 0), Origin: info.Origin})
}

// ---- diff against the origin ----

type diffRow struct {
	Depth       int
	Left, Right *entry
}

type diffPage struct {
	Title      string
	ID, Origin string
	Part       int // the deepest depth both share
	Rows       []diffRow
	Cut        bool
	NotFork    bool
}

// maxDiff bounds the rows a diff shows after the part point.
const maxDiff = 200

func (h *Handler) diff(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := threadID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	info, err := h.eng.Show(ctx, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &diffPage{Title: "Diff of " + id, ID: id, Origin: info.Origin.ForkThread}
	if !info.Origin.Forked || p.Origin == "" {
		p.NotFork = true
		h.render(w, r, "diff.html", p)
		return
	}
	oinfo, err := h.eng.Show(ctx, p.Origin)
	if err != nil {
		h.fail(w, r, fmt.Errorf("origin %s: %w", p.Origin, err))
		return
	}
	floor := max(info.Origin.Depth-1, 0)
	left, err := h.chain(ctx, oinfo.Head, oinfo.Depth, floor)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	right, err := h.chain(ctx, info.Head, info.Depth, floor)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p.Part = floor
	for d := floor; ; d++ {
		l, r := left[d], right[d]
		if l == nil || r == nil || l.Hash != r.Hash {
			break
		}
		p.Part = d
	}
	top := max(oinfo.Depth, info.Depth)
	for d := p.Part + 1; d <= top; d++ {
		if len(p.Rows) == maxDiff {
			p.Cut = true
			break
		}
		row := diffRow{Depth: d, Left: left[d], Right: right[d]}
		if row.Left != nil && row.Right != nil {
			markDiffers(row.Left, row.Right)
		}
		p.Rows = append(p.Rows, row)
	}
	h.render(w, r, "diff.html", p)
}

// chain reads the entries from depth floor up to floor+maxDiff+1 of the
// chain ending at head, by depth; it starts from that ancestor (found
// through the skip pointers), so a long thread costs no more than a short
// one.
func (h *Handler) chain(ctx context.Context, head cas.Hash, depth, floor int) (map[int]*entry, error) {
	if top := floor + maxDiff + 1; depth > top {
		n, err := h.eng.Ancestor(ctx, head, top)
		if err != nil {
			return nil, err
		}
		head = n.Hash
	}
	out := map[int]*entry{}
	for n, err := range h.eng.NewestFirst(ctx, head) {
		if err != nil {
			return nil, err
		}
		if n.Depth() < floor {
			break
		}
		e, err := h.entry(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n.Depth()] = e
	}
	return out, nil
}

// markDiffers flags the fields of a and b whose values differ.
func markDiffers(a, b *entry) {
	av := map[string]string{}
	for _, f := range a.Fields {
		av[f.Name] = f.Value
	}
	bv := map[string]string{}
	for i, f := range b.Fields {
		bv[f.Name] = f.Value
		if v, ok := av[f.Name]; !ok || v != f.Value {
			b.Fields[i].Differs = true
		}
	}
	for i, f := range a.Fields {
		if v, ok := bv[f.Name]; !ok || v != f.Value {
			a.Fields[i].Differs = true
		}
	}
}

// ---- workflows ----

type workflowsPage struct {
	Title     string
	Workflows []registry.Entry
	Damage    string
}

func (h *Handler) workflows(w http.ResponseWriter, r *http.Request) {
	list, err := h.eng.Registry().List(r.Context())
	p := &workflowsPage{Title: "Workflows", Workflows: list}
	if err != nil {
		if list == nil {
			h.fail(w, r, err)
			return
		}
		p.Damage = h.userError(err.Error())
	}
	h.render(w, r, "workflows.html", p)
}

type roleRow struct {
	Name, Description, Goal string
	Statuses                []string
}

type edgeRow struct {
	From, Status, To, Prompt string
}

type workflowPage struct {
	Title    string
	Name     string
	Stored   *registry.Stored
	Current  bool // the version shown is the current one
	Graph    template.HTML
	Roles    []roleRow
	Edges    []edgeRow
	Versions []registry.Version
	Thread   string
	NextRole string
}

func (h *Handler) workflow(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	if !registry.ValidName(name) {
		h.fail(w, r, &badRequest{fmt.Errorf("workflow %s: not a workflow name", quote(name))})
		return
	}
	reg := h.eng.Registry()
	cur, err := reg.Show(ctx, name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &workflowPage{Title: "Workflow " + name, Name: name, Stored: cur, Current: true}
	if v := r.URL.Query().Get("version"); v != "" {
		vh, err := parseHash("version", v)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if vh != cur.Hash {
			if p.Stored, err = reg.LoadStored(ctx, vh); err != nil {
				h.fail(w, r, err)
				return
			}
			if p.Stored.Workflow.Name != name {
				h.fail(w, r, fmt.Errorf("version %s is workflow %s, not %s: %w", vh, quote(p.Stored.Workflow.Name), name, cas.ErrNotFound))
				return
			}
			p.Current = false
		}
	}
	if t := r.URL.Query().Get("thread"); t != "" {
		id, err := thread.ParseID(t)
		if err != nil {
			h.fail(w, r, &badRequest{err})
			return
		}
		info, err := h.eng.Show(ctx, id)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Thread = id
		if info.Workflow == p.Stored.Hash {
			p.NextRole = h.nextRole(ctx, info, p.Stored.Workflow)
		}
	}
	wf := p.Stored.Workflow
	p.Graph = template.HTML(LayoutGraph(wf.Graph, wf.RoleNames(), p.NextRole).SVG())
	for _, rn := range wf.RoleNames() {
		ro := wf.Roles[rn]
		p.Roles = append(p.Roles, roleRow{Name: rn, Description: ro.Description, Goal: ro.Goal, Statuses: wf.Statuses(rn)})
	}
	froms := slices.Sorted(maps.Keys(wf.Graph))
	if i := slices.Index(froms, moderator.Start); i > 0 {
		froms = append([]string{moderator.Start}, slices.Delete(froms, i, i+1)...)
	}
	for _, from := range froms {
		for _, st := range slices.Sorted(maps.Keys(wf.Graph[from])) {
			e := wf.Graph[from][st]
			p.Edges = append(p.Edges, edgeRow{From: from, Status: st, To: e.Role, Prompt: e.Prompt})
		}
	}
	if vs, err := reg.History(ctx, name); err == nil {
		slices.Reverse(vs)
		p.Versions = vs
	}
	h.render(w, r, "workflow.html", p)
}

// ---- any node ----

type nodePage struct {
	Title   string
	Hash    cas.Hash
	Type    cas.Hash
	JSON    template.HTML
	Edges   []cas.Edge
	Content string
	IsText  bool
}

// hashInJSON finds a quoted hash in JSON text escaped for HTML. It is
// compiled on first use, not when uwf starts (issue 13).
var hashInJSON = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`&#34;([0-9A-HJKMNP-TV-Z]{13})&#34;`)
})

func (h *Handler) node(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	hash, n, ok := h.pathNode(w, r, "node")
	if !ok {
		return
	}
	edges, err := h.eng.Repo().Edges(ctx, n)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &nodePage{Title: "Node " + hash.String(), Hash: hash, Type: n.Type, Edges: edges}
	if s, ok := n.Payload.(string); ok && n.Type == cas.ContentSchema {
		p.Content, p.IsText = s, true
	}
	linked := map[string]bool{}
	for _, e := range edges {
		linked[e.Hash.String()] = true
	}
	// The JSON is escaped first; only a quoted hash that is one of the
	// node's edges (checked, 13 Base32 characters) becomes a link.
	esc := template.HTMLEscapeString(pretty(map[string]any{"type": n.Type.String(), "payload": n.Payload}))
	p.JSON = template.HTML(hashInJSON().ReplaceAllStringFunc(esc, func(m string) string {
		hs := m[5 : len(m)-5]
		if !linked[hs] {
			return m
		}
		return `&#34;<a href="/nodes/` + hs + `">` + hs + `</a>&#34;`
	}))
	h.render(w, r, "node.html", p)
}

// runView is what a thread page shows of its run record: the state, the
// worker holding the lease and when it expires by the store's clock (the
// one leases are judged by, never this server's), why no worker took it,
// and the last run error, in the user's words with secrets masked.
type runView struct {
	State, Worker, Agent string
	Attempt, Failures    int
	Expiry               time.Time
	ExpiryIn             string // "in 42s" or "12s ago", by the store's clock; "" without an expiry
	ExpiryWhat           string // "lease" while running, "backoff" while retrying
	WhyNotClaimed        string
	Error                string
}

func (h *Handler) runView(ctx context.Context, r *thread.Run) *runView {
	v := &runView{State: r.State, Worker: h.mask.String(r.Worker), Agent: r.Agent, Attempt: r.Attempt, Failures: r.Failures,
		Expiry: r.ExpiryTime(), WhyNotClaimed: h.userError(r.WhyNotClaimed), Error: h.userError(r.Error)}
	switch r.State {
	case thread.RunRunning:
		v.ExpiryWhat = "lease"
	case thread.RunRetrying:
		v.ExpiryWhat = "backoff"
	}
	if r.Expiry != 0 {
		if now, err := h.eng.Repo().Store().Now(ctx); err == nil {
			d := time.UnixMilli(r.Expiry).Sub(now).Round(time.Second)
			if d >= 0 {
				v.ExpiryIn = "in " + d.String()
			} else {
				v.ExpiryIn = (-d).String() + " ago"
			}
		}
	}
	return v
}
