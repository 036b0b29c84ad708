package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
)

// These errors can occur when resolving an agent's name. Callers test for
// them with [errors.Is]; the returned errors wrap them with context.
var (
	// ErrUnknownAgent is returned by [Resolve] when the agent asked for is
	// neither configured nor built in. It wraps [cas.ErrNotFound].
	ErrUnknownAgent = fmt.Errorf("unknown agent: %w", cas.ErrNotFound)
	// ErrNoAgent is returned by [Resolve] when no agent is named: no
	// explicit agent, no override and no defaultAgent.
	ErrNoAgent = errors.New("no agent configured")
)

// builtin is one built-in agent: a name that needs no entry in config.yaml.
// Adding a built-in agent is adding an entry to [builtins] (and its type).
type builtin struct {
	// name is what --agent and config.yaml call it; with a parameter the
	// agent is named "name:<value>", and an entry may not be named name.
	name string
	// param names the parameter in messages ("thread"); "" for none.
	param string
	// checkArg checks the parameter before anything runs; nil if none.
	checkArg func(ctx context.Context, fullName, arg string, o *Options) error
	// check checks what running a role needs; nil if nothing.
	check func(o *Options) error
	// make builds the agent.
	make func(ctx context.Context, arg string, o *Options) (Agent, error)
}

// builtins are uwf's built-in agents, sorted by name.
var builtins = []builtin{
	{
		name:  "human",
		check: checkHuman,
		make: func(_ context.Context, _ string, o *Options) (Agent, error) {
			if err := checkHuman(o); err != nil {
				return nil, err
			}
			if o.HumanInput != "" {
				return NewHumanInput(o.HumanInput), nil
			}
			return NewHuman(o.HumanIn, o.HumanOut), nil
		},
	},
	{
		name: "llm",
		check: func(o *Options) error {
			if _, err := LLMFor(o.Config, o.Workflow, o.Role, o.HTTPClient); err != nil {
				return fmt.Errorf("agent llm: %w", err)
			}
			return nil
		},
		make: func(_ context.Context, _ string, o *Options) (Agent, error) {
			return LLMFor(o.Config, o.Workflow, o.Role, o.HTTPClient)
		},
	},
	{
		name:  "replay",
		param: "thread",
		checkArg: func(ctx context.Context, fullName, arg string, o *Options) error {
			if o.Threads == nil {
				return fmt.Errorf("agent %s: no threads to replay from", fullName)
			}
			if err := o.Threads.CheckThread(ctx, arg); err != nil {
				return fmt.Errorf("agent %s: %w", fullName, err)
			}
			return nil
		},
		make: func(ctx context.Context, arg string, o *Options) (Agent, error) {
			if o.Threads == nil {
				return nil, errors.New("replay: no threads to replay from")
			}
			id, steps, err := o.Threads.Recorded(ctx, arg)
			if err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
			return NewReplay(id, steps), nil
		},
	},
	{
		name: "synth",
		make: func(_ context.Context, _ string, o *Options) (Agent, error) {
			return NewSynth(o.Seed), nil
		},
	},
}

func checkHuman(o *Options) error {
	if o.HumanInput == "" && (o.HumanIn == nil || o.HumanOut == nil) {
		return errors.New("the human agent needs a terminal (or --input FILE)")
	}
	return nil
}

// findBuiltin returns the built-in agent that name stands for and its
// parameter's value.
func findBuiltin(name string) (*builtin, string, bool) {
	for i := range builtins {
		b := &builtins[i]
		if b.param == "" {
			if name == b.name {
				return b, "", true
			}
			continue
		}
		if arg, ok := strings.CutPrefix(name, b.name+":"); ok && arg != "" {
			return b, arg, true
		}
	}
	return nil, "", false
}

// IsBuiltin reports whether name is a built-in agent: human, llm, synth,
// or replay:<thread> with a non-empty thread.
func IsBuiltin(name string) bool {
	_, _, ok := findBuiltin(name)
	return ok
}

