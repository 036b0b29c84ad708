package thread

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uncaged/uwf/cas"
)

// The JSON shapes below are the stable --json output of `uwf thread` and
// `uwf step` (docs/CLI.md) and the bodies of the HTTP API's thread routes
// (docs/HTTP.md): both build them here, so they cannot drift apart.

// InfoJSON is a thread as `thread list --json` prints it.
type InfoJSON struct {
	ID           string   `json:"id"`
	Status       string   `json:"status"`
	Depth        int      `json:"depth"`
	Head         cas.Hash `json:"head"`
	Workflow     cas.Hash `json:"workflow"`
	WorkflowName string   `json:"workflowName"`
	Created      int64    `json:"created"` // Unix ms
	Updated      int64    `json:"updated"` // Unix ms: when the head was written
	// Run is what the work queue does with it: queued, running, retrying,
	// failed or none (a word apart from its status).
	Run string `json:"run"`
}

// ShowJSON is `thread show --json`: a list element and more. Every field is
// always present; session, lastFailure, lastFailure.session and
// origin.thread are null when there is none.
//
// A branch thread also has parent (the call it runs under), and a thread
// in a call (its branches running, failed or suspended) branches; both are
// absent otherwise.
type ShowJSON struct {
	InfoJSON
	Prompt      string       `json:"prompt"`
	Origin      OriginJSON   `json:"origin"`
	LastFailure *FailureJSON `json:"lastFailure"`
	// RunRecord is its run record (runs/<id>), null when its run is none.
	RunRecord *RunJSON        `json:"runRecord"`
	Session   *SessionRunJSON `json:"session"`
	Totals    TotalsJSON      `json:"totals"`
	Parent    *ParentJSON     `json:"parent,omitempty"`
	Branches  []BranchJSON    `json:"branches,omitempty"`
	// ChildCount counts the branches of every call on the chain, joined
	// or pending; Children lists the newest [ShowChildren] of them (the
	// rest: `thread list --parent <id> --offset N`). Both absent for a
	// thread that made no call.
	ChildCount int         `json:"childCount,omitempty"`
	Children   []ChildJSON `json:"children,omitempty"`
}

// ChildJSON is a child of a thread, in [ShowJSON]: a branch of a call on
// its chain.
type ChildJSON struct {
	BranchJSON
	Joined   bool     `json:"joined"`
	Call     cas.Hash `json:"call"`
	CallRole string   `json:"callRole"`
	Mode     string   `json:"mode"`
	Depth    int      `json:"depth"` // the call's
}

// ParentJSON is the call a branch thread runs under, in [ShowJSON].
type ParentJSON struct {
	Thread string   `json:"thread"` // "" if its log no longer says
	Call   cas.Hash `json:"call"`
	Key    string   `json:"key"`
}

// BranchJSON is a branch of the call a thread is in, in [ShowJSON].
type BranchJSON struct {
	Key    string   `json:"key"`
	Role   string   `json:"role,omitempty"`
	Thread string   `json:"thread"`
	Head   cas.Hash `json:"head,omitzero"`
	Status string   `json:"status"`
}

// RunJSON is a thread's run record, in [ShowJSON] and `uwf worker`'s
// listings: the run node's fields and its hash. Times are Unix ms by the
// store's clock.
type RunJSON struct {
	Hash          cas.Hash `json:"hash"`
	State         string   `json:"state"`
	Workflow      string   `json:"workflow"`
	Worker        string   `json:"worker"`
	Expiry        int64    `json:"expiry"`
	Attempt       int      `json:"attempt"`
	Failures      int      `json:"failures"`
	Agent         string   `json:"agent"`
	Cwd           string   `json:"cwd"`
	WhyNotClaimed string   `json:"whyNotClaimed"`
	Error         string   `json:"error"`
	At            int64    `json:"at"`
}

// JSON returns the run record as [ShowJSON] shows it (nil for nil).
func (r *Run) JSON() *RunJSON {
	if r == nil {
		return nil
	}
	return &RunJSON{Hash: r.Hash, State: r.State, Workflow: r.Workflow, Worker: r.Worker, Expiry: r.Expiry,
		Attempt: r.Attempt, Failures: r.Failures, Agent: r.Agent, Cwd: r.Cwd, WhyNotClaimed: r.WhyNotClaimed,
		Error: r.Error, At: r.At}
}

