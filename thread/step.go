package thread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/extract"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
)

// Defaults of [RunOptions].
const (
	DefaultRetries  = 2   // agent retries after an extraction failure, when no model is configured
	DefaultMaxSteps = 100 // the step limit of a workflow without maxSteps
)

// RunOptions configure [Engine.Step], [Engine.StepN] and [Engine.Run].
// The zero value runs with no config (the built-in agents only).
type RunOptions struct {
	// Agent names the agent for every role (the --agent flag); "" uses the
	// config's agentOverrides, then its defaultAgent.
	Agent string
	// Config is the uwf configuration; nil means an empty one.
	Config *config.Config
	// Home and Store are given to agent commands as UWF_HOME and
	// UWF_STORE, Durability ("strict", "none" or "" for the URL's) as
	// UWF_DURABILITY: what an agent needs to open the store as uwf did.
	Home, Store, Durability string
	// Quota is the character quota of the thread so far in prompts; 0
	// means DefaultQuota.
	Quota int
	// Retries is how many times the agent is asked again, with a
	// correction, after its output failed extraction; 0 means
	// DefaultRetries, a negative value none.
	Retries int
	// Seed seeds the synth agent.
	Seed int64
	// HumanIn and HumanOut are the human agent's terminal; HumanInput, if
	// set, is a file holding its answer instead (for scripts).
	HumanIn    io.Reader
	HumanOut   io.Writer
	HumanInput string
	// HTTPClient is used by the llm agent and LLM extraction; nil means
	// their own.
	HTTPClient *http.Client
	// MaxSteps is the step limit of a workflow without maxSteps; 0 means
	// DefaultMaxSteps. A workflow's own maxSteps always wins.
	MaxSteps int
	// Secrets are values to mask, besides those uwf knows: the
	// password of Store and Config's [config.Config.Secrets].
	// Everything recorded from an agent (its raw output, stderr, failed
	// attempts, the error of a failed run) has each known secret of at
	// least 8 bytes replaced by "********" before it is extracted or
	// stored, so the stored output and routing see the masked text.
	Secrets []string
	// Progress, if set, is called as the step loop goes.
	Progress func(Event)
	// BranchLease configures the leases the branches of a call run
	// under (composition); nil means the defaults.
	BranchLease *LeaseOptions
	// ObeySlots makes the branches of a call take slots of their own
	// workflow when it has a maxRunning cap (waiting for one), as a
	// worker's runs do; Slot is the slot the stepped thread's run holds
	// (nil: none), which a call gives back while its branches run and
	// takes again before its join (see [SlotHold]).
	ObeySlots bool
	Slot      *SlotHold
}

// Event types of [Event].
const (
	EventRunning   = "running"   // an agent started on a role
	EventStep      = "step"      // a step was committed
	EventDone      = "done"      // the thread reached $END
	EventSuspended = "suspended" // the agent asked for a human ($SUSPEND): the thread was suspended
	EventLimit     = "limit"     // the step limit (maxSteps) was reached: the thread was suspended
	EventFailed    = "failed"    // a step failed and moved nothing
	EventRetry     = "retry"     // the agent is asked again after an extraction failure
	EventCall      = "call"      // a call was committed: its branches start (composition)
)