// builtinSet is [Builtins] as config sees it.
type builtinSet struct{}

func (builtinSet) IsBuiltin(name string) bool { return IsBuiltin(name) }

func (builtinSet) Reserves(name string) bool {
	for _, b := range builtins {
		if name == b.name {
			return true
		}
	}
	return IsBuiltin(name)
}

func (builtinSet) String() string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
		if b.param != "" {
			names[i] += ":<" + b.param + ">"
		}
	}
	return strings.Join(names, ", ")
}

// Builtins returns uwf's built-in agents as package config asks for them:
// pass it to [config.Load], [config.Parse] and [config.Set], so that
// config.yaml may name them without an entry and no entry takes their
// names. Its String is "human, llm, replay:<thread>, synth".
func Builtins() config.Builtins { return builtinSet{} }

// Options are what [New] and [Check] need besides an agent's name and
// entry: the role to run and what the built-in agents take from the
// caller. The zero value builds command agents and synth.
type Options struct {
	// Config selects the llm agent's model and gives its API key; nil
	// means an empty configuration.
	Config *config.Config
	// Workflow and Role are the role to run (they select the model).
	Workflow, Role string
	// Seed seeds the synth agent.
	Seed int64
	// HumanIn and HumanOut are the human agent's terminal; HumanInput, if
	// set, is a file holding its answer instead (for scripts).
	HumanIn    io.Reader
	HumanOut   io.Writer
	HumanInput string
	// HTTPClient is used by the llm agent; nil means its own.
	HTTPClient *http.Client
	// Threads gives the replay agent its source thread; nil means replay
	// cannot run.
	Threads Threads
}

// Threads gives the replay agent the thread it replays. Package thread
// implements it over the store: agents never read the store themselves.
type Threads interface {
	// CheckThread returns nil if thread id exists; else an error that
	// says why (a malformed id, or one wrapping [cas.ErrNotFound]).
	CheckThread(ctx context.Context, id string) error
	// Recorded returns the canonical spelling of id (which names the
	// replay agent) and the recorded steps (not marks) of the thread,
	// oldest first.
	Recorded(ctx context.Context, id string) (string, []Recorded, error)
}

// StepCounter is implemented by agents whose runs read
// [Request.StepIndex] and [Request.RoleRuns] ([Synth], [Replay]): the step
// loop fills them in, which means walking the thread, only for these.
type StepCounter interface {
	Agent
	// CountsSteps marks the agent; it does nothing.
	CountsSteps()
}

// Resolve picks the agent that runs role of workflow: explicit (the
// --agent flag) if not empty, else config.yaml's
// agentOverrides[workflow][role], else its defaultAgent
// ([config.Config.AgentName]). It returns the agent's name and, for a
// configured agent, a copy of its entry with Timeout filled in; a built-in
// agent comes with a zero entry but for Timeout,
// [config.DefaultAgentTimeout]. A nil cfg is an empty configuration.
//
// Errors: [ErrNoAgent] if nothing names an agent; [ErrUnknownAgent]
// (wrapping [cas.ErrNotFound]) for a name that is neither configured nor
// built in, listing the configured and built-in agents.
func Resolve(cfg *config.Config, workflow, role, explicit string) (string, config.Agent, error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	name, from := cfg.AgentName(workflow, role, explicit)
	configured := cfg.AgentNames()
	list := "none"
	if len(configured) > 0 {
		list = strings.Join(configured, ", ")
	}
	if name == "" {
		return "", config.Agent{}, fmt.Errorf("%w for role %s of workflow %s: pass --agent, or set defaultAgent or agentOverrides.%s.%s in config.yaml (configured: %s; built-in: %s)",
			ErrNoAgent, role, workflow, workflow, role, list, Builtins())
	}
	if IsBuiltin(name) {
		return name, config.Agent{Timeout: config.DefaultAgentTimeout}, nil
	}
	a, ok := cfg.Agent(name)
	if !ok {
		return "", config.Agent{}, fmt.Errorf("agent %q (from %s): %w: it is neither configured nor built in (configured: %s; built-in: %s)",
			name, from, ErrUnknownAgent, list, Builtins())
	}
	return name, a, nil
}

