package thread

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
)

// Kinds of chain node.
const (
	KindStart = "start"
	KindStep  = "step"
	KindMark  = "mark"
	KindCall  = "call" // a call: branches started by a child role or a stage (format version 2)
	KindJoin  = "join" // the end of a call: routing goes on from it (format version 2)
)

// Marks (SPEC §5).
const (
	MarkDone      = "done"
	MarkKilled    = "killed"
	MarkSuspended = "suspended"
	MarkResumed   = "resumed"
	// MarkCancelled is a branch cancelled by its call (a race lost, a
	// stage timed out, its parent killed): a cancelled node, format
	// version 2.
	MarkCancelled = "cancelled"
)

// Statuses of a thread, read from its head.
const (
	StatusActive    = "active"
	StatusDone      = MarkDone
	StatusKilled    = MarkKilled
	StatusSuspended = MarkSuspended
	StatusCancelled = MarkCancelled
)

// MaxSkip is the number of skip pointers a chain node may carry: the
// ancestors at distance 2, 4, ..., 2^MaxSkip.
const MaxSkip = 10

// Start is the payload of a start node: the root of a thread. A branch
// thread's start (a child-start node, format version 2) also names its
// call and key, and for a stage's branch the one role it runs.
type Start struct {
	Workflow cas.Hash // the workflow node
	Prompt   string   // the user's prompt; a branch's task
	Cwd      string   // the working folder agents run in
	Call     cas.Hash // the call on the parent's chain; zero for a thread of its own
	Key      string   // the branch key under the call
	Role     string   // a stage's branch: the one role it runs; "" runs the workflow
}

// IsChild reports whether s starts a branch thread (a child-start node).
func (s *Start) IsChild() bool { return !s.Call.IsZero() }

// schema returns the type of s's node.
func (s *Start) schema() cas.Hash {
	if s.IsChild() {
		return cas.ChildStartSchema
	}
	return cas.StartSchema
}

// Chain holds the fields every step and mark node has.
type Chain struct {
	Start cas.Hash   // the thread's start node
	Prev  cas.Hash   // the previous chain node; zero for the first (whose predecessor is Start)
	Skip  []cas.Hash // Skip[k-1] is the ancestor at distance 2^k, k = 1..len(Skip)
	Depth int        // 1 for the first node after the start
}

// Step is the payload of a step node: one role's work.
type Step struct {
	Chain
	Role        string
	Output      cas.Hash // the typed output, valid against the role's schema
	Detail      cas.Hash // the detail node: prompt, raw output, timings
	Agent       string
	StartedAt   int64 // Unix ms
	CompletedAt int64 // Unix ms
}

// Mark is the payload of a mark node: a lifecycle event in the chain.
type Mark struct {
	Chain
	Mark   string   // MarkDone, MarkKilled, MarkSuspended or MarkResumed
	Reason string   // why, or the text a human gave on resume
	At     int64    // Unix ms
	Detail cas.Hash // the agent run that asked to suspend; zero if none
}

// schema returns the type of m's node: a cancelled mark is a node of its
// own kind (format version 2).
func (m *Mark) schema() cas.Hash {
	if m.Mark == MarkCancelled {
		return cas.CancelledSchema
	}
	return cas.MarkSchema
}

// Call is the payload of a call node: the branches a child role or a stage
// starts, committed on the parent's chain before any of them runs.
type Call struct {
	Chain
	Role        string   // the role or stage stepped
	Mode        string   // registry.ModeChild, ModeParallel or ModeRace
	Workflow    cas.Hash // the child workflow (mode child); zero for a stage
	Branches    []Branch
	TimeoutMs   int64 // the stage's timeout; 0: none
	Concurrency int   // branches run at once; 0: all
	At          int64 // Unix ms
}

// Branch is one branch of a call.
type Branch struct {
	Key    string // unique under the call: the role's or member's name
	Role   string // the member a stage's branch runs; "" for a child workflow
	Prompt string // the branch's task: the edge prompt
}