// SessionRunJSON is the session of a thread's last run, in [ShowJSON]: the step
// (or suspension mark) and what its agent reported.
type SessionRunJSON struct {
	Node  cas.Hash `json:"node"`
	Depth int      `json:"depth"`
	SessionJSON
}

// TotalsJSON is the totals of the sessions a thread's runs reported (its
// steps and suspensions, fork ancestry included; failed runs not), in
// [ShowJSON]. Every field is always present.
type TotalsJSON struct {
	Steps            int     `json:"steps"`    // step nodes on the chain
	Sessions         int64   `json:"sessions"` // runs that reported a session
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	ReasoningTokens  int64   `json:"reasoningTokens"`
	Turns            int64   `json:"turns"`
	CostUSD          float64 `json:"costUSD"`
}

// OriginJSON is where a thread came from, in [ShowJSON].
type OriginJSON struct {
	Node   cas.Hash `json:"node"`
	Depth  int      `json:"depth"`
	Forked bool     `json:"forked"`
	Thread *string  `json:"thread"`
}

// FailureJSON is a thread's last failure, in [ShowJSON].
type FailureJSON struct {
	Hash   cas.Hash `json:"hash"`
	Head   cas.Hash `json:"head"`
	Role   string   `json:"role"`
	Agent  string   `json:"agent"`
	Detail cas.Hash `json:"detail"`
	Error  string   `json:"error"`
	At     int64    `json:"at"`
	// Session is what the failed run's agent reported; null if nothing.
	Session *SessionJSON `json:"session"`
}

// JSON returns the thread as a list element.
func (info *Info) JSON() InfoJSON {
	return InfoJSON{ID: info.ID, Status: info.Status, Depth: info.Depth, Head: info.Head, Workflow: info.Workflow,
		WorkflowName: info.WorkflowName, Created: info.Created.UnixMilli(), Updated: info.Updated.UnixMilli(),
		Run: RunState(info.Run)}
}

// ShowJSON returns the thread as `thread show --json` prints it.
func (info *Info) ShowJSON() ShowJSON {
	o := info.Origin
	t := ShowJSON{InfoJSON: info.JSON(), Prompt: info.Prompt,
		Origin: OriginJSON{Node: o.Node, Depth: o.Depth, Forked: o.Forked}, RunRecord: info.Run.JSON()}
	if o.ForkThread != "" {
		t.Origin.Thread = &o.ForkThread
	}
	if p := info.Parent; p != nil {
		t.Parent = &ParentJSON{Thread: p.Thread, Call: p.Call, Key: p.Key}
	}
	for _, b := range info.Branches {
		t.Branches = append(t.Branches, BranchJSON{Key: b.Key, Role: b.Role, Thread: b.Thread, Head: b.Head, Status: b.Status})
	}
	t.ChildCount = info.ChildCount
	for _, b := range info.Children {
		t.Children = append(t.Children, ChildJSON{BranchJSON: BranchJSON{Key: b.Key, Role: b.Role, Thread: b.Thread, Head: b.Head, Status: b.Status},
			Joined: b.Joined, Call: b.Call, CallRole: b.CallRole, Mode: b.Mode, Depth: b.Depth})
	}
	if f := info.LastFailure; f != nil {
		t.LastFailure = &FailureJSON{Hash: info.FailureHash, Head: f.Head, Role: f.Role, Agent: f.Agent, Detail: f.Detail, Error: f.Error, At: f.At,
			Session: info.FailureSession.JSON()}
	}
	if r := info.LastRun; r != nil && r.Session != nil {
		t.Session = &SessionRunJSON{Node: r.Node, Depth: r.Depth, SessionJSON: *r.Session.JSON()}
	}
	u := info.Usage
	t.Totals = TotalsJSON{Steps: info.Steps, Sessions: u.Sessions, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens,
		Turns: u.Turns, CostUSD: u.CostUSD()}
	return t
}

