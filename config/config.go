package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/internal/yamldoc"
)

// File and EnvFile are the names of the configuration and secrets files
// in uwf's home directory.
const (
	File    = "config.yaml"
	EnvFile = ".env"
)

// DefaultAgentTimeout bounds a run of an agent whose entry gives no
// timeout.
const DefaultAgentTimeout = 30 * time.Minute

// maxConfigSize bounds config.yaml and .env.
const maxConfigSize = 1 << 20

// Builtins are the agents that need no entry under agents:. Package
// agent owns uwf's: pass [github.com/uncaged/uwf/agent.Builtins] to
// [Load], [Parse] and [Set]. A nil Builtins means there are none: every
// agent a config names must be configured.
type Builtins interface {
	// IsBuiltin reports whether name, as --agent, defaultAgent or an
	// override gives it, is a built-in agent ("synth", "replay:<thread>").
	IsBuiltin(name string) bool
	// Reserves reports whether no entry under agents: may take name
	// ("synth", "replay").
	Reserves(name string) bool
	// String names the built-in agents for messages: "human, llm,
	// replay:<thread>, synth".
	String() string
}

// Config is uwf's configuration, read from <home>/config.yaml (SPEC §6):
// the agents that run roles, and the LLM providers and models the llm agent
// and extraction use. Secrets (API keys) are never in it: [Config.Secret]
// reads them from the environment or <home>/.env.
//
// The zero Config (no file) is valid: no agents configured, the built-ins
// available. A Config is safe for concurrent reads.
type Config struct {
	// Agents are external agent commands by name.
	Agents map[string]Agent
	// DefaultAgent runs roles that no override names; "" means none.
	DefaultAgent string
	// AgentOverrides maps workflow -> role -> agent name.
	AgentOverrides map[string]map[string]string
	// Providers are OpenAI-compatible endpoints by name.
	Providers map[string]Provider
	// Models are models of providers, by name.
	Models map[string]Model
	// DefaultModel is the model used where no override names one; "" means
	// none (no LLM: extraction retries the agent instead).
	DefaultModel string
	// ModelOverrides maps workflow -> role -> model name.
	ModelOverrides map[string]map[string]string
	// SecretVars names variables whose values are secret, whatever their
	// names (config.yaml's secrets: list): looked up in the environment,
	// <home>/.env and every agent's env. See [Config.Secrets].
	SecretVars []string

	dotenv map[string]string // <home>/.env
}

// Agent is an external agent: a command run without a shell, the
// assembled prompt on its stdin (or in an argument), its stdout the raw
// output (or read as the tool's structured output).
type Agent struct {
	// Preset names a built-in [Preset] ("claude-code", "codex", ...) whose
	// command, arguments, prompt passing and output reading fill in what
	// the entry leaves unset ([Config.Agent]); "" means none.
	Preset  string
	Command string            // the program: a path, or a name looked up in PATH
	Args    []string          // its arguments, passed as they are (nil: the preset's)
	Env     map[string]string // variables added to its environment
	// ExtraArgs follow Args: flags added to a preset's without restating
	// them (--model, say).
	ExtraArgs []string
	// Prompt says how the prompt is passed: [PromptStdin], [PromptArg] or
	// [PromptFile]; "" means the preset's, else stdin.
	Prompt string
	// PromptFlag, with [PromptArg] or [PromptFile], is the flag the prompt
	// or its file's path follows; "" passes it as the last argument.
	PromptFlag string
	// Output says how stdout is read: one of [OutputFormats]; "" means the
	// preset's, else [OutputText].
	Output string
	// Timeout bounds one run, written as a Go duration ("90s", "10m",
	// "1h30m"); 0 means [DefaultAgentTimeout].
	Timeout time.Duration
}

// Provider is an OpenAI-compatible chat completions endpoint.
type Provider struct {
	BaseURL string // e.g. https://api.openai.com/v1
	// APIKeyEnv names the variable that holds the API key, looked up with
	// [Config.Secret]; "" means the endpoint needs no key.
	APIKeyEnv string
}

// Model is one model of a provider.
type Model struct {
	Provider string // a key of Config.Providers
	Model    string // the provider's model id, e.g. gpt-4o-mini
}