// Event reports progress of the step loop.
type Event struct {
	Type    string        `json:"type"`
	Thread  string        `json:"thread"`
	Depth   int           `json:"depth"`
	Role    string        `json:"role,omitempty"`
	Agent   string        `json:"agent,omitempty"`
	Status  string        `json:"status,omitempty"` // the output's status, for a step
	Head    cas.Hash      `json:"head,omitzero"`
	Elapsed time.Duration `json:"-"`
	Ms      int64         `json:"elapsedMs"`
	Error   string        `json:"error,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Limit   int           `json:"limit,omitempty"` // the step limit, for a limit event
	// Branch is set for an event of a branch thread of a call: its key
	// (keys joined by "/" for nested branches); Thread is the branch's.
	Branch string `json:"branch,omitempty"`
}

// StepResult is what one cycle of [Engine.Step] did.
type StepResult struct {
	Thread string
	Kind   string   // EventStep, EventDone, EventSuspended or EventLimit
	Head   cas.Hash // the new head
	Depth  int
	Role   string // the role that ran ("" for a done mark or a step limit)
	Agent  string
	Status string // the output's status
	Reason string // the mark's reason, for a done mark, a suspension or a step limit
	// Timings says where the step's time went.
	Timings Timings
}

// Timings break a step's time down: Context (reading the head, the chain
// back to the last step, the workflow, routing, the thread so far, the
// prompt), Agent (the agent's runs), Extract (reading its output), Store
// (deriving the new step's step-cache entry) and Commit (putting the step's
// nodes, one flush point, with the entry, and moving the head: one atomic
// step, and one round trip, on PostgreSQL).
type Timings struct {
	Context, Agent, Extract, Store, Commit time.Duration
}

// StepError is a step that failed: the agent failed, or its output could
// not be extracted. Nothing moved; the failure node (its detail keeps every
// raw output) is at Failure, kept alive by the ref failures/<thread>. It
// wraps the cause ([agent.ErrFailed] or [extract.ErrExtract]).
type StepError struct {
	Thread  string
	Role    string
	Agent   string
	Failure cas.Hash
	Err     error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("thread %s: role %s (agent %s) failed: %v (failure %s)", e.Thread, e.Role, e.Agent, e.Err, e.Failure)
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// loadedWorkflow is a workflow with the hashes of its role schemas.
type loadedWorkflow struct {
	hash    cas.Hash
	wf      *registry.Workflow
	schemas map[string]cas.Hash // role -> schema node
}

// maxCachedWorkflows bounds an engine's cache of loaded workflows.
const maxCachedWorkflows = 64

func (e *Engine) loadWorkflow(ctx context.Context, h cas.Hash) (*loadedWorkflow, error) {
	if lw := e.cachedWorkflow(h); lw != nil {
		return lw, nil
	}
	st, err := e.reg.LoadStored(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", h, err)
	}
	lw := &loadedWorkflow{hash: h, wf: st.Workflow, schemas: st.Schemas}
	if e.cacheSize > 0 {
		e.wfMu.Lock()
		if e.workflows == nil || len(e.workflows) >= maxCachedWorkflows {
			e.workflows = map[cas.Hash]*loadedWorkflow{}
		}
		e.workflows[h] = lw
		e.wfMu.Unlock()
	}
	return lw, nil
}

// cachedWorkflow returns the workflow at h if the engine keeps it loaded,
// else nil.
func (e *Engine) cachedWorkflow(h cas.Hash) *loadedWorkflow {
	if e.cacheSize <= 0 {
		return nil
	}
	e.wfMu.Lock()
	defer e.wfMu.Unlock()
	return e.workflows[h]
}

// position is what the step loop needs to know about where a thread is.
type position struct {
	head     *Node
	start    *Node
	lastStep *Node  // the newest step or join; nil if none since the start
	call     *Node  // the call the thread is in (not yet joined); nil if none
	resume   string // resumed texts since the last step, oldest first
}

// locate walks the chain back from head to its last step (or its start),
// collecting the resume texts on the way.
func (e *Engine) locate(ctx context.Context, head *Node) (*position, error) {
	p := &position{head: head}
	var resumes []string
	for n, err := range e.NewestFirst(ctx, head.Hash) {
		if err != nil {
			return nil, err
		}
		if _, _, ok := n.routed(); ok {
			p.lastStep = n
			break
		}
		if n.Kind == KindCall {
			p.call = n
			break
		}
		if n.Kind == KindMark && n.Mark.Mark == MarkResumed && n.Mark.Reason != "" {
			resumes = append(resumes, n.Mark.Reason)
		}
	}
	if p.lastStep == nil && head.Kind == KindStart {
		p.start = head
	} else {
		start, err := e.Node(ctx, head.StartHash())
		if err != nil {
			return nil, err
		}
		p.start = start
	}
	slices.Reverse(resumes)
	p.resume = strings.Join(resumes, "\n\n")
	return p, nil
}

// counts returns how many steps the chain ending at head has, and how many
// of them role ran: what the synth and replay agents need. They come from
// the step cache (see [Engine.entry]).
func (e *Engine) counts(ctx context.Context, head *Node, role string) (steps, roleRuns int, err error) {
	ce, err := e.entry(ctx, head)
	if err != nil {
		return 0, 0, err
	}
	return ce.Steps, ce.Roles[role], nil
}

// stepsSinceBase counts the steps since the thread's start, its last
// resumed mark or its fork point (the node of the chain at depth base),
// whichever is latest, stopping at limit. ce is head's step-cache entry;
// only a base past the last resumed mark needs a node read: the node at
// depth base, found through the skip pointers.
func (e *Engine) stepsSinceBase(ctx context.Context, head *Node, ce *chainEntry, base int, limit int) (int, error) {
	if base <= ce.ResumeDepth || head.Kind == KindStart {
		return min(ce.SinceResume, limit), nil
	}
	if base >= head.Depth() {
		return 0, nil
	}
	bn, err := e.Ancestor(ctx, head.Hash, base)
	if err != nil {
		return 0, err
	}
	be, err := e.entry(ctx, bn)
	if err != nil {
		return 0, err
	}
	return min(ce.Steps-be.Steps, limit), nil
}

// StepN runs up to n cycles of [Engine.Step] (n <= 0: until the thread is
// no longer active), stopping at the first error, done or suspension. Even
// with n <= 0 it is bounded: the step limit (the workflow's maxSteps, or
// [RunOptions.MaxSteps]) suspends the thread.
func (e *Engine) StepN(ctx context.Context, id string, n int, opts *RunOptions) ([]*StepResult, error) {
	var out []*StepResult
	for i := 0; n <= 0 || i < n; i++ {
		r, err := e.Step(ctx, id, opts)
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if r.Kind != EventStep {
			break
		}
	}
	return out, nil
}

// Run starts a thread of workflow with prompt and steps it until it is
// done, suspended (by its agent or its step limit) or fails.
//
// Before it creates the thread it checks that every role of the workflow
// has an agent that can run: the error wraps [agent.ErrUnknownAgent]
// (and so [cas.ErrNotFound]) for a name that is neither configured nor
// built in, [agent.ErrNoAgent] when nothing names one, [cas.ErrNotFound]
// for replay:<thread> of a thread that does not exist, [os/exec.ErrNotFound]
// (or an [io/fs] error) for a command that cannot be found from cwd; it also
// refuses llm without a model and human without a terminal. Then no
// thread is created and the returned id is "".
func (e *Engine) Run(ctx context.Context, workflow cas.Hash, prompt, cwd string, opts *RunOptions) (string, []*StepResult, error) {
	if opts == nil {
		opts = &RunOptions{}
	}
	lw, err := e.loadWorkflow(ctx, workflow)
	if err != nil {
		return "", nil, err
	}
	if err := e.checkAgents(ctx, lw.wf, cwd, opts); err != nil {
		return "", nil, err
	}
	id, _, err := e.Start(ctx, workflow, prompt, cwd)
	if err != nil {
		return "", nil, err
	}
	rs, err := e.StepN(ctx, id, 0, opts)
	return id, rs, err
}

// CheckRun checks, as [Engine.Run] does before it creates a thread, that
// workflow can be read and every role of it has an agent that can run
// from cwd with opts, without writing anything. The errors are Run's.
func (e *Engine) CheckRun(ctx context.Context, workflow cas.Hash, cwd string, opts *RunOptions) error {
	if opts == nil {
		opts = &RunOptions{}
	}
	lw, err := e.loadWorkflow(ctx, workflow)
	if err != nil {
		return err
	}
	return e.checkAgents(ctx, lw.wf, cwd, opts)
}

// CheckAgent checks the agent named by opts.Agent (the --agent flag), if
// any, without running anything: the error wraps
// [agent.ErrUnknownAgent] (and so [cas.ErrNotFound]) for a name that is
// neither configured nor built in, [ErrInvalidID] for replay: with a bad
// thread id, [cas.ErrNotFound] for replay:<thread> of a thread that does
// not exist. [Engine.Step] and [Engine.Run] check it before they write
// anything.
func (e *Engine) CheckAgent(ctx context.Context, opts *RunOptions) error {
	if opts == nil || opts.Agent == "" {
		return nil
	}
	name, _, err := agent.Resolve(opts.Config, "", "", opts.Agent)
	if err != nil {
		return err
	}
	return agent.CheckName(ctx, name, e.agentOptions("", "", opts))
}

// agentOptions are what building an agent for role of workflow needs.
func (e *Engine) agentOptions(workflow, role string, opts *RunOptions) *agent.Options {
	return &agent.Options{
		Config: opts.Config, Workflow: workflow, Role: role, Seed: opts.Seed,
		HumanIn: opts.HumanIn, HumanOut: opts.HumanOut, HumanInput: opts.HumanInput,
		HTTPClient: opts.HTTPClient, Threads: threads{e},
	}
}

// checkAgents checks that every role of wf has an agent that can run from
// cwd.
func (e *Engine) checkAgents(ctx context.Context, wf *registry.Workflow, cwd string, opts *RunOptions) error {
	if err := e.CheckAgent(ctx, opts); err != nil {
		return err
	}
	checked := map[string]bool{}
	for _, role := range slices.Sorted(maps.Keys(wf.Roles)) {
		if wf.Roles[role].Mode() != "" {
			continue // run by a child workflow or a stage's members, not an agent
		}
		name, spec, err := agent.Resolve(opts.Config, wf.Name, role, opts.Agent)
		if err != nil {
			return fmt.Errorf("role %s: %w", role, err)
		}
		if checked[name] {
			continue
		}
		checked[name] = true
		if err := agent.Check(ctx, name, spec, cwd, e.agentOptions(wf.Name, role, opts)); err != nil {
			return fmt.Errorf("role %s: %w", role, err)
		}
	}
	return nil
}

// maxSteps returns the step limit of wf and the reason a suspension at it
// gives.
func maxSteps(wf *registry.Workflow, opts *RunOptions) (int, string) {
	if wf.MaxSteps > 0 {
		return wf.MaxSteps, fmt.Sprintf("maxSteps (%d) reached", wf.MaxSteps)
	}
	limit := opts.MaxSteps
	if limit <= 0 {
		limit = DefaultMaxSteps
	}
	return limit, fmt.Sprintf("step limit reached: %d steps, the default for a workflow without maxSteps", limit)
}

// Mask returns s with every secret opts knows (its Secrets, the store
// URL's password, the config's secrets) masked, as a step masks what it
// records: for text a caller records itself, such as a worker's reason
// for not claiming a thread.
func (opts *RunOptions) Mask(s string) string {
	if opts == nil {
		return s
	}
	return masker(opts).String(s)
}

// MaskError is [RunOptions.Mask] for an error: one whose message is
// masked and which unwraps to err (nil stays nil).
func (opts *RunOptions) MaskError(err error) error {
	if opts == nil {
		return err
	}
	return masker(opts).Error(err)
}

// masker returns the masker of one step: the known secrets of opts.
func masker(opts *RunOptions) *secret.Masker {
	m := secret.New(opts.Secrets...)
	m.Add(secret.URLPasswords(opts.Store)...)
	if opts.Config != nil {
		m.Add(opts.Config.Secrets()...)
	}
	return m
}

// Step runs one cycle on thread id: moderator -> agent -> extract -> put
// the output, detail and step nodes (one flush point) -> compare-and-swap
// the head. Routing to $END appends a done mark; an agent answering
// $SUSPEND appends a suspended mark (result kind EventSuspended); reaching
// the step limit (the workflow's maxSteps, or for a workflow without one
// [RunOptions.MaxSteps], default [DefaultMaxSteps], counted since the
// start, the fork point or the last resume) appends a suspended mark whose
// reason names the limit (result kind EventLimit). After a $SUSPEND the
// suspended role runs again (once resumed); after the limit routing
// continues from the last step.
//
// Everything recorded from the agent is masked first (see
// [RunOptions.Secrets]). An unknown opts.Agent is refused before anything
// is read or written (see [Engine.CheckAgent]).
//
// A failure (the agent failed, its output could not be extracted after the
// retries) moves nothing: it records a failure node under
// failures/<thread> and returns a *[StepError]. A thread that moved
// meanwhile gives a *[ConflictError]. A thread that is not active gives an
// error wrapping [ErrNotActive].
//
// A step reads the head, the nodes back to the last step, the start and
// the workflow, and renders the thread so far within the quota; what it
// needs of the rest of the chain (the steps since the last resume or the
// fork point, and for the synth and replay agents the steps and runs of
// the role the chain holds) comes from the step cache, checked against the
// nodes, so its cost does not grow with the thread.
func (e *Engine) Step(ctx context.Context, id string, opts *RunOptions) (*StepResult, error) {
	if opts == nil {
		opts = &RunOptions{}
	}
	began := time.Now()
	ctx = cas.WithReadMemo(ctx)
	id, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	if err := e.CheckAgent(ctx, opts); err != nil {
		return nil, err
	}
	headHash, err := e.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	head, err := e.Node(ctx, headHash)
	if err != nil {
		return nil, err
	}
	switch st := head.Status(); st {
	case StatusActive:
	case StatusSuspended:
		return nil, fmt.Errorf("thread %s: %w: it is suspended (%s); resume it first: uwf thread resume %s -p <text>", id, ErrNotActive, head.Mark.Reason, id)
	default:
		return nil, fmt.Errorf("thread %s: %w: it is %s", id, ErrNotActive, st)
	}
	// On a store with batch reads, fetch what the step reads in a few
	// round trips (see chainFetch): the newest chain nodes with the start,
	// then their steps' details and outputs with the workflow, then the
	// raw outputs with the role schemas.
	if e.repo.CanPrefetch(ctx) {
		// more gives, batch after batch: nothing (the start is in the
		// first), the workflow, its role schemas, then nothing; nothing
		// at all for a workflow the engine keeps loaded.
		var calls int
		var wfDone, schemasDone bool
		more := func() []cas.Hash {
			if calls++; calls == 1 && head.Kind != KindStart {
				return nil
			}
			sn, err := e.Node(ctx, head.StartHash())
			if err != nil || sn.Start == nil || schemasDone || e.cachedWorkflow(sn.Start.Workflow) != nil {
				return nil
			}
			if !wfDone {
				wfDone = true
				return []cas.Hash{sn.Start.Workflow}
			}
			schemasDone = true
			if wn, err := e.repo.Get(ctx, sn.Start.Workflow); err == nil {
				return registry.SchemaHashes(wn)
			}
			return nil
		}
		if head.Kind == KindStart {
			e.repo.Prefetch(ctx, more())
			e.repo.Prefetch(ctx, more())
		} else {
			// The step cache's entries of the head and its predecessor
			// (the counts the synth and replay agents and the step limit
			// read, and the new step's entry derives from) come in the
			// first batch.
			c := head.Chain()
			from := c.Prev
			if from.IsZero() {
				from = c.Start
			}
			keys := []string{chainKey(head.Hash), chainKey(from)}
			e.newChainFetch(ctx, head).fetch(ctx, head.Depth()-stepWindow+1, []cas.Hash{head.StartHash()}, keys, more)
		}
	}
	pos, err := e.locate(ctx, head)
	if err != nil {
		return nil, err
	}
	lw, err := e.loadWorkflow(ctx, pos.start.Start.Workflow)
	if err != nil {
		return nil, err
	}
	wf := lw.wf
	if pos.call != nil {
		// In a call (after a crash, a failed branch or a suspension):
		// go on with its branches.
		return e.runCall(ctx, id, head, pos, lw, opts)
	}
	var d moderator.Decision
	switch {
	case pos.start.Start.Role != "":
		// A stage's branch runs its one role, then ends.
		d = moderator.Decision{From: moderator.Start, Status: moderator.StatusNew, Role: pos.start.Start.Role, Prompt: pos.start.Start.Prompt}
		if pos.lastStep != nil {
			d = moderator.Decision{Role: moderator.End}
		}
	case pos.lastStep == nil:
		d, err = moderator.RouteStart(wf.Graph)
	default:
		role, output, _ := pos.lastStep.routed()
		out, gerr := e.repo.Get(ctx, output)
		if gerr != nil {
			return nil, fmt.Errorf("thread %s: output of %s: %w", id, pos.lastStep.Hash, gerr)
		}
		d, err = moderator.Route(wf.Graph, role, out.Payload)
	}
	if errors.Is(err, moderator.ErrMissingField) {
		// The output fitted its schema, so the schema does not require the
		// field: say where the fix is (docs/WORKFLOWS.md, Prompt templates).
		return nil, fmt.Errorf("thread %s: route: %w: the role's schema does not require it (require it, or leave it out of the edge's prompt)", id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("thread %s: route: %w", id, err)
	}
	if d.Role == moderator.End {
		reason := d.Prompt
		if reason == "" {
			reason = "reached $END"
		}
		h, err := e.appendMarkAfter(ctx, id, head, MarkDone, reason, 0, nil)
		if err != nil {
			return nil, err
		}
		e.progress(opts, Event{Type: EventDone, Thread: id, Depth: head.Depth() + 1, Head: h, Reason: reason})
		return &StepResult{Thread: id, Kind: EventDone, Head: h, Depth: head.Depth() + 1, Reason: reason}, nil
	}
	// Fewer chain nodes than the limit hold fewer steps, and fewer steps
	// since the last resume than the limit fewer since the fork point:
	// no need to find it.
	if limit, reason := maxSteps(wf, opts); head.Depth() >= limit {
		ce, err := e.entry(ctx, head)
		if err != nil {
			return nil, err
		}
		n := ce.SinceResume
		if n >= limit {
			o, err := e.origin(ctx, id, head)
			if err != nil {
				return nil, err
			}
			if n, err = e.stepsSinceBase(ctx, head, ce, o.Depth, limit); err != nil {
				return nil, err
			}
		}
		if n >= limit {
			h, err := e.appendMarkAfter(ctx, id, head, MarkSuspended, reason, 0, nil)
			if err != nil {
				return nil, err
			}
			e.progress(opts, Event{Type: EventLimit, Thread: id, Depth: head.Depth() + 1, Head: h, Reason: reason, Limit: limit})
			return &StepResult{Thread: id, Kind: EventLimit, Head: h, Depth: head.Depth() + 1, Reason: reason}, nil
		}
	}
	if r := wf.Roles[d.Role]; r != nil && r.Mode() != "" {
		return e.call(ctx, id, head, pos, lw, d, opts)
	}
	return e.runRole(ctx, id, head, pos, lw, d, opts, began)
}

func (e *Engine) progress(opts *RunOptions, ev Event) {
	if opts.Progress != nil {
		ev.Ms = ev.Elapsed.Milliseconds()
		opts.Progress(ev)
	}
}

// runRole runs the agent for decision d and commits its step.
func (e *Engine) runRole(ctx context.Context, id string, head *Node, pos *position, lw *loadedWorkflow, d moderator.Decision, opts *RunOptions, began time.Time) (*StepResult, error) {
	var tm Timings
	wf := lw.wf
	role, ok := wf.Roles[d.Role]
	schemaHash, ok2 := lw.schemas[d.Role]
	if !ok || !ok2 {
		return nil, fmt.Errorf("thread %s: workflow %s routes to role %q, which it does not define", id, wf.Name, d.Role)
	}
	schema, err := e.repo.Schema(ctx, schemaHash)
	if err != nil {
		return nil, fmt.Errorf("thread %s: role %s: %w", id, d.Role, err)
	}
	agentName, spec, err := agent.Resolve(opts.Config, wf.Name, d.Role, opts.Agent)
	if err != nil {
		return nil, fmt.Errorf("thread %s: role %s: %w", id, d.Role, err)
	}
	ag, err := agent.New(ctx, agentName, spec, e.agentOptions(wf.Name, d.Role, opts))
	if err != nil {
		return nil, fmt.Errorf("thread %s: role %s: %w", id, d.Role, err)
	}
	var llm extract.JSONExtractor
	if l, err := agent.LLMFor(opts.Config, wf.Name, d.Role, opts.HTTPClient); err == nil {
		llm = l
	}
	reading, err := e.ReadChain(ctx, id, head.Hash, ReadOptions{Quota: opts.Quota})
	if err != nil {
		return nil, err
	}
	parts := agent.PromptParts{
		Workflow: wf.Name, Role: d.Role, Goal: role.Goal, Procedure: role.Procedure, Output: role.Output,
		Schema: role.Frontmatter, EdgePrompt: d.Prompt, Resume: pos.resume, Thread: reading.Text,
	}
	req := &agent.Request{
		Thread: id, Workflow: wf.Name, Role: d.Role, Cwd: pos.start.Start.Cwd, Home: opts.Home, Store: opts.Store,
		Durability: opts.Durability,
		Schema:     role.Frontmatter, Statuses: walkOrder(wf, d.Role),
	}
	if _, ok := ag.(agent.StepCounter); ok {
		if req.StepIndex, req.RoleRuns, err = e.counts(ctx, head, d.Role); err != nil {
			return nil, err
		}
	}
	retries := opts.Retries
	if retries == 0 {
		retries = DefaultRetries
	}
	if llm != nil || retries < 0 {
		retries = 0 // the LLM extraction is the fallback
	}
	mask := masker(opts)
	started := e.now()
	var (
		attempts []string
		res      *agent.Result
		out      *extract.Output
		prompt   string
		failErr  error
	)
	for attempt := 0; ; attempt++ {
		prompt = agent.Assemble(parts)
		req.Prompt, req.Attempt = prompt, attempt
		if attempt == 0 {
			tm.Context = time.Since(began)
		}
		e.progress(opts, Event{Type: EventRunning, Thread: id, Depth: head.Depth() + 1, Role: d.Role, Agent: ag.Name(), Elapsed: e.now().Sub(started)})
		var rerr error
		t0 := time.Now()
		res, rerr = ag.Run(ctx, req)
		tm.Agent += time.Since(t0)
		if rerr != nil {
			var re *agent.RunError
			if errors.As(rerr, &re) && res == nil {
				res = re.Result
			}
			res = maskResult(mask, res)
			if re != nil && re.Result != nil {
				// The error quotes stderr's last line, cut short: quote
				// the masked text, or the cut could split a secret.
				re.Result = res
			}
			if errors.Is(rerr, context.Canceled) {
				return nil, mask.Error(rerr)
			}
			failErr = mask.Error(rerr)
			break
		}
		// Masked before extraction: the output, the body, the stored raw
		// output and routing all see the masked text.
		res = maskResult(mask, res)
		var xerr error
		t0 = time.Now()
		out, xerr = extract.Extract(ctx, res.Raw, schema, llm)
		tm.Extract += time.Since(t0)
		if xerr == nil {
			break
		}
		xerr = mask.Error(xerr)
		if attempt >= retries {
			failErr = xerr
			break
		}
		attempts = append(attempts, res.Raw)
		parts.Correction = extract.CorrectionPrompt(xerr)
		e.progress(opts, Event{Type: EventRetry, Thread: id, Depth: head.Depth() + 1, Role: d.Role, Agent: ag.Name(), Error: xerr.Error(), Elapsed: e.now().Sub(started)})
	}
	completed := e.now()
	if res == nil {
		res = &agent.Result{}
	}
	det, nodes, err := e.detailNodes(prompt, res, attempts, d.Prompt, completed.Sub(started))
	if err != nil {
		return nil, err
	}
	if l := fenceOf(ctx, id); l != nil {
		// Run under a lease: who ran it, for as long as the step lives.
		det.RunBy = &RunBy{Worker: l.Worker(), Build: l.opts.Build, Attempt: l.Attempt()}
	}
	if failErr != nil {
		return nil, e.recordFailure(ctx, id, head.Hash, d.Role, ag.Name(), nodes, det, failErr, opts, head.Depth()+1, completed.Sub(started))
	}
	if out.Suspend {
		hs, err := e.repo.PutNodes(ctx, append(nodes, det.Node()))
		if err != nil {
			return nil, fmt.Errorf("thread %s: store the run: %w", id, err)
		}
		h, err := e.appendMarkAfter(ctx, id, head, MarkSuspended, out.Reason, hs[len(hs)-1], det.Session)
		if err != nil {
			return nil, err
		}
		e.progress(opts, Event{Type: EventSuspended, Thread: id, Depth: head.Depth() + 1, Role: d.Role, Agent: ag.Name(), Head: h, Reason: out.Reason, Elapsed: completed.Sub(started)})
		return &StepResult{Thread: id, Kind: EventSuspended, Head: h, Depth: head.Depth() + 1, Role: d.Role, Agent: ag.Name(), Reason: out.Reason}, nil
	}
	outNode := cas.Node{Type: schemaHash, Payload: out.Value}
	outHash, err := outNode.Hash()
	if err != nil {
		return nil, err
	}
	detNode := det.Node()
	detHash, err := detNode.Hash()
	if err != nil {
		return nil, err
	}
	c, err := e.next(ctx, head)
	if err != nil {
		return nil, err
	}
	step := &Step{Chain: c, Role: d.Role, Output: outHash, Detail: detHash, Agent: ag.Name(),
		StartedAt: started.UnixMilli(), CompletedAt: completed.UnixMilli()}
	stepNode := cas.Node{Type: cas.StepSchema, Payload: step.Payload()}
	nodes = append(nodes, outNode, detNode, stepNode)
	// The nodes, the new step's cache entry and its commit in one (see
	// putCommit): the step node is committed without reading it back.
	t0 := time.Now()
	var entries []cas.DerivedEntry
	if sh, err := stepNode.Hash(); err == nil {
		if he, err := e.entry(ctx, head); err == nil {
			entries = e.followData(he, &Node{Hash: sh, Kind: KindStep, Step: step}, det.Session)
		}
	}
	tm.Store = time.Since(t0)
	t0 = time.Now()
	hs, stored, err := e.putCommit(ctx, id, nodes, &step.Chain, "step "+d.Role, entries)
	if !stored {
		return nil, fmt.Errorf("thread %s: store step %s: %w", id, d.Role, err)
	}
	if err != nil {
		return nil, err
	}
	stepHash := hs[len(hs)-1]
	tm.Commit = time.Since(t0)
	e.log.Debug("step timings", "thread", id, "role", d.Role, "context", tm.Context, "agent", tm.Agent,
		"extract", tm.Extract, "store", tm.Store, "commit", tm.Commit)
	status := outputStatus(out.Value)
	e.progress(opts, Event{Type: EventStep, Thread: id, Depth: c.Depth, Role: d.Role, Agent: ag.Name(), Status: status, Head: stepHash, Elapsed: completed.Sub(started)})
	return &StepResult{Thread: id, Kind: EventStep, Head: stepHash, Depth: c.Depth, Role: d.Role, Agent: ag.Name(), Status: status, Timings: tm}, nil
}

// maskResult returns a copy of res with its raw output and stderr masked
// (nil for nil). Where the agent cut either one ([agent.Result.RawCut],
// [agent.Result.StderrCut]), a secret straddling the cut would leave a part
// that masking does not find: the bytes at the cut that could be such a
// part are dropped first (fewer than the longest secret), and a line at
// the cut says what was dropped.
func maskResult(m *secret.Masker, res *agent.Result) *agent.Result {
	if res == nil {
		return nil
	}
	c := *res
	c.Raw, c.Stderr = m.String(res.Raw), m.String(res.Stderr)
	if res.Session != nil {
		s := *res.Session
		s.Tool, s.ID, s.Model = m.String(s.Tool), m.String(s.ID), m.String(s.Model)
		c.Session = &s
	}
	if res.RawCut {
		kept, n := m.TrimCutEnd(res.Raw)
		c.Raw = m.String(kept)
		if c.Raw != "" && !strings.HasSuffix(c.Raw, "\n") {
			c.Raw += "\n"
		}
		c.Raw += cutNote("output cut here: the rest was dropped", "before", n)
	}
	if res.StderrCut {
		kept, n := m.TrimCutStart(res.Stderr)
		c.Stderr = cutNote("stderr cut here: what came before was dropped", "after", n) + m.String(kept)
	}
	return &c
}

// cutNote is the line recorded at a cut: what was dropped, and the n bytes
// on the other side of the cut dropped as they could hold part of a secret.
func cutNote(what, side string, n int) string {
	if n == 0 {
		return "[... " + what + "]\n"
	}
	return fmt.Sprintf("[... %s, and the %d bytes %s the cut, which could hold part of a secret]\n", what, n, side)
}

// detailNodes builds the content nodes of one run and its detail payload;
// the content nodes come first so a batch can hold them with the detail.
func (e *Engine) detailNodes(prompt string, res *agent.Result, attempts []string, edgePrompt string, took time.Duration) (*Detail, []cas.Node, error) {
	var nodes []cas.Node
	content := func(s string) (cas.Hash, error) {
		n := cas.Node{Type: cas.ContentSchema, Payload: s}
		h, err := n.Hash()
		if err == nil {
			nodes = append(nodes, n)
		}
		return h, err
	}
	det := &Detail{EdgePrompt: edgePrompt, ExitCode: res.ExitCode, DurationMs: took.Milliseconds(), Session: sessionOf(res.Session)}
	var err error
	if det.Prompt, err = content(prompt); err != nil {
		return nil, nil, err
	}
	if det.Raw, err = content(res.Raw); err != nil {
		return nil, nil, err
	}
	if res.Stderr != "" {
		if det.Stderr, err = content(res.Stderr); err != nil {
			return nil, nil, err
		}
	}
	det.Attempts = []cas.Hash{}
	for _, a := range attempts {
		h, err := content(a)
		if err != nil {
			return nil, nil, err
		}
		det.Attempts = append(det.Attempts, h)
	}
	return det, nodes, nil
}

// recordFailure stores the failed run and moves failures/<id> to a failure
// node; it returns the *StepError to report.
func (e *Engine) recordFailure(ctx context.Context, id string, head cas.Hash, role, agentName string, nodes []cas.Node, det *Detail, cause error, opts *RunOptions, depth int, took time.Duration) error {
	nodes = append(nodes, det.Node())
	hs, err := e.repo.PutNodes(ctx, nodes)
	if err != nil {
		return fmt.Errorf("thread %s: %w; and recording the failure failed: %w", id, cause, err)
	}
	f := &Failure{Thread: id, Head: head, Role: role, Agent: agentName, Detail: hs[len(hs)-1], Error: cause.Error(), At: e.nowMs()}
	fh, err := e.repo.Put(ctx, cas.FailureSchema, f.Payload())
	if err != nil {
		return fmt.Errorf("thread %s: %w; and recording the failure failed: %w", id, cause, err)
	}
	name := FailurePrefix + id
	msg := "failure " + role
	if l := fenceOf(ctx, id); l != nil {
		if lerr := l.Check(); lerr != nil {
			return fmt.Errorf("thread %s: %w; the failure is not recorded: %w", id, cause, lerr)
		}
		msg += " (" + l.label() + ")"
	}
	for range 5 {
		cur, gerr := e.refs.Get(ctx, name)
		if gerr != nil && !errors.Is(gerr, cas.ErrNotFound) {
			err = gerr
			break
		}
		if err = e.refs.CompareAndSwap(ctx, name, cur, fh, msg); !errors.Is(err, cas.ErrConflict) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("thread %s: %w; and recording the failure failed: %w", id, cause, err)
	}
	e.progress(opts, Event{Type: EventFailed, Thread: id, Depth: depth, Role: role, Agent: agentName, Error: cause.Error(), Elapsed: took})
	return &StepError{Thread: id, Role: role, Agent: agentName, Failure: fh, Err: cause}
}

// threads gives the replay agent its source thread from the engine's
// store.
type threads struct{ e *Engine }

// CheckThread returns nil if thread id exists.
func (t threads) CheckThread(ctx context.Context, id string) error {
	src, err := ParseID(id)
	if err != nil {
		return err
	}
	_, err = t.e.Head(ctx, src)
	return err
}

// Recorded returns the canonical spelling of id and the recorded raw
// outputs of the thread's steps, oldest first.
func (t threads) Recorded(ctx context.Context, id string) (string, []agent.Recorded, error) {
	e := t.e
	src, err := ParseID(id)
	if err != nil {
		return "", nil, err
	}
	head, err := e.Head(ctx, src)
	if err != nil {
		return "", nil, err
	}
	var steps []agent.Recorded
	for n, err := range e.OldestFirst(ctx, head) {
		if err != nil {
			return "", nil, err
		}
		if n.Kind == KindJoin {
			// A join counts as its role's step: keep the indexes of the
			// steps after it (its branches replay from their own threads).
			steps = append(steps, agent.Recorded{Role: n.Join.Role})
			continue
		}
		if n.Kind != KindStep {
			continue
		}
		rec, err := e.recorded(ctx, n)
		if err != nil {
			return "", nil, fmt.Errorf("step %s: %w", n.Hash, err)
		}
		steps = append(steps, rec)
	}
	return src, steps, nil
}

// recorded reads a step's raw output and failed attempts.
func (e *Engine) recorded(ctx context.Context, n *Node) (agent.Recorded, error) {
	dn, err := e.repo.Get(ctx, n.Step.Detail)
	if err != nil {
		return agent.Recorded{}, err
	}
	d, err := DecodeDetail(dn)
	if err != nil {
		return agent.Recorded{}, err
	}
	rec := agent.Recorded{Role: n.Step.Role}
	if rec.Raw, err = e.content(ctx, d.Raw); err != nil {
		return rec, err
	}
	for _, a := range d.Attempts {
		s, err := e.content(ctx, a)
		if err != nil {
			return rec, err
		}
		rec.Attempts = append(rec.Attempts, s)
	}
	return rec, nil
}

// walkOrder orders a role's statuses for the synth agent: those that loop
// back (to the role itself or to a role from which it is reached again)
// first, so loops are exercised before the thread moves on.
func walkOrder(wf *registry.Workflow, role string) []string {
	statuses := wf.Statuses(role)
	loops := func(target string) bool {
		if target == role {
			return true
		}
		seen := map[string]bool{}
		stack := []string{target}
		for len(stack) > 0 {
			r := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[r] {
				continue
			}
			seen[r] = true
			for _, edge := range wf.Graph[r] {
				if edge.Role == role {
					return true
				}
				stack = append(stack, edge.Role)
			}
		}
		return false
	}
	var first, rest []string
	for _, s := range statuses {
		if edge, ok := wf.Graph[role][s]; ok && loops(edge.Role) {
			first = append(first, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(first, rest...)
}