// Join is the payload of a join node: the end of a call, with an edge to
// every branch's final head and the role's output.
type Join struct {
	Chain
	Call     cas.Hash
	Role     string
	Output   cas.Hash // typed by the role's schema
	Branches []JoinBranch
	At       int64 // Unix ms
}

// JoinBranch is a branch as its call settled it.
type JoinBranch struct {
	Key    string
	Head   cas.Hash // the branch thread's final head
	Status string   // done or cancelled
}

// Detail is the payload of a detail node: one agent run.
type Detail struct {
	Prompt     cas.Hash   // content: the assembled prompt
	Raw        cas.Hash   // content: the raw output
	Stderr     cas.Hash   // content: its stderr; zero if none
	EdgePrompt string     // the rendered edge prompt the role was given
	Attempts   []cas.Hash // content: raw outputs that failed extraction before Raw
	ExitCode   int
	DurationMs int64
	// Session is what the agent reported of its session (a coding agent's
	// structured output); nil if nothing.
	Session *Session
	// RunBy names the lease holder that ran the agent; nil for a run
	// under no lease. A detail with a Session or a RunBy is a detail-run
	// node (format version 2), one with neither a detail node.
	RunBy *RunBy
}

// RunBy is who ran an agent under a lease, in a detail-run node: the
// worker (the lease holder's name), its build and the claim attempt.
type RunBy struct {
	Worker  string // the lease holder
	Build   string // its build (a version); "" if it gave none
	Attempt int    // the claim attempt: 1 for the first, one more at each takeover
}

// String renders who ran it for people: "worker w1 build v1.2 attempt 2".
func (r *RunBy) String() string {
	s := "worker " + r.Worker
	if r.Build != "" {
		s += " build " + r.Build
	}
	return fmt.Sprintf("%s attempt %d", s, r.Attempt)
}

// Session is the session object of a detail-run node: what a coding
// agent reported of its run. Zero fields were not reported.
type Session struct {
	Tool             string  // the output format that read it: claude-code, codex, ...
	ID               string  // the tool's session id
	Model            string  // the model that answered
	InputTokens      int64   // prompt tokens, cached ones included
	OutputTokens     int64   // answer tokens
	CacheReadTokens  int64   // prompt tokens read from the cache
	CacheWriteTokens int64   // prompt tokens written to the cache
	ReasoningTokens  int64   // thinking tokens, where reported apart
	CostUSD          float64 // the cost the tool reported, in US dollars
	Turns            int64   // model calls, where reported
}

// sessionOf converts what an agent reported (nil: nothing).
func sessionOf(s *agent.Session) *Session {
	if s == nil {
		return nil
	}
	return &Session{Tool: s.Tool, ID: s.ID, Model: s.Model, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		CacheReadTokens: s.CacheReadTokens, CacheWriteTokens: s.CacheWriteTokens, ReasoningTokens: s.ReasoningTokens,
		CostUSD: s.CostUSD, Turns: s.Turns}
}

// Payload returns the session object as plain JSON values, leaving out the
// fields not reported.
func (s *Session) Payload() map[string]any {
	p := map[string]any{"tool": s.Tool}
	for k, v := range map[string]string{"id": s.ID, "model": s.Model} {
		if v != "" {
			p[k] = v
		}
	}
	for k, v := range map[string]int64{"inputTokens": s.InputTokens, "outputTokens": s.OutputTokens, "cacheReadTokens": s.CacheReadTokens,
		"cacheWriteTokens": s.CacheWriteTokens, "reasoningTokens": s.ReasoningTokens, "turns": s.Turns} {
		if v > 0 {
			p[k] = float64(v)
		}
	}
	if s.CostUSD > 0 {
		p["costUSD"] = s.CostUSD
	}
	return p
}

// Summary renders the session for people on one line: "claude-code
// session 9f1c..., model claude-sonnet-4-5, 1234 in (1000 cached) / 56 out
// tokens, $0.0123". Parts not reported are left out.
func (s *Session) Summary() string {
	parts := []string{s.Tool}
	if s.ID != "" {
		parts[0] += " session " + s.ID
	}
	if s.Model != "" {
		parts = append(parts, "model "+s.Model)
	}
	return strings.Join(usageWords(parts, s.InputTokens, s.CacheReadTokens, s.OutputTokens, s.ReasoningTokens, s.Turns, s.CostUSD), ", ")
}