// Load reads <home>/config.yaml and <home>/.env. A missing file is an
// empty configuration (missing .env: no secrets from it). A file that does
// not parse or breaks a rule (unknown keys, bad durations, references to
// agents, providers or models that do not exist, an agent entry taking a
// built-in's name) is a *[ValidationError] naming the file, line and
// column of every problem. builtins names the agents that need no entry;
// nil means none.
func Load(home string, builtins Builtins) (*Config, error) {
	file := filepath.Join(home, File)
	data, err := yamldoc.ReadFile(file, maxConfigSize)
	var c *Config
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c = &Config{}
	case err != nil:
		return nil, err
	default:
		if c, err = Parse(file, data, builtins); err != nil {
			return nil, err
		}
	}
	envFile := filepath.Join(home, EnvFile)
	data, err = yamldoc.ReadFile(envFile, maxConfigSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if c.dotenv, err = parseDotEnv(envFile, data); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Parse reads config.yaml's content; file names it in messages and
// builtins names the agents that need no entry (nil: none). An empty file
// is an empty configuration. The error is a *[ValidationError] listing
// every problem.
func Parse(file string, data []byte, builtins Builtins) (*Config, error) {
	ps := &yamldoc.Problems{File: file}
	c := &Config{}
	doc, err := cas.ParseYAMLNode(data)
	if err != nil {
		yamldoc.AddYAMLError(ps, err)
		return nil, ps.Err()
	}
	if doc == nil || len(doc.Content) == 0 {
		return c, nil
	}
	if fatal, _ := yamldoc.CheckTree(ps, doc); fatal {
		return nil, ps.Err()
	}
	cp := &configParser{ps: ps, c: c, at: map[string]yamldoc.Position{}, builtins: builtins}
	cp.top(doc.Content[0])
	cp.crossCheck()
	if err := ps.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// configParser fills a Config from a checked YAML tree.
type configParser struct {
	ps *yamldoc.Problems
	c  *Config
	at map[string]yamldoc.Position // dot path -> where its value stands, for cross-checks

	builtins Builtins // nil: none
}

// builtin reports whether name is a built-in agent.
func (p *configParser) builtin(name string) bool {
	return p.builtins != nil && p.builtins.IsBuiltin(name)
}

// builtinList names the built-in agents in messages.
func (p *configParser) builtinList() string {
	if p.builtins == nil {
		return "none"
	}
	return p.builtins.String()
}

func (p *configParser) top(root *yaml.Node) {
	n := yamldoc.Resolve(root)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.ps.Add(yamldoc.Pos(root), "config.yaml is a mapping (agents, defaultAgent, agentOverrides, providers, models, defaultModel, modelOverrides, secrets), not %s", yamldoc.Describe(n))
		return
	}
	for k, v := range yamldoc.Pairs(n) {
		switch key := yamldoc.Resolve(k).Value; key {
		case "agents":
			p.each(v, "agents", "a mapping of agent names to agents", func(name string, kn, vn *yaml.Node) {
				p.agent(name, kn, vn)
			})
		case "defaultAgent":
			p.c.DefaultAgent = p.str(v, key)
		case "agentOverrides":
			p.c.AgentOverrides = p.overrides(v, key, "agent")
		case "providers":
			p.each(v, "providers", "a mapping of provider names to providers", func(name string, kn, vn *yaml.Node) {
				p.provider(name, kn, vn)
			})
		case "models":
			p.each(v, "models", "a mapping of model names to models", func(name string, kn, vn *yaml.Node) {
				p.model(name, kn, vn)
			})
		case "defaultModel":
			p.c.DefaultModel = p.str(v, key)
		case "modelOverrides":
			p.c.ModelOverrides = p.overrides(v, key, "model")
		case "secrets":
			p.c.SecretVars = p.secretVars(v)
		default:
			p.ps.Add(yamldoc.Pos(k), "unknown key %s (config.yaml has agents, defaultAgent, agentOverrides, providers, models, defaultModel, modelOverrides, secrets)", strconv.Quote(key))
		}
	}
}

// str reads a string, recording where it stands under path.
func (p *configParser) str(v *yaml.Node, path string) string {
	n := yamldoc.Resolve(v)
	p.at[path] = yamldoc.Pos(v)
	if yamldoc.IsText(n) {
		return n.Value
	}
	p.ps.Add(yamldoc.Pos(v), "%s: must be a string%s", path, yamldoc.NotString(n))
	return ""
}

// text reads any scalar as the text written (arguments and environment
// values are strings by nature: 10 and true are taken as "10" and "true").
func (p *configParser) text(v *yaml.Node, path string) (string, bool) {
	n := yamldoc.Resolve(v)
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		return n.Value, true
	}
	p.ps.Add(yamldoc.Pos(v), "%s: must be a string, not %s", path, yamldoc.Describe(n))
	return "", false
}