// CheckName checks, without running anything, what the name of an agent
// that [Resolve] returned says by itself: for replay:<thread>, that the
// thread exists (the error names the agent and wraps
// [cas.ErrNotFound] if it does not). A name that is not built in passes.
func CheckName(ctx context.Context, name string, o *Options) error {
	b, arg, ok := findBuiltin(name)
	if !ok || b.checkArg == nil {
		return nil
	}
	if o == nil {
		o = &Options{}
	}
	return b.checkArg(ctx, name, arg, o)
}

// Check checks, without running anything, that the agent name (as
// [Resolve] returned it, with its entry spec) could run o.Role from cwd:
// [CheckName]; for human, a terminal or an answer file; for llm, a model
// of o.Config with its API key; for a command, that the program is found
// from cwd (the error wraps [os/exec.ErrNotFound] or an [io/fs] error).
func Check(ctx context.Context, name string, spec config.Agent, cwd string, o *Options) error {
	if o == nil {
		o = &Options{}
	}
	b, arg, ok := findBuiltin(name)
	if !ok {
		if spec.Command == "" {
			return nil
		}
		err := NewCommand(name, CommandSpec{Command: spec.Command}).Check(cwd)
		if err != nil && spec.Preset != "" {
			// The user named a tool, not a program: say which to install.
			return fmt.Errorf("%w (preset %s: install it, or set agents.%s.command to where it is)", err, spec.Preset, name)
		}
		return err
	}
	if b.checkArg != nil {
		if err := b.checkArg(ctx, name, arg, o); err != nil {
			return err
		}
	}
	if b.check != nil {
		return b.check(o)
	}
	return nil
}

// New returns the agent name (as [Resolve] returned it, with its entry
// spec) for o.Role: a built-in agent, or a [Command] running spec. The
// error says why a built-in cannot be built: human without a terminal, llm
// without a model or API key, replay:<thread> of a thread that cannot be
// read.
func New(ctx context.Context, name string, spec config.Agent, o *Options) (Agent, error) {
	if o == nil {
		o = &Options{}
	}
	if b, arg, ok := findBuiltin(name); ok {
		return b.make(ctx, arg, o)
	}
	return NewCommand(name, CommandSpec{Command: spec.Command, Args: spec.Args, Env: spec.Env, Timeout: spec.Timeout,
		Prompt: spec.Prompt, PromptFlag: spec.PromptFlag, Output: spec.Output}), nil
}

// LLMFor returns the LLM of the model config.yaml picks for role of
// workflow ([config.Config.ModelFor]), with its provider's API key
// ([config.Config.Secret]); client is its HTTP client (nil: its own). It
// serves the llm agent and extraction's LLM fallback. The error says
// that no model is configured, or that the API key variable is not set. A
// nil cfg is an empty configuration.
func LLMFor(cfg *config.Config, workflow, role string, client *http.Client) (*LLM, error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	name, m, p, ok := cfg.ModelFor(workflow, role)
	if !ok {
		return nil, errors.New("no model configured: set defaultModel (and its provider) in config.yaml")
	}
	key := ""
	if p.APIKeyEnv != "" {
		var found bool
		if key, found = cfg.Secret(p.APIKeyEnv); !found {
			return nil, fmt.Errorf("model %s: the API key variable %s is not set (in the environment or <home>/.env)", name, p.APIKeyEnv)
		}
	}
	return NewLLM(LLMConfig{BaseURL: p.BaseURL, APIKey: key, Model: m.Model, HTTPClient: client}), nil
}