// usageWords appends to parts what a session or a sum of them reported,
// as [Session.Summary] and [Usage.Summary] word it: "1234 in (1000 cached)
// / 56 out tokens (7 reasoning)", "3 turns", "$0.0123". What is zero is
// left out.
func usageWords(parts []string, in, cached, out, reasoning, turns int64, costUSD float64) []string {
	if in > 0 || out > 0 {
		t := strconv.FormatInt(in, 10) + " in"
		if cached > 0 {
			t += " (" + strconv.FormatInt(cached, 10) + " cached)"
		}
		t += " / " + strconv.FormatInt(out, 10) + " out tokens"
		if reasoning > 0 {
			t += " (" + strconv.FormatInt(reasoning, 10) + " reasoning)"
		}
		parts = append(parts, t)
	}
	if turns > 0 {
		parts = append(parts, strconv.FormatInt(turns, 10)+" turns")
	}
	if costUSD > 0 {
		parts = append(parts, "$"+strconv.FormatFloat(costUSD, 'f', -1, 64))
	}
	return parts
}

// Failure is the payload of a failure node: a step that moved nothing.
type Failure struct {
	Thread string
	Head   cas.Hash // the head the step started from
	Role   string
	Agent  string
	Detail cas.Hash
	Error  string
	At     int64 // Unix ms
}

// Node is a decoded chain node: exactly one of Start, Step and Mark is set,
// as Kind says.
type Node struct {
	Hash  cas.Hash
	Kind  string
	Start *Start
	Step  *Step
	Mark  *Mark
	Call  *Call
	Join  *Join
}

// Depth returns the node's depth: 0 for a start node.
func (n *Node) Depth() int {
	switch {
	case n.Step != nil:
		return n.Step.Depth
	case n.Mark != nil:
		return n.Mark.Depth
	case n.Call != nil:
		return n.Call.Depth
	case n.Join != nil:
		return n.Join.Depth
	}
	return 0
}

// routed returns the role and output routing goes on from, for a step or
// a join; ok is false for other nodes.
func (n *Node) routed() (role string, output cas.Hash, ok bool) {
	switch {
	case n.Step != nil:
		return n.Step.Role, n.Step.Output, true
	case n.Join != nil:
		return n.Join.Role, n.Join.Output, true
	}
	return "", 0, false
}

// Chain returns the chain fields of a step or mark node; nil for a start.
func (n *Node) Chain() *Chain {
	switch {
	case n.Step != nil:
		return &n.Step.Chain
	case n.Mark != nil:
		return &n.Mark.Chain
	case n.Call != nil:
		return &n.Call.Chain
	case n.Join != nil:
		return &n.Join.Chain
	}
	return nil
}

// StartHash returns the thread's start node: n itself for a start node.
func (n *Node) StartHash() cas.Hash {
	if c := n.Chain(); c != nil {
		return c.Start
	}
	return n.Hash
}

// Status is the thread status a head node gives: active for a start or a
// step (or a resumed mark), else the mark's kind.
func (n *Node) Status() string {
	if n.Mark != nil && n.Mark.Mark != MarkResumed {
		return n.Mark.Mark
	}
	return StatusActive
}