// each calls f for each entry of the mapping v.
func (p *configParser) each(v *yaml.Node, path, what string, f func(name string, k, v *yaml.Node)) {
	n := yamldoc.Resolve(v)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // "agents:" with nothing: none
	}
	if n.Kind != yaml.MappingNode {
		p.ps.Add(yamldoc.Pos(v), "%s: must be %s, not %s", path, what, yamldoc.Describe(n))
		return
	}
	for k, v := range yamldoc.Pairs(n) {
		f(yamldoc.Resolve(k).Value, k, v)
	}
}

// fields calls f for each key of the mapping v, rejecting unknown ones.
func (p *configParser) fields(v *yaml.Node, path, what string, known []string, f func(key string, k, v *yaml.Node)) bool {
	n := yamldoc.Resolve(v)
	if n.Kind != yaml.MappingNode {
		p.ps.Add(yamldoc.Pos(v), "%s: must be a mapping (%s), not %s", path, strings.Join(known, ", "), yamldoc.Describe(n))
		return false
	}
	for k, v := range yamldoc.Pairs(n) {
		key := yamldoc.Resolve(k).Value
		if !slices.Contains(known, key) {
			p.ps.Add(yamldoc.Pos(k), "%s: unknown key %s (%s has %s)", path, strconv.Quote(key), what, strings.Join(known, ", "))
			continue
		}
		f(key, k, v)
	}
	return true
}

