package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/internal/secret"
	"github.com/uncaged/uwf/internal/yamldoc"
)

// initCommand is "uwf init" (alias "setup"): config.yaml and .env in a
// few questions, or from flags alone.
func initCommand() *cli.Command {
	return &cli.Command{
		Name:    "init",
		Aliases: []string{"setup"},
		Usage:   "set up config.yaml and .env: the LLM provider, model and API key, and the default agent",
		Description: `On a terminal, asks for the LLM provider, its base URL, the model, the API key
(not echoed) and the default agent, offering the agent CLIs found on PATH
(the programs of the agent presets: claude, codex, agent (Cursor), gemini,
opencode, and the experimental aider and hermes); Enter takes the
[default]. A flag answers its question, which is then not asked. When
stdin is not a terminal nothing is asked: each answer comes from its flag,
else from the existing configuration, else (with --yes) from the default;
a missing one is a usage error naming the flags to pass.

Writes config.yaml (the provider, a model named after it, defaultModel,
defaultAgent, and for a chosen agent CLI an entry naming its preset, such
as claude: {preset: claude-code}; none removes defaultAgent) and the key
into .env (mode 0600) under the variable that providers.<p>.apiKeyEnv
names; the key is never printed. Run it again to change answers: it edits
both files, keeping their comments and every other setting. The result is
validated before anything is written; then it prints what it set and the
next command to run.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "provider", Usage: "the LLM provider `NAME`: " + strings.Join(providerNames(), ", ") + ", a name of your own (with --base-url), or none"},
			&cli.StringFlag{Name: "base-url", Usage: "the provider's OpenAI-compatible API root `URL`"},
			&cli.StringFlag{Name: "model", Usage: "the provider's model `ID`, such as gpt-4o-mini"},
			&cli.StringFlag{Name: "api-key-env", Usage: "the `VAR` that holds the API key (default: the provider's usual one, or <PROVIDER>_API_KEY)"},
			&cli.BoolFlag{Name: "api-key-stdin", Usage: "read the API key from stdin (a key given as an argument would show in ps and shell history)"},
			&cli.BoolFlag{Name: "no-api-key", Usage: "the provider needs no API key"},
			&cli.StringFlag{Name: "agent", Usage: "the default `AGENT`: an agent CLI (" + strings.Join(agentCLINames(), ", ") + "), a configured agent, llm, human, synth, or none"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "ask nothing: take the default of every question no flag answers"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			f := initFlags{
				given:    map[string]string{},
				keyStdin: c.Bool("api-key-stdin"),
				noKey:    c.Bool("no-api-key"),
				yes:      c.Bool("yes"),
			}
			for _, name := range []string{"provider", "base-url", "model", "api-key-env", "agent"} {
				if c.IsSet(name) {
					f.given[name] = c.String(name)
				}
			}
			if f.keyStdin && f.noKey {
				return usageErrorf(s.cmd, "--api-key-stdin and --no-api-key contradict each other")
			}
			return runInit(c.Context, c.App.Writer, s, f)
		}),
	}
}

// knownProvider is an OpenAI-compatible endpoint uwf init knows the
// defaults of.
type knownProvider struct {
	name, baseURL, model string
	keyEnv               string // "": it needs no key
}

var knownProviders = []knownProvider{
	{"openai", "https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY"},
	{"anthropic", "https://api.anthropic.com/v1", "claude-3-5-haiku-latest", "ANTHROPIC_API_KEY"},
	{"openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini", "OPENROUTER_API_KEY"},
	{"gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "gemini-2.0-flash", "GEMINI_API_KEY"},
	{"groq", "https://api.groq.com/openai/v1", "llama-3.1-8b-instant", "GROQ_API_KEY"},
	{"deepseek", "https://api.deepseek.com/v1", "deepseek-chat", "DEEPSEEK_API_KEY"},
	{"mistral", "https://api.mistral.ai/v1", "mistral-small-latest", "MISTRAL_API_KEY"},
	{"ollama", "http://localhost:11434/v1", "llama3.2", ""},
}

func providerNames() []string {
	var out []string
	for _, p := range knownProviders {
		out = append(out, p.name)
	}
	return out
}

func findProvider(name string) (knownProvider, bool) {
	for _, p := range knownProviders {
		if p.name == name {
			return p, true
		}
	}
	return knownProvider{}, false
}

// agentCLI is a coding agent's command line that uwf init offers as an
// agent: a built-in preset (config.Presets, docs/AGENTS.md), under the
// agent name users expect.
type agentCLI struct {
	name   string // the agent's name in config.yaml
	preset config.Preset
	// command is the program found on PATH when it is one of the
	// preset's OtherCommands ("" when it is the preset's Command or was
	// not looked up): the entry then names it.
	command string
}

// agentCLIs are the presets as uwf init offers them: the confirmed ones
// first, then the experimental ones, each in the presets' order. The
// agent's name is the preset's, shortened to its command where the
// preset's name begins with it ("claude" for claude-code: what users
// type), so that uwf init --agent claude works as they expect.
func agentCLIs() []agentCLI {
	var out, experimental []agentCLI
	for _, p := range config.Presets() {
		a := agentCLI{name: p.Name, preset: p}
		if strings.HasPrefix(p.Name, p.Command+"-") {
			a.name = p.Command
		}
		if p.Experimental {
			experimental = append(experimental, a)
		} else {
			out = append(out, a)
		}
	}
	return append(out, experimental...)
}

// agentCLINames names the agent CLIs for --agent's help, the
// experimental ones said so.
func agentCLINames() []string {
	var out []string
	for _, a := range agentCLIs() {
		if a.preset.Experimental {
			out = append(out, a.name+" (experimental)")
		} else {
			out = append(out, a.name)
		}
	}
	return out
}

// findAgentCLI finds an agent CLI by its agent name, its preset's name or
// its command.
func findAgentCLI(name string) (agentCLI, bool) {
	for _, a := range agentCLIs() {
		if a.name == name || a.preset.Name == name || a.preset.Command == name {
			return a, true
		}
		if slices.Contains(a.preset.OtherCommands, name) {
			a.command = name
			return a, true
		}
	}
	return agentCLI{}, false
}

// hasMarker reports whether the program at path, its symbolic links
// followed, has marker in its path; any program has the empty marker.
func hasMarker(path, marker string) bool {
	if marker == "" {
		return true
	}
	real, err := filepath.EvalSymlinks(path)
	return err == nil && strings.Contains(strings.ToLower(real), marker)
}

// detectAgentCLIs returns the agent CLIs whose preset's command (its
// resolved path holding the preset's PathMarker), or one of its other
// names, is on PATH, in agentCLIs' order.
func detectAgentCLIs() []agentCLI {
	var out []agentCLI
	for _, a := range agentCLIs() {
		if path, err := exec.LookPath(a.preset.Command); err == nil && hasMarker(path, a.preset.PathMarker) {
			out = append(out, a)
			continue
		}
		for _, c := range a.preset.OtherCommands {
			if _, err := exec.LookPath(c); err == nil {
				a.command = c
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// offer names a for people: "claude (Claude Code)", "aider (Aider,
// experimental preset)".
func (a agentCLI) offer() string {
	if a.preset.Experimental {
		return a.name + " (" + a.preset.Tool + ", experimental preset)"
	}
	return a.name + " (" + a.preset.Tool + ")"
}

// entry is the agents.<name> value written for a, as YAML flow: the
// preset alone, so that a later change of the preset reaches it, and the
// command when the program was found under another of its names.
func (a agentCLI) entry() string {
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "preset"}, {Kind: yaml.ScalarNode, Value: a.preset.Name},
	}}
	if a.command != "" {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "command"}, &yaml.Node{Kind: yaml.ScalarNode, Value: a.command})
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		panic(err) // a flow mapping of two scalars always encodes
	}
	return strings.TrimSpace(string(b))
}

// comment is the comment written above a's entry.
func (a agentCLI) comment() string {
	if a.preset.Experimental {
		return fmt.Sprintf("%s in its headless mode (preset %s, experimental: not confirmed from its own documentation or help; docs/AGENTS.md), added by uwf init", a.preset.Tool, a.preset.Name)
	}
	return fmt.Sprintf("%s in its headless mode (preset %s, docs/AGENTS.md), added by uwf init", a.preset.Tool, a.preset.Name)
}

// initFlags are uwf init's flags.
type initFlags struct {
	given    map[string]string // the flags given (provider, base-url, model, api-key-env, agent)
	keyStdin bool
	noKey    bool
	yes      bool
}

// initRun is one run of uwf init: its answers so far and how to get the
// others.
type initRun struct {
	ctx     context.Context
	s       *session
	f       initFlags
	cfg     *config.Config // the configuration before
	ask     *prompter      // nil: ask nothing
	missing []string       // the flags a non-interactive run lacks
}

// question is one thing uwf init asks.
type question struct {
	flag     string // the flag that answers it
	prompt   string
	existing string              // the configuration's answer ("" if none)
	def      string              // the default where the configuration has none ("" if none)
	check    func(string) string // the problem with an answer, or ""
}

// answer gets q's answer: from its flag, else by asking, else from the
// configuration or (with --yes) the default. ok is false when a
// non-interactive run has no answer (recorded in r.missing).
func (r *initRun) answer(q question) (string, bool, error) {
	if v, ok := r.f.given[q.flag]; ok {
		v = strings.TrimSpace(v)
		if why := q.check(v); why != "" {
			return "", false, usageErrorf(r.s.cmd, "invalid --%s %q: %s", q.flag, v, why)
		}
		return v, true, nil
	}
	def := q.existing
	if def == "" {
		def = q.def
	}
	if r.ask != nil {
		for {
			prompt := q.prompt
			if def != "" {
				prompt += " [" + def + "]"
			}
			v, err := r.ask.line(prompt + ": ")
			if err != nil {
				return "", false, err
			}
			if v = strings.TrimSpace(v); v == "" {
				v = def
			}
			why := q.check(v)
			if v == "" {
				why = "an answer is needed"
			}
			if why == "" {
				return v, true, nil
			}
			r.ask.say("  %s\n", why)
		}
	}
	if q.existing != "" || r.f.yes && q.def != "" {
		return def, true, nil
	}
	r.missing = append(r.missing, "--"+q.flag)
	return "", false, nil
}

// initResult is what uwf init did, as --json prints it.
type initResult struct {
	Config       string   `json:"config"`
	ConfigWrote  bool     `json:"configChanged"`
	Env          string   `json:"env"`
	EnvWrote     bool     `json:"envChanged"`
	EnvNarrowed  bool     `json:"envNarrowed,omitempty"` // an existing .env readable by others was set to mode 0600
	Provider     string   `json:"provider,omitempty"`
	BaseURL      string   `json:"baseURL,omitempty"`
	Model        string   `json:"model,omitempty"`
	ModelID      string   `json:"modelID,omitempty"`
	APIKeyEnv    string   `json:"apiKeyEnv,omitempty"`
	APIKey       string   `json:"apiKey"` // where the key is: ".env", "environment", "none needed" or "missing"
	DefaultAgent string   `json:"defaultAgent,omitempty"`
	AgentCLIs    []string `json:"agentCLIs"`       // found on PATH
	Notes        []string `json:"notes,omitempty"` // what still stands in the way (the default agent's program not on PATH)
	Next         string   `json:"next"`
}

func runInit(ctx context.Context, w io.Writer, s *session, f initFlags) error {
	home, err := s.homeDir()
	if err != nil {
		return err
	}
	cfg, err := s.config()
	if err != nil {
		return fmt.Errorf("uwf init edits the configuration, which must be valid first: %w", err)
	}
	r := &initRun{ctx: ctx, s: s, f: f, cfg: cfg}
	if in, ok := s.stdin.(*os.File); ok && !f.yes && !f.keyStdin && term.IsTerminal(int(in.Fd())) {
		r.ask = &prompter{ctx: ctx, in: in, out: s.stderr}
	}
	detected := detectAgentCLIs()
	res := initResult{Config: filepath.Join(home, config.File), Env: filepath.Join(home, config.EnvFile), AgentCLIs: []string{}}
	for _, a := range detected {
		res.AgentCLIs = append(res.AgentCLIs, a.name)
	}
	if r.ask != nil {
		r.ask.say("Setting up %s (config.yaml, .env); Enter takes the [default].\n", home)
		if len(detected) == 0 {
			var commands []string
			for _, a := range agentCLIs() {
				commands = append(commands, a.preset.Command)
			}
			r.ask.say("Agent CLIs on PATH: none of %s.\n", strings.Join(commands, ", "))
		} else {
			var names []string
			for _, a := range detected {
				names = append(names, a.offer())
			}
			r.ask.say("Agent CLIs on PATH: %s.\n", strings.Join(names, ", "))
		}
	}

	// The provider, its URL and model.
	oldModel, oldM, _, hasModel := cfg.ModelFor("", "")
	curProvider := ""
	if hasModel {
		curProvider = oldM.Provider
	} else if names := slices.Sorted(maps.Keys(cfg.Providers)); len(names) > 0 {
		curProvider = names[0]
	}
	provider, ok, err := r.answer(question{
		flag:     "provider",
		prompt:   "LLM provider (" + strings.Join(providerNames(), ", ") + ", a name of your own, or none)",
		existing: curProvider,
		def:      "openai",
		check: func(v string) string {
			if v == "none" {
				return ""
			}
			if why := yamldoc.NameProblem(v); why != "" {
				return "a provider name " + why
			}
			return ""
		},
	})
	if err != nil {
		return err
	}
	var edits []config.Edit
	keyEnv, key, keyGiven := "", "", false
	if ok && provider != "none" {
		known, isKnown := findProvider(provider)
		p, exists := cfg.Providers[provider]
		existingURL := ""
		if exists {
			existingURL = p.BaseURL
		}
		baseURL, _, err := r.answer(question{
			flag: "base-url", prompt: "Base URL of " + provider + "'s OpenAI-compatible API",
			existing: existingURL, def: known.baseURL, check: checkBaseURL,
		})
		if err != nil {
			return err
		}
		existingID := ""
		if hasModel && oldM.Provider == provider {
			existingID = oldM.Model
		}
		modelID, _, err := r.answer(question{
			flag: "model", prompt: "Model", existing: existingID, def: known.model,
			check: func(v string) string {
				if strings.ContainsAny(v, "\n\r") {
					return "a model id is one line"
				}
				return ""
			},
		})
		if err != nil {
			return err
		}
		keyEnv = f.given["api-key-env"]
		switch {
		case keyEnv != "":
			if why := checkEnvName(keyEnv); why != "" {
				return usageErrorf(s.cmd, "invalid --api-key-env %q: %s", keyEnv, why)
			}
		case f.noKey:
		case exists && p.APIKeyEnv != "":
			keyEnv = p.APIKeyEnv
		case isKnown:
			keyEnv = known.keyEnv
		default:
			keyEnv = strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(provider)) + "_API_KEY"
		}
		modelName := provider
		if hasModel && oldM.Provider == provider {
			modelName = oldModel
		} else {
			// A model of that name belonging to another provider is left
			// alone: take the next free name.
			for i := 2; cfg.Models[modelName].Provider != "" && cfg.Models[modelName].Provider != provider; i++ {
				modelName = fmt.Sprintf("%s-%d", provider, i)
			}
		}
		res.Provider, res.BaseURL, res.Model, res.ModelID, res.APIKeyEnv = provider, baseURL, modelName, modelID, keyEnv
		if baseURL != "" && modelID != "" {
			edits = append(edits, config.Edit{Path: "providers." + provider + ".baseURL", Value: baseURL})
			if keyEnv != "" {
				edits = append(edits, config.Edit{Path: "providers." + provider + ".apiKeyEnv", Value: keyEnv})
			}
			edits = append(edits,
				config.Edit{Path: "models." + modelName + ".provider", Value: provider},
				config.Edit{Path: "models." + modelName + ".model", Value: modelID},
				config.Edit{Path: "defaultModel", Value: modelName})
		}
		// The API key.
		if keyEnv != "" {
			have, inEnv := cfg.Secret(keyEnv)
			_, inOS := os.LookupEnv(keyEnv)
			where := ""
			switch {
			case have == "": // unset, or set to nothing: no key
			case inEnv && inOS:
				where = "environment"
			case inEnv:
				where = ".env"
			}
			switch {
			case f.noKey:
			case f.keyStdin:
				b, err := io.ReadAll(io.LimitReader(s.stdin, 64<<10))
				if err != nil {
					return fmt.Errorf("read the API key from stdin: %w", err)
				}
				key = strings.TrimRight(string(b), "\r\n")
				if strings.TrimSpace(key) == "" {
					return usageErrorf(s.cmd, "--api-key-stdin: stdin holds no key")
				}
				if strings.ContainsAny(key, "\n\r") {
					return usageErrorf(s.cmd, "--api-key-stdin: stdin holds more than one line")
				}
				keyGiven = true
			case r.ask != nil:
				hint := "Enter to skip"
				switch where {
				case "environment":
					hint = "Enter uses the one in your environment"
				case ".env":
					hint = "Enter keeps the one in .env"
				}
				for {
					v, err := r.ask.secret(fmt.Sprintf("API key, kept in .env as %s (not shown; %s): ", keyEnv, hint))
					if err != nil {
						return err
					}
					if v = strings.TrimSpace(v); v == "" || !strings.ContainsAny(v, " \t") {
						key, keyGiven = v, v != ""
						break
					}
					r.ask.say("  an API key has no spaces\n")
				}
			case where == "" && !(exists && p.APIKeyEnv == keyEnv):
				// A provider new to config.yaml needs its key; one already
				// there was set up before (its key may come later).
				r.missing = append(r.missing, "--api-key-stdin (or "+keyEnv+" set in the environment, or --no-api-key)")
			}
			if key != "" {
				s.mask.Add(key)
			}
			switch {
			case keyGiven:
				res.APIKey = ".env"
			case where != "":
				res.APIKey = where
			case f.noKey:
				res.APIKey = "none needed"
			default:
				res.APIKey = "missing"
			}
		} else {
			if f.keyStdin {
				return usageErrorf(s.cmd, "--api-key-stdin: provider %s needs no key (pass --api-key-env VAR to name the variable that holds one)", provider)
			}
			res.APIKey = "none needed"
		}
	} else {
		if f.keyStdin && ok {
			return usageErrorf(s.cmd, "--api-key-stdin: there is no provider to give a key to (--provider none)")
		}
		res.APIKey = "none needed"
	}

	// The default agent.
	choices := slices.Clone(res.AgentCLIs)
	for _, name := range cfg.AgentNames() {
		if !slices.Contains(choices, name) {
			choices = append(choices, name)
		}
	}
	choices = append(choices, "llm", "human", "synth", "none")
	agentDef := "none"
	switch {
	case len(detected) > 0:
		agentDef = detected[0].name
	case res.Model != "" || hasModel:
		agentDef = "llm"
	}
	agentName, agentOK, err := r.answer(question{
		flag: "agent", prompt: "Default agent (" + strings.Join(choices, ", ") + ")",
		existing: cfg.DefaultAgent, def: agentDef,
		check: func(v string) string {
			if v == "none" {
				return ""
			}
			if _, ok := cfg.Agents[v]; ok {
				return ""
			}
			if _, ok := findAgentCLI(v); ok {
				return ""
			}
			if agent.Builtins().IsBuiltin(v) {
				if v == "llm" && res.Model == "" && !hasModel {
					return "the llm agent needs a model: pick a provider"
				}
				return ""
			}
			return "not an agent: choose one of " + strings.Join(choices, ", ")
		},
	})
	if err != nil {
		return err
	}
	if len(r.missing) > 0 {
		return usageErrorf(s.cmd, "stdin is not a terminal, so nothing can be asked, and no answer was given for: %s (pass them; --yes takes the defaults where there are some)", strings.Join(r.missing, ", "))
	}
	switch {
	case !agentOK:
	case agentName == "none":
		// No default agent: one set before goes.
		edits = append(edits, config.Edit{Path: "defaultAgent", Delete: true})
	default:
		name := agentName
		_, configured := cfg.Agents[agentName]
		if a, ok := findAgentCLI(agentName); ok && !configured {
			// An agent CLI: an entry of its preset, unless config.yaml has
			// one of that name already (used as it is). Found on PATH
			// under another of its names, the entry names that program.
			for _, d := range detected {
				if d.name == a.name && a.command == "" {
					a.command = d.command
				}
			}
			name = a.name
			if _, ok := cfg.Agents[a.name]; !ok {
				edits = append(edits, config.Edit{Path: "agents." + a.name, Value: a.entry(), IfUnset: true, Comment: a.comment()})
			}
		}
		edits = append(edits, config.Edit{Path: "defaultAgent", Value: name})
	}

	// Write, config.yaml first: it is validated as a whole before it is
	// written, and .env was read (so is valid) by s.config.
	if res.ConfigWrote, err = config.Update(home, edits, agent.Builtins()); err != nil {
		return err
	}
	if keyGiven {
		if res.EnvWrote, err = config.SetEnv(home, keyEnv, key); err != nil {
			return err
		}
	}
	// .env holds secrets: narrow a file readable by others, even when no
	// key was written to it.
	if fi, err := os.Stat(res.Env); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(res.Env, 0o600); err != nil {
			return fmt.Errorf("narrow %s to mode 0600: %w", res.Env, err)
		}
		res.EnvNarrowed = true
	}
	after, err := config.Load(home, agent.Builtins())
	if err != nil {
		return fmt.Errorf("uwf init wrote a configuration that does not load: %w", err)
	}
	if res.Provider != "" {
		if _, _, _, ok := after.ModelFor("", ""); !ok {
			return fmt.Errorf("uwf init: defaultModel does not name a model of a provider in %s", res.Config)
		}
	}
	// The default agent as a run would take it: it resolves, and its
	// program (if it has one) is found; one that is not is a note, since
	// it may be installed later.
	res.DefaultAgent = after.DefaultAgent
	if res.DefaultAgent != "" {
		name, spec, err := agent.Resolve(after, "", "", "")
		if err != nil {
			return fmt.Errorf("uwf init wrote a default agent that does not resolve: %w", err)
		}
		if !agent.IsBuiltin(name) {
			if err := agent.Check(ctx, name, spec, "", &agent.Options{Config: after}); err != nil {
				res.Notes = append(res.Notes, err.Error())
			}
		}
	}
	res.Next = initNext(s, res, home)
	if s.json {
		return writeJSON(w, res)
	}
	return printInit(w, res, after)
}

// initNext is the command to run next, runnable as printed: with the
// --home and --store this command line gave (the environment's are
// inherited anyway; a store's password shown as xxxxx, and said so). The
// example workflow is registered from examples/review-loop.yaml where the
// working folder has it (a checkout of uwf), else by uwf demo, which
// registers its bundled copy in this home and runs it offline.
func initNext(s *session, res initResult, home string) string {
	uwf, hidden := "uwf", false
	if s.home != "" && os.Getenv("UWF_HOME") != s.home {
		uwf += " --home " + shellWord(s.home)
	}
	if s.store != "" && os.Getenv("UWF_STORE") != s.store {
		printable := secret.RedactURL(absStoreURL(s.store))
		hidden = printable != absStoreURL(s.store)
		uwf += " --store " + shellWord(printable)
	}
	var next string
	switch _, err := os.Stat(filepath.Join("examples", "review-loop.yaml")); {
	case res.DefaultAgent == "":
		next = uwf + " demo    (offline; then choose an agent: " + uwf + " init --agent <name>)"
	case err == nil:
		next = uwf + " workflow put examples/review-loop.yaml && " + uwf + " thread run review-loop -p \"your task\""
	default:
		demo := uwf
		if s.home == "" {
			demo += " --home " + shellWord(home) // else demo takes a temporary home
		}
		next = demo + " demo && " + uwf + " thread run review-loop -p \"your task\""
	}
	if hidden {
		next += "    (the store's password is shown as xxxxx: put yours back, or set UWF_STORE and drop --store)"
	}
	return next
}

// shellWord quotes s for a POSIX shell if it holds anything but letters,
// digits and -_./:=@%+, (a leading ~ would be expanded, so it is quoted).
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func printInit(w io.Writer, res initResult, cfg *config.Config) error {
	var b strings.Builder
	if res.ConfigWrote {
		fmt.Fprintf(&b, "Wrote %s.\n", res.Config)
	} else {
		fmt.Fprintf(&b, "%s is unchanged.\n", res.Config)
	}
	if res.EnvWrote {
		fmt.Fprintf(&b, "Wrote %s (mode 0600): %s.\n", res.Env, res.APIKeyEnv)
	}
	if res.EnvNarrowed && !res.EnvWrote {
		fmt.Fprintf(&b, "Narrowed %s to mode 0600: it holds secrets.\n", res.Env)
	}
	if res.Provider != "" {
		fmt.Fprintf(&b, "  provider       %s: %s\n", res.Provider, res.BaseURL)
		fmt.Fprintf(&b, "  defaultModel   %s: %s\n", res.Model, res.ModelID)
		switch res.APIKey {
		case "missing":
			fmt.Fprintf(&b, "  API key        not set: put it in %s or the environment, or run uwf init again\n", res.APIKeyEnv)
		case "none needed":
			fmt.Fprintf(&b, "  API key        none\n")
		default:
			fmt.Fprintf(&b, "  API key        %s, from %s\n", res.APIKeyEnv, res.APIKey)
		}
	}
	switch a, ok := cfg.Agent(res.DefaultAgent); {
	case res.DefaultAgent == "":
		fmt.Fprintf(&b, "  defaultAgent   none\n")
	case ok:
		preset := ""
		if p, ok := config.PresetByName(a.Preset); ok {
			preset = " (preset " + p.Name + ")"
			if p.Experimental {
				preset = " (preset " + p.Name + ", experimental: not confirmed from the tool's own documentation or help)"
			}
		}
		fmt.Fprintf(&b, "  defaultAgent   %s: %s%s\n", res.DefaultAgent, strings.TrimSpace(a.Command+" "+strings.Join(a.Args, " ")), preset)
	default:
		fmt.Fprintf(&b, "  defaultAgent   %s (built in)\n", res.DefaultAgent)
	}
	if len(res.AgentCLIs) > 0 {
		fmt.Fprintf(&b, "  on PATH        %s\n", strings.Join(res.AgentCLIs, ", "))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "  note           %s\n", n)
	}
	fmt.Fprintf(&b, "Next: %s\n", res.Next)
	_, err := io.WriteString(w, b.String())
	return err
}

func checkBaseURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "want an http or https URL, such as https://api.openai.com/v1"
	}
	return ""
}

func checkEnvName(v string) string {
	for i, r := range v {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return "want a variable name, such as OPENAI_API_KEY (it names the variable that holds the key, not the key)"
		}
	}
	if v == "" {
		return "want a variable name, such as OPENAI_API_KEY"
	}
	return ""
}

// prompter asks questions on a terminal: the question on out (stderr),
// the answer from in. An interrupt (ctx cancelled) ends a question at
// once, with the terminal restored.
type prompter struct {
	ctx context.Context
	in  *os.File
	out io.Writer
}

func (p *prompter) say(format string, args ...any) { fmt.Fprintf(p.out, format, args...) }

type readResult struct {
	s   string
	err error
}

// line asks prompt and reads one line, unbuffered (so nothing typed
// after it is taken from a later question).
func (p *prompter) line(prompt string) (string, error) {
	io.WriteString(p.out, prompt)
	ch := make(chan readResult, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for {
			n, err := p.in.Read(one)
			if n == 1 {
				if one[0] == '\n' {
					ch <- readResult{strings.TrimSuffix(string(b), "\r"), nil}
					return
				}
				b = append(b, one[0])
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = errEndOfInput
				}
				ch <- readResult{"", err}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-p.ctx.Done():
		io.WriteString(p.out, "\n")
		return "", p.ctx.Err()
	}
}

// secret asks prompt and reads a line without echoing it. The terminal
// is in raw mode meanwhile (restored on every return), so the keys are
// handled here: Enter ends the line, Backspace and Ctrl-U edit it, Ctrl-C
// interrupts (context.Canceled, as SIGINT does), Ctrl-D on an empty line
// ends the input.
func (p *prompter) secret(prompt string) (string, error) {
	// Consulted before raw mode, so that uwf has taken over SIGINT and
	// SIGTERM (see signalContext): until then a signal ends the process
	// at once, which would leave the terminal without echo.
	if err := p.ctx.Err(); err != nil {
		return "", err
	}
	fd := int(p.in.Fd())
	state, err := term.MakeRaw(fd)
	if err != nil {
		return "", fmt.Errorf("read the API key: %w", err)
	}
	defer term.Restore(fd, state)
	io.WriteString(p.out, prompt)
	ch := make(chan readResult, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for {
			n, err := p.in.Read(one)
			if err != nil {
				ch <- readResult{"", fmt.Errorf("read the API key: %w", err)}
				return
			}
			if n == 0 {
				continue
			}
			switch c := one[0]; c {
			case '\r', '\n':
				ch <- readResult{string(b), nil}
				return
			case 3: // Ctrl-C
				ch <- readResult{"", context.Canceled}
				return
			case 4: // Ctrl-D
				if len(b) == 0 {
					ch <- readResult{"", errEndOfInput}
					return
				}
			case 0x7f, '\b': // Backspace: one character (a UTF-8 sequence) back
				for len(b) > 0 {
					last := b[len(b)-1]
					b = b[:len(b)-1]
					if last&0xc0 != 0x80 {
						break
					}
				}
			case 0x15: // Ctrl-U
				b = b[:0]
			default:
				if c >= 0x20 {
					b = append(b, c)
				}
			}
		}
	}()
	var r readResult
	select {
	case r = <-ch:
	case <-p.ctx.Done():
		r = readResult{"", p.ctx.Err()}
	}
	io.WriteString(p.out, "\r\n") // raw mode: no carriage return of its own
	return r.s, r.err
}

var errEndOfInput = errors.New("uwf init: the input ended before every question was answered")