func hashStrings(hs []cas.Hash) []any {
	out := make([]any, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

func chainPayload(c *Chain, m map[string]any) map[string]any {
	m["start"] = c.Start.String()
	if c.Prev.IsZero() {
		m["prev"] = nil
	} else {
		m["prev"] = c.Prev.String()
	}
	m["skip"] = hashStrings(c.Skip)
	m["depth"] = float64(c.Depth)
	return m
}

// Payload returns the start node's payload as plain JSON values.
func (s *Start) Payload() map[string]any {
	p := map[string]any{"workflow": s.Workflow.String(), "prompt": s.Prompt, "cwd": s.Cwd}
	if s.IsChild() {
		p["call"], p["key"] = s.Call.String(), s.Key
		if s.Role != "" {
			p["role"] = s.Role
		}
	}
	return p
}

// Payload returns the step node's payload as plain JSON values.
func (s *Step) Payload() map[string]any {
	return chainPayload(&s.Chain, map[string]any{
		"role": s.Role, "output": s.Output.String(), "detail": s.Detail.String(), "agent": s.Agent,
		"startedAt": float64(s.StartedAt), "completedAt": float64(s.CompletedAt),
	})
}

// Payload returns the mark node's payload as plain JSON values.
func (m *Mark) Payload() map[string]any {
	if m.Mark == MarkCancelled {
		return chainPayload(&m.Chain, map[string]any{"reason": m.Reason, "at": float64(m.At)})
	}
	p := chainPayload(&m.Chain, map[string]any{"mark": m.Mark, "reason": m.Reason, "at": float64(m.At)})
	if !m.Detail.IsZero() {
		p["detail"] = m.Detail.String()
	}
	return p
}

// Payload returns the call node's payload as plain JSON values.
func (c *Call) Payload() map[string]any {
	bs := make([]any, len(c.Branches))
	for i, b := range c.Branches {
		m := map[string]any{"key": b.Key, "prompt": b.Prompt}
		if b.Role != "" {
			m["role"] = b.Role
		}
		bs[i] = m
	}
	p := chainPayload(&c.Chain, map[string]any{"role": c.Role, "mode": c.Mode, "branches": bs, "at": float64(c.At)})
	if !c.Workflow.IsZero() {
		p["workflow"] = c.Workflow.String()
	}
	if c.TimeoutMs > 0 {
		p["timeoutMs"] = float64(c.TimeoutMs)
	}
	if c.Concurrency > 0 {
		p["concurrency"] = float64(c.Concurrency)
	}
	return p
}

// Payload returns the join node's payload as plain JSON values.
func (j *Join) Payload() map[string]any {
	bs := make([]any, len(j.Branches))
	for i, b := range j.Branches {
		bs[i] = map[string]any{"key": b.Key, "head": b.Head.String(), "status": b.Status}
	}
	return chainPayload(&j.Chain, map[string]any{"call": j.Call.String(), "role": j.Role, "output": j.Output.String(),
		"branches": bs, "at": float64(j.At)})
}

// Node returns the detail as a node: a detail-run node
// ([cas.DetailRunSchema], format version 2: putting it moves a
// version-1 store to version 2) when it has a Session or a RunBy, else a
// detail node.
func (d *Detail) Node() cas.Node {
	if d.Session != nil || d.RunBy != nil {
		return cas.Node{Type: cas.DetailRunSchema, Payload: d.Payload()}
	}
	return cas.Node{Type: cas.DetailSchema, Payload: d.Payload()}
}

// Payload returns the detail's payload as plain JSON values: a
// detail-run node's when it has a Session, else a detail node's.
func (d *Detail) Payload() map[string]any {
	p := map[string]any{
		"prompt": d.Prompt.String(), "raw": d.Raw.String(), "edgePrompt": d.EdgePrompt,
		"attempts": hashStrings(d.Attempts), "exitCode": float64(d.ExitCode), "durationMs": float64(d.DurationMs),
	}
	if !d.Stderr.IsZero() {
		p["stderr"] = d.Stderr.String()
	}
	if d.Session != nil {
		p["session"] = d.Session.Payload()
	}
	if r := d.RunBy; r != nil {
		rb := map[string]any{"worker": r.Worker, "attempt": float64(r.Attempt)}
		if r.Build != "" {
			rb["build"] = r.Build
		}
		p["runBy"] = rb
	}
	return p
}

// Payload returns the failure node's payload as plain JSON values.
func (f *Failure) Payload() map[string]any {
	return map[string]any{
		"thread": f.Thread, "head": f.Head.String(), "role": f.Role, "agent": f.Agent,
		"detail": f.Detail.String(), "error": f.Error, "at": float64(f.At),
	}
}

// fields reads a payload's fields; the payload was validated against its
// schema when it entered the store, so only types are checked here.
type fields struct {
	m   map[string]any
	err error
}

func newFields(payload any) *fields {
	m, ok := payload.(map[string]any)
	f := &fields{m: m}
	if !ok {
		f.err = fmt.Errorf("%w: payload is not an object", cas.ErrInvalid)
	}
	return f
}

func (f *fields) fail(key, want string) {
	if f.err == nil {
		f.err = fmt.Errorf("%w: field %q is not %s", cas.ErrInvalid, key, want)
	}
}

func (f *fields) str(key string) string {
	v, ok := f.m[key]
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.fail(key, "a string")
	}
	return s
}

func (f *fields) hash(key string) cas.Hash {
	v, ok := f.m[key]
	if !ok || v == nil {
		return 0
	}
	s, ok := v.(string)
	if !ok {
		f.fail(key, "a hash")
		return 0
	}
	h, err := cas.ParseCanonicalHash(s)
	if err != nil {
		f.fail(key, "a hash")
	}
	return h
}

func (f *fields) hashes(key string) []cas.Hash {
	v, ok := f.m[key].([]any)
	if !ok {
		if _, present := f.m[key]; present {
			f.fail(key, "an array of hashes")
		}
		return nil
	}
	out := make([]cas.Hash, len(v))
	for i, e := range v {
		s, _ := e.(string)
		h, err := cas.ParseCanonicalHash(s)
		if err != nil {
			f.fail(key, "an array of hashes")
		}
		out[i] = h
	}
	return out
}

func (f *fields) int(key string) int64 {
	v, ok := f.m[key]
	if !ok {
		return 0
	}
	x, ok := v.(float64)
	if !ok || x != math.Trunc(x) || x < 0 || x > 1<<53 {
		f.fail(key, "a non-negative integer")
	}
	return int64(x)
}

// objects reads an array of objects.
func (f *fields) objects(key string) []any {
	v, ok := f.m[key].([]any)
	if !ok && f.m[key] != nil {
		f.fail(key, "an array")
	}
	return v
}

// take keeps the first error of a nested object's fields.
func (f *fields) take(g *fields) {
	if f.err == nil {
		f.err = g.err
	}
}

func (f *fields) chain() Chain {
	return Chain{Start: f.hash("start"), Prev: f.hash("prev"), Skip: f.hashes("skip"), Depth: int(f.int("depth"))}
}

// DecodeNode decodes a start, step or mark node. The error wraps
// [cas.ErrInvalid] for a node of any other type.
func DecodeNode(h cas.Hash, n cas.Node) (*Node, error) {
	f := newFields(n.Payload)
	out := &Node{Hash: h}
	switch n.Type {
	case cas.StartSchema:
		out.Kind = KindStart
		out.Start = &Start{Workflow: f.hash("workflow"), Prompt: f.str("prompt"), Cwd: f.str("cwd")}
	case cas.StepSchema:
		out.Kind = KindStep
		out.Step = &Step{Chain: f.chain(), Role: f.str("role"), Output: f.hash("output"), Detail: f.hash("detail"),
			Agent: f.str("agent"), StartedAt: f.int("startedAt"), CompletedAt: f.int("completedAt")}
	case cas.MarkSchema:
		out.Kind = KindMark
		out.Mark = &Mark{Chain: f.chain(), Mark: f.str("mark"), Reason: f.str("reason"), At: f.int("at"), Detail: f.hash("detail")}
	case cas.ChildStartSchema:
		out.Kind = KindStart
		out.Start = &Start{Workflow: f.hash("workflow"), Prompt: f.str("prompt"), Cwd: f.str("cwd"),
			Call: f.hash("call"), Key: f.str("key"), Role: f.str("role")}
	case cas.CancelledSchema:
		out.Kind = KindMark
		out.Mark = &Mark{Chain: f.chain(), Mark: MarkCancelled, Reason: f.str("reason"), At: f.int("at")}
	case cas.CallSchema:
		out.Kind = KindCall
		c := &Call{Chain: f.chain(), Role: f.str("role"), Mode: f.str("mode"), Workflow: f.hash("workflow"),
			TimeoutMs: f.int("timeoutMs"), Concurrency: int(f.int("concurrency")), At: f.int("at")}
		for _, bm := range f.objects("branches") {
			b := newFields(bm)
			c.Branches = append(c.Branches, Branch{Key: b.str("key"), Role: b.str("role"), Prompt: b.str("prompt")})
			f.take(b)
		}
		out.Call = c
	case cas.JoinSchema:
		out.Kind = KindJoin
		j := &Join{Chain: f.chain(), Call: f.hash("call"), Role: f.str("role"), Output: f.hash("output"), At: f.int("at")}
		for _, bm := range f.objects("branches") {
			b := newFields(bm)
			j.Branches = append(j.Branches, JoinBranch{Key: b.str("key"), Head: b.hash("head"), Status: b.str("status")})
			f.take(b)
		}
		out.Join = j
	default:
		return nil, fmt.Errorf("%s: %w: not a start, step, mark, call or join node (type %s)", h, cas.ErrInvalid, n.Type)
	}
	if f.err != nil {
		return nil, fmt.Errorf("%s: %w", h, f.err)
	}
	return out, nil
}

// DecodeDetail decodes the record of one agent run: a detail node's
// payload, or a detail-run node's (whose session fills in
// Detail.Session). The error wraps [cas.ErrInvalid] for a node of any
// other type.
func DecodeDetail(n cas.Node) (*Detail, error) {
	if n.Type != cas.DetailSchema && n.Type != cas.DetailRunSchema {
		return nil, fmt.Errorf("%w: not a detail node (type %s)", cas.ErrInvalid, n.Type)
	}
	f := newFields(n.Payload)
	d := &Detail{Prompt: f.hash("prompt"), Raw: f.hash("raw"), Stderr: f.hash("stderr"), EdgePrompt: f.str("edgePrompt"),
		Attempts: f.hashes("attempts"), ExitCode: int(f.int("exitCode")), DurationMs: f.int("durationMs")}
	if n.Type == cas.DetailRunSchema && f.err == nil {
		if v, ok := f.m["runBy"]; ok {
			rm, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: field \"runBy\" is not an object", cas.ErrInvalid)
			}
			rf := newFields(rm)
			d.RunBy = &RunBy{Worker: rf.str("worker"), Build: rf.str("build"), Attempt: int(rf.int("attempt"))}
			if rf.err != nil {
				return nil, fmt.Errorf("runBy: %w", rf.err)
			}
		}
		v, ok := f.m["session"]
		if !ok {
			if d.RunBy == nil {
				return nil, fmt.Errorf("%w: a detail-run node with neither \"session\" nor \"runBy\"", cas.ErrInvalid)
			}
			return d, nil
		}
		sm, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: field \"session\" is not an object", cas.ErrInvalid)
		}
		sf := newFields(sm)
		d.Session = &Session{Tool: sf.str("tool"), ID: sf.str("id"), Model: sf.str("model"),
			InputTokens: sf.int("inputTokens"), OutputTokens: sf.int("outputTokens"), CacheReadTokens: sf.int("cacheReadTokens"),
			CacheWriteTokens: sf.int("cacheWriteTokens"), ReasoningTokens: sf.int("reasoningTokens"), Turns: sf.int("turns")}
		if v, ok := sm["costUSD"]; ok {
			c, ok := v.(float64)
			if !ok || c < 0 {
				sf.fail("costUSD", "a non-negative number")
			}
			d.Session.CostUSD = c
		}
		if sf.err != nil {
			return nil, fmt.Errorf("session: %w", sf.err)
		}
	}
	return d, f.err
}

// DecodeFailure decodes a failure node's payload.
func DecodeFailure(n cas.Node) (*Failure, error) {
	if n.Type != cas.FailureSchema {
		return nil, fmt.Errorf("%w: not a failure node (type %s)", cas.ErrInvalid, n.Type)
	}
	f := newFields(n.Payload)
	fl := &Failure{Thread: f.str("thread"), Head: f.hash("head"), Role: f.str("role"), Agent: f.str("agent"),
		Detail: f.hash("detail"), Error: f.str("error"), At: f.int("at")}
	return fl, f.err
}