func (p *configParser) agent(name string, k, v *yaml.Node) {
	path := "agents." + name
	switch {
	case p.builtins != nil && p.builtins.Reserves(name):
		p.ps.Add(yamldoc.Pos(k), "%s: %q is a built-in agent (%s); pick another name", path, name, p.builtinList())
	default:
		if why := yamldoc.NameProblem(name); why != "" {
			p.ps.Add(yamldoc.Pos(k), "%s: agent name %s %s", path, strconv.Quote(name), why)
		}
	}
	var a Agent
	ok := p.fields(v, path, "an agent", []string{"preset", "command", "args", "extraArgs", "env", "prompt", "promptFlag", "output", "timeout"}, func(key string, kn, vn *yaml.Node) {
		switch key {
		case "preset":
			a.Preset = p.str(vn, path+".preset")
			if _, ok := PresetByName(a.Preset); !ok && yamldoc.IsText(yamldoc.Resolve(vn)) {
				p.ps.Add(yamldoc.Pos(vn), "%s.preset: unknown preset %s (presets: %s)", path, strconv.Quote(a.Preset), presetNames())
			}
		case "prompt":
			a.Prompt = p.str(vn, path+".prompt")
			if !slices.Contains(PromptModes, a.Prompt) && yamldoc.IsText(yamldoc.Resolve(vn)) {
				p.ps.Add(yamldoc.Pos(vn), "%s.prompt: must be one of %s, not %s", path, strings.Join(PromptModes, ", "), strconv.Quote(a.Prompt))
			}
		case "promptFlag":
			a.PromptFlag = p.str(vn, path+".promptFlag")
		case "output":
			a.Output = p.str(vn, path+".output")
			if !slices.Contains(OutputFormats, a.Output) && yamldoc.IsText(yamldoc.Resolve(vn)) {
				p.ps.Add(yamldoc.Pos(vn), "%s.output: must be one of %s, not %s", path, strings.Join(OutputFormats, ", "), strconv.Quote(a.Output))
			}
		case "extraArgs":
			a.ExtraArgs = p.strList(vn, path+".extraArgs")
		case "command":
			a.Command = p.str(vn, path+".command")
			if a.Command == "" && yamldoc.IsText(yamldoc.Resolve(vn)) {
				p.ps.Add(yamldoc.Pos(vn), "%s.command: is empty", path)
			}
		case "args":
			a.Args = p.strList(vn, path+".args")
		case "env":
			n := yamldoc.Resolve(vn)
			if n.Kind != yaml.MappingNode {
				p.ps.Add(yamldoc.Pos(vn), "%s.env: must be a mapping of variable names to values, not %s", path, yamldoc.Describe(n))
				return
			}
			a.Env = map[string]string{}
			for ek, ev := range yamldoc.Pairs(n) {
				key := yamldoc.Resolve(ek).Value
				if !validEnvName(key) {
					p.ps.Add(yamldoc.Pos(ek), "%s.env: invalid variable name %s", path, strconv.Quote(key))
					continue
				}
				if s, ok := p.text(ev, path+".env."+key); ok {
					a.Env[key] = s
				}
			}
		case "timeout":
			n := yamldoc.Resolve(vn)
			if n.Kind != yaml.ScalarNode {
				p.ps.Add(yamldoc.Pos(vn), "%s.timeout: must be a duration like 90s, 10m or 1h, not %s", path, yamldoc.Describe(n))
				return
			}
			d, err := time.ParseDuration(n.Value)
			switch {
			case err != nil && n.ShortTag() == "!!int":
				p.ps.Add(yamldoc.Pos(vn), "%s.timeout: invalid duration %s: give a unit (%ss, %sm)", path, strconv.Quote(n.Value), n.Value, n.Value)
			case err != nil:
				p.ps.Add(yamldoc.Pos(vn), "%s.timeout: invalid duration %s", path, strconv.Quote(n.Value))
			case d <= 0:
				p.ps.Add(yamldoc.Pos(vn), "%s.timeout: must be positive, not %s", path, strconv.Quote(n.Value))
			default:
				a.Timeout = d
			}
		}
	})
	if !ok {
		return
	}
	if a.Command == "" && !p.has(path+".command") && a.Preset == "" {
		p.ps.Add(yamldoc.Pos(k), "%s: missing command (or a preset: %s)", path, presetNames())
	}
	if p.c.Agents == nil {
		p.c.Agents = map[string]Agent{}
	}
	p.c.Agents[name] = a
}