// EntryJSON is a chain node as `thread steps --json` lists it.
type EntryJSON struct {
	Depth  int      `json:"depth"`
	Hash   cas.Hash `json:"hash"`
	Kind   string   `json:"kind"`
	Role   string   `json:"role,omitempty"`
	Agent  string   `json:"agent,omitempty"`
	Status string   `json:"status,omitempty"`
	Mark   string   `json:"mark,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Time   int64    `json:"time,omitempty"`
	Mode   string   `json:"mode,omitempty"` // a call's or join's: child, parallel or race
}

// JSON returns the entry as `thread steps --json` lists it.
func (n *StepEntry) JSON() EntryJSON {
	en := EntryJSON{Depth: n.Depth(), Hash: n.Hash, Kind: n.Kind, Status: n.Status}
	switch n.Kind {
	case KindStep:
		en.Role, en.Agent, en.Time = n.Step.Role, n.Step.Agent, n.Step.CompletedAt
	case KindMark:
		en.Mark, en.Reason, en.Time = n.Mark.Mark, n.Mark.Reason, n.Mark.At
	case KindCall:
		en.Role, en.Mode, en.Time = n.Call.Role, n.Call.Mode, n.Call.At
	case KindJoin:
		en.Role, en.Time = n.Join.Role, n.Join.At
	}
	return en
}

// HashOrNull is a hash in JSON output that may be absent: null when zero.
type HashOrNull cas.Hash

// MarshalJSON returns the hash as a JSON string, or null if it is zero.
func (h HashOrNull) MarshalJSON() ([]byte, error) {
	if h == 0 {
		return []byte("null"), nil
	}
	return []byte(`"` + cas.Hash(h).String() + `"`), nil
}

// StepJSON is `step show --json`: a step with its output and detail
// expanded.
type StepJSON struct {
	Hash        cas.Hash        `json:"hash"`
	Start       cas.Hash        `json:"start"`
	Prev        HashOrNull      `json:"prev"`
	Skip        []string        `json:"skip"`
	Depth       int             `json:"depth"`
	Role        string          `json:"role"`
	Agent       string          `json:"agent"`
	StartedAt   int64           `json:"startedAt"`
	CompletedAt int64           `json:"completedAt"`
	Output      cas.Hash        `json:"output"`
	OutputType  cas.Hash        `json:"outputType"`
	Value       json.RawMessage `json:"value"`
	Detail      cas.Hash        `json:"detail"`
	EdgePrompt  string          `json:"edgePrompt"`
	ExitCode    int             `json:"exitCode"`
	DurationMs  int64           `json:"durationMs"`
	Prompt      string          `json:"prompt"`
	Raw         string          `json:"raw"`
	Stderr      string          `json:"stderr"`
	Attempts    []string        `json:"attempts"`
	// Session is what the agent reported of its session (a detail-run
	// node); absent if nothing.
	Session *SessionJSON `json:"session,omitempty"`
	// RunBy is the lease holder that ran the agent (a detail-run node);
	// absent for a run under no lease.
	RunBy *RunByJSON `json:"runBy,omitempty"`
}

// RunByJSON is who ran a step's agent under a lease, in [StepJSON].
type RunByJSON struct {
	Worker  string `json:"worker"`
	Build   string `json:"build,omitempty"`
	Attempt int    `json:"attempt"`
}

// JSON returns r as [StepJSON] shows it (nil for nil).
func (r *RunBy) JSON() *RunByJSON {
	if r == nil {
		return nil
	}
	return &RunByJSON{Worker: r.Worker, Build: r.Build, Attempt: r.Attempt}
}

// SessionJSON is a detail's session in JSON, as the detail-run node
// holds it: fields not reported are absent.
type SessionJSON struct {
	Tool             string  `json:"tool"`
	ID               string  `json:"id,omitempty"`
	Model            string  `json:"model,omitempty"`
	InputTokens      int64   `json:"inputTokens,omitempty"`
	OutputTokens     int64   `json:"outputTokens,omitempty"`
	CacheReadTokens  int64   `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64   `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  int64   `json:"reasoningTokens,omitempty"`
	CostUSD          float64 `json:"costUSD,omitempty"`
	Turns            int64   `json:"turns,omitempty"`
}

// JSON returns the session as SessionJSON; nil for nil.
func (s *Session) JSON() *SessionJSON {
	if s == nil {
		return nil
	}
	return &SessionJSON{s.Tool, s.ID, s.Model, s.InputTokens, s.OutputTokens, s.CacheReadTokens, s.CacheWriteTokens, s.ReasoningTokens, s.CostUSD, s.Turns}
}

// JSON returns the step view as `step show --json` prints it.
func (v *StepView) JSON() (*StepJSON, error) {
	st, d := v.Step, v.Detail
	payload, err := cas.Canonical(v.Output.Payload)
	if err != nil {
		return nil, fmt.Errorf("step %s: output %s: %w", v.Hash, st.Output, err)
	}
	skip := make([]string, len(st.Skip))
	for i, sh := range st.Skip {
		skip[i] = sh.String()
	}
	attempts := v.Attempts
	if attempts == nil {
		attempts = []string{}
	}
	return &StepJSON{v.Hash, st.Start, HashOrNull(st.Prev), skip, st.Depth, st.Role, st.Agent, st.StartedAt, st.CompletedAt,
		st.Output, v.Output.Type, payload, st.Detail, d.EdgePrompt, d.ExitCode, d.DurationMs, v.Prompt, v.Raw, v.Stderr, attempts, d.Session.JSON(), d.RunBy.JSON()}, nil
}

// ReadingJSON is `thread read --json`.
type ReadingJSON struct {
	Text   string     `json:"text"`
	Shown  int        `json:"shown"`
	More   bool       `json:"more"`
	Oldest HashOrNull `json:"oldest"`
}

// JSON returns the reading as `thread read --json` prints it.
func (r *Reading) JSON() ReadingJSON {
	return ReadingJSON{r.Text, r.Shown, r.More, HashOrNull(r.Oldest)}
}

// PageJSON is a page of a thread's chain, newest first, as the HTTP API's
// GET /api/v1/threads/{id}/steps answers.
type PageJSON struct {
	Thread string      `json:"thread"`
	Steps  []EntryJSON `json:"steps"`
	More   bool        `json:"more"`   // older entries exist
	Oldest HashOrNull  `json:"oldest"` // the last entry: pass it as before for the next page
}

// Page returns up to limit nodes of thread id's chain, newest first, older
// than chain node before (zero: from the head), each with its output's
// status. The error wraps [cas.ErrNotFound] if the thread or before is
// absent, and [cas.ErrInvalid] if before is not a node of the thread's
// chain.
func (e *Engine) Page(ctx context.Context, id string, before cas.Hash, limit int) (*PageJSON, error) {
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	head, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	from := head
	p := &PageJSON{Thread: id, Steps: []EntryJSON{}}
	if !before.IsZero() {
		bn, err := e.Node(ctx, before)
		if err != nil {
			return nil, fmt.Errorf("before %s: %w", before, err)
		}
		hn, err := e.Node(ctx, head)
		if err != nil {
			return nil, err
		}
		if bn.Kind == KindStart {
			if bn.Hash != hn.StartHash() {
				return nil, fmt.Errorf("before %s: %w: not a node of thread %s", before, cas.ErrInvalid, id)
			}
			return p, nil
		}
		if bn.Chain() == nil || bn.Depth() > hn.Depth() || bn.StartHash() != hn.StartHash() {
			return nil, fmt.Errorf("before %s: %w: not a node of thread %s", before, cas.ErrInvalid, id)
		}
		an, err := e.Ancestor(ctx, head, bn.Depth())
		if err != nil {
			return nil, err
		}
		if an.Hash != before {
			return nil, fmt.Errorf("before %s: %w: not a node of thread %s", before, cas.ErrInvalid, id)
		}
		from = prevOf(bn)
	}
	for n, err := range e.NewestFirst(ctx, from) {
		if err != nil {
			return nil, err
		}
		if len(p.Steps) == limit {
			p.More = true
			break
		}
		en := &StepEntry{Node: n}
		if n.Step != nil {
			out, err := e.repo.Get(ctx, n.Step.Output)
			if err != nil {
				return nil, fmt.Errorf("step %s: output %s: %w", n.Hash, n.Step.Output, err)
			}
			en.Status = outputStatus(out.Payload)
		}
		p.Steps = append(p.Steps, en.JSON())
		p.Oldest = HashOrNull(n.Hash)
	}
	return p, nil
}

// StartJSON is `thread start --json`: the new thread, its head (the start
// node) and its workflow.
type StartJSON struct {
	Thread   string   `json:"thread"`
	Head     cas.Hash `json:"head"`
	Workflow cas.Hash `json:"workflow"`
	Key      string   `json:"key,omitempty"`      // the start key, with --key
	Existing bool     `json:"existing,omitempty"` // the key was taken: the thread started under it
}

// ForkJSON is `thread fork --json`: the new thread and its head.
type ForkJSON struct {
	Thread string   `json:"thread"`
	Head   cas.Hash `json:"head"`
}

// RemovedJSON is `thread rm --json`.
type RemovedJSON struct {
	Thread  string `json:"thread"`
	Removed bool   `json:"removed"`
}