// strList reads a list of strings at path; nil (with a problem) if it is
// not one, an empty non-nil slice for [].
func (p *configParser) strList(vn *yaml.Node, path string) []string {
	n := yamldoc.Resolve(vn)
	if n.Kind != yaml.SequenceNode {
		p.ps.Add(yamldoc.Pos(vn), "%s: must be a list of strings, not %s", path, yamldoc.Describe(n))
		return nil
	}
	out := []string{}
	for i, c := range n.Content {
		if s, ok := p.text(c, fmt.Sprintf("%s[%d]", path, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *configParser) has(path string) bool {
	_, ok := p.at[path]
	return ok
}

func (p *configParser) provider(name string, k, v *yaml.Node) {
	path := "providers." + name
	if why := yamldoc.NameProblem(name); why != "" {
		p.ps.Add(yamldoc.Pos(k), "%s: provider name %s %s", path, strconv.Quote(name), why)
	}
	var pc Provider
	ok := p.fields(v, path, "a provider", []string{"baseURL", "apiKeyEnv"}, func(key string, kn, vn *yaml.Node) {
		switch key {
		case "baseURL":
			pc.BaseURL = p.str(vn, path+".baseURL")
			if !yamldoc.IsText(yamldoc.Resolve(vn)) {
				return
			}
			if u, err := url.Parse(pc.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.ps.Add(yamldoc.Pos(vn), "%s.baseURL: must be an http or https URL, not %s", path, strconv.Quote(pc.BaseURL))
			}
		case "apiKeyEnv":
			pc.APIKeyEnv = p.str(vn, path+".apiKeyEnv")
			if yamldoc.IsText(yamldoc.Resolve(vn)) && !validEnvName(pc.APIKeyEnv) {
				p.ps.Add(yamldoc.Pos(vn), "%s.apiKeyEnv: invalid variable name %s (it names the variable that holds the key, not the key)", path, strconv.Quote(pc.APIKeyEnv))
			}
		}
	})
	if !ok {
		return
	}
	if !p.has(path + ".baseURL") {
		p.ps.Add(yamldoc.Pos(k), "%s: missing baseURL", path)
	}
	if p.c.Providers == nil {
		p.c.Providers = map[string]Provider{}
	}
	p.c.Providers[name] = pc
}

func (p *configParser) model(name string, k, v *yaml.Node) {
	path := "models." + name
	if why := yamldoc.NameProblem(name); why != "" {
		p.ps.Add(yamldoc.Pos(k), "%s: model name %s %s", path, strconv.Quote(name), why)
	}
	var m Model
	ok := p.fields(v, path, "a model", []string{"provider", "model"}, func(key string, kn, vn *yaml.Node) {
		switch key {
		case "provider":
			m.Provider = p.str(vn, path+".provider")
		case "model":
			m.Model = p.str(vn, path+".model")
		}
	})
	if !ok {
		return
	}
	for _, f := range []string{"provider", "model"} {
		if !p.has(path + "." + f) {
			p.ps.Add(yamldoc.Pos(k), "%s: missing %s", path, f)
		}
	}
	if p.c.Models == nil {
		p.c.Models = map[string]Model{}
	}
	p.c.Models[name] = m
}

// secretVars reads the secrets: list of variable names.
func (p *configParser) secretVars(v *yaml.Node) []string {
	n := yamldoc.Resolve(v)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.ps.Add(yamldoc.Pos(v), "secrets: must be a list of variable names, not %s", yamldoc.Describe(n))
		return nil
	}
	var out []string
	for i, c := range n.Content {
		name := p.str(c, fmt.Sprintf("secrets[%d]", i))
		if !yamldoc.IsText(yamldoc.Resolve(c)) {
			continue
		}
		if !validEnvName(name) {
			p.ps.Add(yamldoc.Pos(c), "secrets[%d]: invalid variable name %s (list the names of variables whose values are secret, not the values)", i, strconv.Quote(name))
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// overrides reads workflow -> role -> name.
func (p *configParser) overrides(v *yaml.Node, path, what string) map[string]map[string]string {
	out := map[string]map[string]string{}
	p.each(v, path, "a mapping of workflows to {role: "+what+"}", func(wf string, k, wv *yaml.Node) {
		n := yamldoc.Resolve(wv)
		if n.Kind != yaml.MappingNode {
			p.ps.Add(yamldoc.Pos(wv), "%s.%s: must be a mapping of roles to %ss, not %s", path, wf, what, yamldoc.Describe(n))
			return
		}
		roles := map[string]string{}
		for rk, rv := range yamldoc.Pairs(n) {
			role := yamldoc.Resolve(rk).Value
			if s := p.str(rv, path+"."+wf+"."+role); s != "" {
				roles[role] = s
			}
		}
		out[wf] = roles
	})
	return out
}

// crossCheck checks that every agent, provider and model named exists.
func (p *configParser) crossCheck() {
	c := p.c
	agents := slices.Sorted(maps.Keys(c.Agents))
	agentOK := func(path, name string) {
		if name == "" || p.builtin(name) {
			return
		}
		if _, ok := c.Agents[name]; !ok {
			p.ps.Add(p.at[path], "%s: unknown agent %s (configured: %s; built-in: %s)", path, strconv.Quote(name), listOrNone(agents), p.builtinList())
		}
	}
	agentOK("defaultAgent", c.DefaultAgent)
	for _, wf := range slices.Sorted(maps.Keys(c.AgentOverrides)) {
		for _, role := range slices.Sorted(maps.Keys(c.AgentOverrides[wf])) {
			agentOK("agentOverrides."+wf+"."+role, c.AgentOverrides[wf][role])
		}
	}
	providers := slices.Sorted(maps.Keys(c.Providers))
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		m := c.Models[name]
		if _, ok := c.Providers[m.Provider]; !ok && m.Provider != "" {
			path := "models." + name + ".provider"
			p.ps.Add(p.at[path], "%s: unknown provider %s (providers: %s)", path, strconv.Quote(m.Provider), listOrNone(providers))
		}
	}
	models := slices.Sorted(maps.Keys(c.Models))
	modelOK := func(path, name string) {
		if name == "" {
			return
		}
		if _, ok := c.Models[name]; !ok {
			p.ps.Add(p.at[path], "%s: unknown model %s (models: %s)", path, strconv.Quote(name), listOrNone(models))
		}
	}
	modelOK("defaultModel", c.DefaultModel)
	for _, wf := range slices.Sorted(maps.Keys(c.ModelOverrides)) {
		for _, role := range slices.Sorted(maps.Keys(c.ModelOverrides[wf])) {
			modelOK("modelOverrides."+wf+"."+role, c.ModelOverrides[wf][role])
		}
	}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

func validEnvName(s string) bool { return envName().MatchString(s) }

// Secret returns the value of the variable name: from the environment if
// it is set there (even to ""), else from <home>/.env. It reports whether
// either had it. Secrets are never written to the store.
func (c *Config) Secret(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	v, ok := c.dotenv[name]
	return v, ok
}

// Secrets returns the known secrets of this configuration, sorted, each
// once: the API keys of the providers (the values of their apiKeyEnv
// variables), the values of variables whose names contain KEY, TOKEN,
// SECRET or PASSWORD (case ignored) in the environment, in <home>/.env and
// in the agents' env, and the values of the variables listed under
// secrets: (looked up in the same three places). uwf masks them in what it
// records from agents and in its logs; the masker ignores values shorter
// than 8 bytes. The caller owns the returned slice.
func (c *Config) Secrets() []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
		}
	}
	for _, p := range c.Providers {
		if p.APIKeyEnv != "" {
			v, _ := c.Secret(p.APIKeyEnv)
			add(v)
		}
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && (secret.IsSecretName(k) || slices.Contains(c.SecretVars, k)) {
			add(v)
		}
	}
	for k, v := range c.dotenv {
		if secret.IsSecretName(k) || slices.Contains(c.SecretVars, k) {
			add(v)
		}
	}
	for _, a := range c.Agents {
		for k, v := range a.Env {
			if secret.IsSecretName(k) || slices.Contains(c.SecretVars, k) {
				add(v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// AgentName returns the name of the agent that runs role of workflow, and
// where it comes from: explicit (the --agent flag) if not empty, else
// agentOverrides[workflow][role], else defaultAgent; "" if none names one.
// from is "--agent", "agentOverrides.<workflow>.<role>" or "defaultAgent",
// for messages. Package agent resolves the name
// ([github.com/uncaged/uwf/agent.Resolve]).
func (c *Config) AgentName(workflow, role, explicit string) (name, from string) {
	name, from = explicit, "--agent"
	if name == "" {
		name, from = c.AgentOverrides[workflow][role], "agentOverrides."+workflow+"."+role
	}
	if name == "" {
		name, from = c.DefaultAgent, "defaultAgent"
	}
	return name, from
}

// Agent returns the agent entry named name, if config.yaml has one, as a
// copy (its Args and Env are the caller's) ready to run: what its preset
// gives filled in where the entry leaves it unset (command, args, prompt,
// promptFlag, output: each one overridable alone), ExtraArgs appended to
// Args (and cleared), Prompt [PromptStdin] and Output [OutputText] if still
// unset, and Timeout [DefaultAgentTimeout] if unset.
func (c *Config) Agent(name string) (Agent, bool) {
	a, ok := c.Agents[name]
	if !ok {
		return Agent{}, false
	}
	a = withPreset(a)
	a.Args = append(slices.Clone(a.Args), a.ExtraArgs...)
	a.ExtraArgs = nil
	a.Env = maps.Clone(a.Env)
	if a.Prompt == "" {
		a.Prompt = PromptStdin
	}
	if a.Output == "" {
		a.Output = OutputText
	}
	if a.Timeout == 0 {
		a.Timeout = DefaultAgentTimeout
	}
	return a, true
}

// AgentNames returns the names of the configured agents, sorted. The
// caller owns the returned slice.
func (c *Config) AgentNames() []string { return slices.Sorted(maps.Keys(c.Agents)) }

// ModelFor picks the model for role of workflow: modelOverrides[workflow][role],
// else defaultModel. ok is false if neither names a model (or, for a
// Config built in Go, the model or its provider is missing).
func (c *Config) ModelFor(workflow, role string) (name string, m Model, p Provider, ok bool) {
	name = c.ModelOverrides[workflow][role]
	if name == "" {
		name = c.DefaultModel
	}
	if name == "" {
		return "", Model{}, Provider{}, false
	}
	if m, ok = c.Models[name]; !ok {
		return "", Model{}, Provider{}, false
	}
	if p, ok = c.Providers[m.Provider]; !ok {
		return "", Model{}, Provider{}, false
	}
	return name, m, p, true
}

// tree returns the configuration as plain values keyed as in config.yaml,
// leaving out what is unset.
func (c *Config) tree() map[string]any {
	t := map[string]any{}
	if len(c.Agents) > 0 {
		agents := map[string]any{}
		for name, a := range c.Agents {
			m := map[string]any{}
			for k, v := range map[string]string{"preset": a.Preset, "command": a.Command, "prompt": a.Prompt, "promptFlag": a.PromptFlag, "output": a.Output} {
				if v != "" {
					m[k] = v
				}
			}
			for k, l := range map[string][]string{"args": a.Args, "extraArgs": a.ExtraArgs} {
				if l != nil {
					args := make([]any, len(l))
					for i, s := range l {
						args[i] = s
					}
					m[k] = args
				}
			}
			if len(a.Env) > 0 {
				env := map[string]any{}
				for k, v := range a.Env {
					env[k] = v
				}
				m["env"] = env
			}
			if a.Timeout != 0 {
				m["timeout"] = FormatDuration(a.Timeout)
			}
			agents[name] = m
		}
		t["agents"] = agents
	}
	if c.DefaultAgent != "" {
		t["defaultAgent"] = c.DefaultAgent
	}
	if len(c.AgentOverrides) > 0 {
		t["agentOverrides"] = nested(c.AgentOverrides)
	}
	if len(c.Providers) > 0 {
		ps := map[string]any{}
		for name, p := range c.Providers {
			m := map[string]any{"baseURL": p.BaseURL}
			if p.APIKeyEnv != "" {
				m["apiKeyEnv"] = p.APIKeyEnv
			}
			ps[name] = m
		}
		t["providers"] = ps
	}
	if len(c.Models) > 0 {
		ms := map[string]any{}
		for name, m := range c.Models {
			ms[name] = map[string]any{"provider": m.Provider, "model": m.Model}
		}
		t["models"] = ms
	}
	if c.DefaultModel != "" {
		t["defaultModel"] = c.DefaultModel
	}
	if len(c.ModelOverrides) > 0 {
		t["modelOverrides"] = nested(c.ModelOverrides)
	}
	if len(c.SecretVars) > 0 {
		names := make([]any, len(c.SecretVars))
		for i, n := range c.SecretVars {
			names[i] = n
		}
		t["secrets"] = names
	}
	return t
}

func nested(m map[string]map[string]string) map[string]any {
	out := map[string]any{}
	for k, inner := range m {
		im := map[string]any{}
		for k2, v := range inner {
			im[k2] = v
		}
		out[k] = im
	}
	return out
}

// FormatDuration writes d as config.yaml's timeouts are written, without
// zero trailing units: 10m, 1h30m, 2.5s, 500ms (not 10m0s).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Get returns the value at a dot path of the configuration
// ("agents.coder.command", "agents.coder", "defaultModel"): a string, a
// []any of strings, or a map[string]any for a section. Values are not
// masked: print them through [Masked]. The error wraps [cas.ErrNotFound]
// if nothing is set at path. Names that contain "." cannot be addressed.
func (c *Config) Get(path string) (any, error) {
	var cur any = c.tree()
	if path == "" {
		return cur, nil
	}
	for seg := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("config %s is not set: %w", path, cas.ErrNotFound)
		}
		if cur, ok = m[seg]; !ok {
			return nil, fmt.Errorf("config %s is not set: %w", path, cas.ErrNotFound)
		}
	}
	return cur, nil
}

// KV is one setting, as [Config.List] lists it.
type KV struct {
	Path  string // dot path, such as agents.coder.timeout
	Value any    // a string or a []any of strings, masked as [Masked] does
	// Note is what a reader should know about the value, or "": for an
	// agent's preset that could not be confirmed from the tool's own
	// documentation, "experimental preset: ...".
	Note string
}

// List returns every setting as a flattened dot path with its value
// (lists are one value), sorted by path, secrets masked by [Masked]. The
// caller owns the returned slice.
func (c *Config) List() []KV {
	var out []KV
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, e := range m {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, e)
			}
			return
		}
		kv := KV{Path: prefix, Value: Masked(prefix, v)}
		if segs := strings.Split(prefix, "."); len(segs) == 3 && segs[0] == "agents" && segs[2] == "preset" {
			if p, ok := PresetByName(fmt.Sprint(v)); ok && p.Experimental {
				kv.Note = "experimental preset: not confirmed from " + p.Name + "'s own documentation or help (source: " + p.Source + ")"
			}
		}
		out = append(out, kv)
	}
	walk("", c.tree())
	slices.SortFunc(out, func(a, b KV) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Mask replaces secret values in output.
const Mask = secret.Mask

// Masked returns value as it may be shown for the setting at path: [Mask]
// for a secret, value itself otherwise. A secret is any value whose key
// (the path's last segment) is a secret's name by the rule that masking
// agent output uses, [secret.IsSecretName]: it contains KEY, TOKEN, SECRET
// or PASSWORD, case ignored ("apiKey", "GITHUB_TOKEN", "GITHUB_TOKEN_PATH"),
// and every value of an agent's env map. The two keys whose values are
// only names of variables are shown: providers.<p>.apiKeyEnv and secrets.
// Maps are masked entry by entry; a new value is returned, value itself is
// not modified.
func Masked(path string, value any) any {
	if m, ok := value.(map[string]any); ok {
		out := make(map[string]any, len(m))
		for k, v := range m {
			p := k
			if path != "" {
				p = path + "." + k
			}
			out[k] = Masked(p, v)
		}
		return out
	}
	segs := strings.Split(path, ".")
	last := segs[len(segs)-1]
	agentEnv := len(segs) >= 4 && segs[0] == "agents" && segs[2] == "env" // agents.<a>.env.<VAR>
	if agentEnv || secret.IsSecretName(last) && !namesVariables(segs) {
		return Mask
	}
	return value
}

// namesVariables reports whether the setting at the path segs holds names
// of variables, not their values: providers.<p>.apiKeyEnv, and secrets.
func namesVariables(segs []string) bool {
	return len(segs) == 3 && segs[0] == "providers" && segs[2] == "apiKeyEnv" ||
		segs[0] == "secrets"
}

// Set sets the value at a dot path in <home>/config.yaml,
// creating the file, the home directory and intermediate mappings as
// needed, and keeping the file's comments and key order. value is read as
// YAML ("10m", "true", "[-p, --fast]"; a value that YAML reads as a
// mapping without starting with "{" is taken as a plain string; "" is the
// empty string). The resulting configuration is validated before anything
// is written (the error is a *[ValidationError] and the file is left
// alone); the file is replaced atomically. builtins names the agents that
// need no entry, as for [Load].
func Set(home, path, value string, builtins Builtins) error {
	if slices.Contains(strings.Split(path, "."), "") {
		return fmt.Errorf("config set %q: %w: empty path segment", path, cas.ErrInvalid)
	}
	return update(home, "config set "+path, []Edit{{Path: path, Value: value}}, builtins)
}

// yamlValue reads a value given on the command line as a YAML node.
func yamlValue(value string) *yaml.Node {
	str := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	if value == "" {
		str.Style = yaml.DoubleQuotedStyle
		return str
	}
	var d yaml.Node
	if err := yaml.Unmarshal([]byte(value), &d); err != nil || d.Kind != yaml.DocumentNode || len(d.Content) != 1 {
		return str
	}
	n := d.Content[0]
	switch {
	case n.Kind == yaml.MappingNode && !strings.HasPrefix(strings.TrimSpace(value), "{"):
		return str
	case n.Kind == yaml.SequenceNode && !strings.HasPrefix(strings.TrimSpace(value), "["):
		return str
	case n.Kind == yaml.AliasNode || n.Anchor != "":
		return str
	}
	yamldoc.Visit(n, func(c *yaml.Node) bool {
		c.HeadComment, c.LineComment, c.FootComment = "", "", ""
		return true
	})
	return n
}
