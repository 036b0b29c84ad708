package config_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/internal/secret"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// exampleConfig is the config.yaml of docs/WORKFLOWS.md.
const exampleConfig = `# uwf configuration
agents:
  claude:                      # an agent command
    command: claude
    args: [-p, --output-format, text]
    timeout: 20m
  codex:
    command: /usr/local/bin/codex
    args: [exec, -]
    env:
      CODEX_HOME: /tmp/codex
      GITHUB_TOKEN: ghp_example
defaultAgent: claude
agentOverrides:
  develop:
    reviewer: codex
    tester: human
providers:
  openai:
    baseURL: https://api.openai.com/v1
    apiKeyEnv: OPENAI_API_KEY
  local:
    baseURL: http://localhost:11434/v1
models:
  fast:
    provider: openai
    model: gpt-4o-mini
  qwen:
    provider: local
    model: qwen2.5-coder:7b
defaultModel: fast
secrets: [DATABASE_URL]
modelOverrides:
  develop:
    planner: qwen
`

func writeHome(t *testing.T, config string) string {
	t.Helper()
	home := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func mustLoad(t *testing.T, home string) *config.Config {
	t.Helper()
	c, err := config.Load(home, builtins{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestLoadExample(t *testing.T) {
	c := mustLoad(t, writeHome(t, exampleConfig))
	want := &config.Config{
		Agents: map[string]config.Agent{
			"claude": {Command: "claude", Args: []string{"-p", "--output-format", "text"}, Timeout: 20 * time.Minute},
			"codex":  {Command: "/usr/local/bin/codex", Args: []string{"exec", "-"}, Env: map[string]string{"CODEX_HOME": "/tmp/codex", "GITHUB_TOKEN": "ghp_example"}},
		},
		DefaultAgent:   "claude",
		AgentOverrides: map[string]map[string]string{"develop": {"reviewer": "codex", "tester": "human"}},
		Providers: map[string]config.Provider{
			"openai": {BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY"},
			"local":  {BaseURL: "http://localhost:11434/v1"},
		},
		Models: map[string]config.Model{
			"fast": {Provider: "openai", Model: "gpt-4o-mini"},
			"qwen": {Provider: "local", Model: "qwen2.5-coder:7b"},
		},
		DefaultModel:   "fast",
		ModelOverrides: map[string]map[string]string{"develop": {"planner": "qwen"}},
	}
	if !reflect.DeepEqual(c.Agents, want.Agents) || c.DefaultAgent != want.DefaultAgent ||
		!reflect.DeepEqual(c.AgentOverrides, want.AgentOverrides) || !reflect.DeepEqual(c.Providers, want.Providers) ||
		!reflect.DeepEqual(c.Models, want.Models) || c.DefaultModel != want.DefaultModel ||
		!reflect.DeepEqual(c.ModelOverrides, want.ModelOverrides) || !slices.Equal(c.SecretVars, []string{"DATABASE_URL"}) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
}

func TestLoadMissing(t *testing.T) {
	c := mustLoad(t, t.TempDir())
	if c.Agents != nil || c.DefaultAgent != "" {
		t.Errorf("missing config = %+v", c)
	}
	c = mustLoad(t, writeHome(t, "# nothing yet\n"))
	if len(c.List()) != 0 {
		t.Errorf("comment-only config lists %v", c.List())
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"bad duration", "agents:\n  coder: {command: x,\n    timeout: ten}\n",
			`config.yaml:3:14: agents.coder.timeout: invalid duration "ten"`},
		{"duration without unit", "agents:\n  coder:\n    command: x\n    timeout: 10\n",
			`config.yaml:4:14: agents.coder.timeout: invalid duration "10": give a unit (10s, 10m)`},
		{"negative duration", "agents:\n  coder:\n    command: x\n    timeout: -1m\n",
			`config.yaml:4:14: agents.coder.timeout: must be positive, not "-1m"`},
		{"unknown top key", "agent:\n  coder: {command: x}\n",
			`config.yaml:1:1: unknown key "agent" (config.yaml has agents, defaultAgent, agentOverrides, providers, models, defaultModel, modelOverrides, secrets)`},
		{"unknown agent key", "agents:\n  coder:\n    comand: x\n",
			"config.yaml:2:3: agents.coder: missing command (or a preset: aider, claude-code, codex, cursor, gemini, hermes, opencode)\n" +
				`config.yaml:3:5: agents.coder: unknown key "comand" (an agent has preset, command, args, extraArgs, env, prompt, promptFlag, output, timeout)`},
		{"unknown preset", "agents:\n  coder: {preset: claude}\n",
			`config.yaml:2:19: agents.coder.preset: unknown preset "claude" (presets: aider, claude-code, codex, cursor, gemini, hermes, opencode)`},
		{"bad prompt and output", "agents:\n  coder: {preset: codex, prompt: pipe, output: xml, extraArgs: -m}\n",
			"config.yaml:2:34: agents.coder.prompt: must be one of stdin, arg, file, not \"pipe\"\n" +
				"config.yaml:2:48: agents.coder.output: must be one of text, aider, claude-code, codex, cursor, gemini, opencode, not \"xml\"\n" +
				"config.yaml:2:64: agents.coder.extraArgs: must be a list of strings, not a string"},
		{"unknown provider key", "providers:\n  openai: {baseURL: 'https://x', apiKey: sk-123}\n",
			`config.yaml:2:34: providers.openai: unknown key "apiKey" (a provider has baseURL, apiKeyEnv)`},
		{"built-in names", "agents:\n  llm: {command: x}\n  replay: {command: y}\n",
			"config.yaml:2:3: agents.llm: \"llm\" is a built-in agent (human, llm, replay:<thread>, synth); pick another name\n" +
				"config.yaml:3:3: agents.replay: \"replay\" is a built-in agent (human, llm, replay:<thread>, synth); pick another name"},
		{"bad names", "agents:\n  my agent: {command: x, env: {1BAD: v}, args: [a, {b: c}]}\n",
			"config.yaml:2:3: agents.my agent: agent name \"my agent\" may use only letters, digits, '.', '_' and '-', and must start with a letter or digit\n" +
				"config.yaml:2:32: agents.my agent.env: invalid variable name \"1BAD\"\n" +
				"config.yaml:2:52: agents.my agent.args[1]: must be a string, not a mapping"},
		{"unknown references", "agents:\n  coder: {command: x}\ndefaultAgent: cdoer\nagentOverrides:\n  develop: {tester: robot}\n" +
			"providers:\n  openai: {baseURL: 'https://api.openai.com/v1'}\nmodels:\n  fast: {provider: opneai, model: m}\n" +
			"defaultModel: slow\nmodelOverrides:\n  develop: {coder: medium}\n",
			"config.yaml:3:15: defaultAgent: unknown agent \"cdoer\" (configured: coder; built-in: human, llm, replay:<thread>, synth)\n" +
				"config.yaml:5:21: agentOverrides.develop.tester: unknown agent \"robot\" (configured: coder; built-in: human, llm, replay:<thread>, synth)\n" +
				"config.yaml:9:20: models.fast.provider: unknown provider \"opneai\" (providers: openai)\n" +
				"config.yaml:10:15: defaultModel: unknown model \"slow\" (models: fast)\n" +
				"config.yaml:12:20: modelOverrides.develop.coder: unknown model \"medium\" (models: fast)"},
		{"provider problems", "providers:\n  a: {baseURL: 'ftp://x', apiKeyEnv: sk-123}\n  b: {apiKeyEnv: KEY}\nmodels:\n  m: {provider: a}\n",
			"config.yaml:2:16: providers.a.baseURL: must be an http or https URL, not \"ftp://x\"\n" +
				"config.yaml:2:38: providers.a.apiKeyEnv: invalid variable name \"sk-123\" (it names the variable that holds the key, not the key)\n" +
				"config.yaml:3:3: providers.b: missing baseURL\n" +
				"config.yaml:5:3: models.m: missing model"},
		{"wrong types", "agents: [coder]\ndefaultAgent: {name: x}\n",
			"config.yaml:1:9: agents: must be a mapping of agent names to agents, not a list\n" +
				"config.yaml:2:15: defaultAgent: must be a string, not a mapping"},
		{"syntax", "agents:\n  coder: [\n", `config.yaml:3: YAML syntax: did not find expected node content, in the block starting on this line`},
		{"duplicate", "defaultAgent: llm\ndefaultAgent: human\n", `config.yaml:2:1: duplicate key "defaultAgent" (first at line 1)`},
		{"two documents", "defaultAgent: llm\n---\ndefaultAgent: human\n", `config.yaml:2:1: YAML syntax: more than one document: a second one starts here`},
		{"control character", "defaultAgent: l\x01m\n", `config.yaml:1:16: YAML syntax: control character U+0001 is not allowed in YAML`},
		{"merge of a scalar", "agents:\n  a: {<<: x, command: c}\n", `config.yaml:2:11: a merge (<<) needs a mapping or a sequence of mappings`},
		{"not a mapping", "- a\n", `config.yaml:1:1: config.yaml is a mapping (agents, defaultAgent, agentOverrides, providers, models, defaultModel, modelOverrides, secrets), not a list`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := writeHome(t, tc.config)
			_, err := config.Load(home, builtins{})
			var ve *config.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, cas.ErrInvalid) {
				t.Fatalf("Load = %v, want a *ValidationError", err)
			}
			if ve.File != filepath.Join(home, "config.yaml") {
				t.Errorf("File = %q", ve.File)
			}
			got := strings.ReplaceAll(err.Error(), home+string(filepath.Separator), "")
			if got != tc.want {
				t.Errorf("Load error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestSecret(t *testing.T) {
	home := writeHome(t, "")
	env := "# secrets\nexport UWF_TEST_A=from-dotenv\nUWF_TEST_B='dotenv b'\nUWF_TEST_EMPTY=dotenv\n"
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UWF_TEST_A", "from-env")
	t.Setenv("UWF_TEST_EMPTY", "")
	c := mustLoad(t, home)
	tests := []struct {
		name string
		want string
		ok   bool
	}{
		{"UWF_TEST_A", "from-env", true}, // the environment wins
		{"UWF_TEST_B", "dotenv b", true}, // else .env
		{"UWF_TEST_EMPTY", "", true},     // set, even empty, still wins
		{"UWF_TEST_NONE", "", false},     // neither
	}
	for _, tc := range tests {
		if got, ok := c.Secret(tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("Secret(%s) = %q, %v, want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	// A bad .env is an error naming the file and line.
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("OK=1\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(home, builtins{})
	if err == nil || err.Error() != filepath.Join(home, ".env")+":2: expected KEY=VALUE" {
		t.Errorf("Load with a bad .env = %v", err)
	}
}

func TestConfigSecrets(t *testing.T) {
	home := writeHome(t, `agents:
  coder:
    command: x
    env: {GH_TOKEN: agent-gh-token, AGENT_LOG: /tmp/agent-log, DB_URL: marked-by-list}
providers:
  openai: {baseURL: 'https://api.openai.com/v1', apiKeyEnv: UWF_TEST_PROVIDER}
secrets: [DB_URL, UWF_TEST_MARKED, DB_URL]
`)
	env := "UWF_TEST_DOTENV_KEY=dotenv-key-value\nUWF_TEST_PLAIN=dotenv-plain-value\nUWF_TEST_MARKED=dotenv-marked\n"
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UWF_TEST_PROVIDER", "sk-provider-key") // a provider's key, whatever its name
	t.Setenv("UWF_TEST_ENV_PASSWORD", "env-password")
	t.Setenv("UWF_TEST_ENV_PLAIN", "env-plain-value")
	c := mustLoad(t, home)
	if !slices.Equal(c.SecretVars, []string{"DB_URL", "UWF_TEST_MARKED"}) {
		t.Errorf("SecretVars = %q", c.SecretVars)
	}
	got := c.Secrets()
	if !slices.IsSorted(got) {
		t.Errorf("Secrets() = %q, not sorted", got)
	}
	for _, v := range []string{"agent-gh-token", "marked-by-list", "sk-provider-key", "dotenv-key-value", "dotenv-marked", "env-password"} {
		if !slices.Contains(got, v) {
			t.Errorf("Secrets() = %q, lacks %q", got, v)
		}
	}
	for _, v := range []string{"/tmp/agent-log", "dotenv-plain-value", "env-plain-value"} {
		if slices.Contains(got, v) {
			t.Errorf("Secrets() = %q, holds %q, which nothing marks secret", got, v)
		}
	}
	if v, err := c.Get("secrets"); err != nil || toText(v) != "[DB_URL UWF_TEST_MARKED]" {
		t.Errorf("Get(secrets) = %v, %v: the names are shown", toText(v), err)
	}
}

func TestConfigSecretsErrors(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"not a list", "secrets: DB_URL\n", `config.yaml:1:10: secrets: must be a list of variable names, not a string`},
		{"a value, not a name", "secrets: [sk-123]\n",
			`config.yaml:1:11: secrets[0]: invalid variable name "sk-123" (list the names of variables whose values are secret, not the values)`},
		{"not a string", "secrets: [{a: b}]\n", `config.yaml:1:11: secrets[0]: must be a string, not a mapping`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := writeHome(t, tc.config)
			_, err := config.Load(home, builtins{})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if got := strings.ReplaceAll(err.Error(), home+string(filepath.Separator), ""); got != tc.want {
				t.Errorf("Load error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestAgentName(t *testing.T) {
	c := mustLoad(t, writeHome(t, exampleConfig))
	tests := []struct {
		workflow, role, explicit string
		name, from               string
	}{
		{"develop", "coder", "", "claude", "defaultAgent"},
		{"develop", "reviewer", "", "codex", "agentOverrides.develop.reviewer"},
		{"develop", "tester", "", "human", "agentOverrides.develop.tester"},
		{"develop", "reviewer", "claude", "claude", "--agent"},
		{"review-loop", "reviewer", "", "claude", "defaultAgent"},
	}
	for _, tc := range tests {
		if name, from := c.AgentName(tc.workflow, tc.role, tc.explicit); name != tc.name || from != tc.from {
			t.Errorf("AgentName(%s, %s, %q) = %s, %s; want %s, %s", tc.workflow, tc.role, tc.explicit, name, from, tc.name, tc.from)
		}
	}
	var empty config.Config
	if name, from := empty.AgentName("develop", "coder", ""); name != "" || from != "defaultAgent" {
		t.Errorf("AgentName with no config = %q, %q", name, from)
	}
	if got := c.AgentNames(); !slices.Equal(got, []string{"claude", "codex"}) {
		t.Errorf("AgentNames() = %v", got)
	}
}

func TestAgent(t *testing.T) {
	c := mustLoad(t, writeHome(t, exampleConfig))
	a, ok := c.Agent("claude")
	if !ok || a.Command != "claude" || a.Timeout != 20*time.Minute || !slices.Equal(a.Args, []string{"-p", "--output-format", "text"}) {
		t.Errorf("Agent(claude) = %+v, %v", a, ok)
	}
	a, ok = c.Agent("codex")
	if !ok || a.Timeout != config.DefaultAgentTimeout {
		t.Errorf("Agent(codex) = %+v, %v; want the default timeout", a, ok)
	}
	a.Env["CODEX_HOME"] = "changed"
	a.Args[0] = "changed"
	if c.Agents["codex"].Env["CODEX_HOME"] != "/tmp/codex" || c.Agents["codex"].Args[0] != "exec" {
		t.Errorf("Agent returned the config's own map or slice")
	}
	for _, name := range []string{"synth", "nope", ""} {
		if a, ok := c.Agent(name); ok {
			t.Errorf("Agent(%q) = %+v, true; want no entry", name, a)
		}
	}
}

// TestMergeKeys: config.yaml may share settings through YAML merge keys;
// keys written beside a merge win over merged ones.
func TestMergeKeys(t *testing.T) {
	c := mustLoad(t, writeHome(t, `agents:
  base: &base
    command: claude
    args: [-p]
    timeout: 20m
  careful:
    <<: *base
    timeout: 1h
  quick: {<<: *base, args: [-p, --fast]}
`))
	careful, ok := c.Agent("careful")
	if !ok || careful.Command != "claude" || careful.Timeout != time.Hour || !slices.Equal(careful.Args, []string{"-p"}) {
		t.Errorf("Agent(careful) = %+v, %v; want claude -p, 1h", careful, ok)
	}
	quick, ok := c.Agent("quick")
	if !ok || quick.Command != "claude" || quick.Timeout != 20*time.Minute || !slices.Equal(quick.Args, []string{"-p", "--fast"}) {
		t.Errorf("Agent(quick) = %+v, %v; want claude -p --fast, 20m", quick, ok)
	}
}

func TestModelFor(t *testing.T) {
	c := mustLoad(t, writeHome(t, exampleConfig))
	tests := []struct {
		workflow, role string
		want, model    string
		baseURL        string
		ok             bool
	}{
		{"develop", "planner", "qwen", "qwen2.5-coder:7b", "http://localhost:11434/v1", true}, // override
		{"develop", "coder", "fast", "gpt-4o-mini", "https://api.openai.com/v1", true},        // default
		{"other", "planner", "fast", "gpt-4o-mini", "https://api.openai.com/v1", true},
	}
	for _, tc := range tests {
		name, m, p, ok := c.ModelFor(tc.workflow, tc.role)
		if name != tc.want || m.Model != tc.model || p.BaseURL != tc.baseURL || ok != tc.ok {
			t.Errorf("ModelFor(%s, %s) = %s %+v %+v %v", tc.workflow, tc.role, name, m, p, ok)
		}
	}
	if _, _, _, ok := mustLoad(t, t.TempDir()).ModelFor("develop", "coder"); ok {
		t.Errorf("ModelFor with no config: ok")
	}
}

func TestConfigGetList(t *testing.T) {
	c := mustLoad(t, writeHome(t, exampleConfig))
	for path, want := range map[string]any{
		"agents.claude.command":           "claude",
		"agents.claude.timeout":           "20m",
		"agents.claude.args":              []any{"-p", "--output-format", "text"},
		"agents.codex.env.GITHUB_TOKEN":   "ghp_example",
		"providers.openai.apiKeyEnv":      "OPENAI_API_KEY",
		"agentOverrides.develop.reviewer": "codex",
		"modelOverrides.develop.planner":  "qwen",
		"defaultModel":                    "fast",
		"models.fast":                     map[string]any{"provider": "openai", "model": "gpt-4o-mini"},
	} {
		got, err := c.Get(path)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Get(%s) = %#v, %v; want %#v", path, got, err, want)
		}
	}
	for _, path := range []string{"agents.nobody", "agents.claude.env", "defaultModel.x", "nothing"} {
		if _, err := c.Get(path); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Get(%s) = %v, want ErrNotFound", path, err)
		}
	}
	var lines []string
	for _, kv := range c.List() {
		lines = append(lines, kv.Path+" = "+toText(kv.Value))
	}
	want := `agentOverrides.develop.reviewer = codex
agentOverrides.develop.tester = human
agents.claude.args = [-p --output-format text]
agents.claude.command = claude
agents.claude.timeout = 20m
agents.codex.args = [exec -]
agents.codex.command = /usr/local/bin/codex
agents.codex.env.CODEX_HOME = ********
agents.codex.env.GITHUB_TOKEN = ********
defaultAgent = claude
defaultModel = fast
modelOverrides.develop.planner = qwen
models.fast.model = gpt-4o-mini
models.fast.provider = openai
models.qwen.model = qwen2.5-coder:7b
models.qwen.provider = local
providers.local.baseURL = http://localhost:11434/v1
providers.openai.apiKeyEnv = OPENAI_API_KEY
providers.openai.baseURL = https://api.openai.com/v1
secrets = [DATABASE_URL]`
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("List =\n%s\nwant\n%s", got, want)
	}
}

func toText(v any) string {
	if l, ok := v.([]any); ok {
		var parts []string
		for _, e := range l {
			parts = append(parts, e.(string))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return v.(string)
}

func TestMasked(t *testing.T) {
	tests := []struct {
		path  string
		value any
		want  any
	}{
		{"providers.openai.apiKey", "sk-1", config.Mask},
		{"x.GITHUB_TOKEN", "t", config.Mask},
		{"x.clientSecret", "s", config.Mask},
		{"x.db_password", "p", config.Mask},
		{"x.PASSWORD", "p", config.Mask},
		{"providers.openai.apiKeyEnv", "OPENAI_API_KEY", "OPENAI_API_KEY"}, // names a variable
		{"agents.coder.env.HOME", "/home/x", config.Mask},                  // any env value
		{"agents.coder.command", "claude", "claude"},
		{"agents.coder.keys", "k", config.Mask}, // contains KEY
		{"x.GITHUB_TOKEN_PATH", "/run/t", config.Mask},
		{"x.monkey", "m", config.Mask},
		{"x.passwd", "p", "p"},
		{"secrets", []any{"DATABASE_URL"}, []any{"DATABASE_URL"}}, // names variables
		{"x.apiKeyEnv", "V", config.Mask},                         // only a provider's names one
		{"defaultModel", "fast", "fast"},
		{"agents.env.command", "envy", "envy"},            // an agent named env
		{"agentOverrides.env.reviewer", "coder", "coder"}, // a workflow named env
		{"agents.coder.args", []any{"env", "x"}, []any{"env", "x"}},
		{"agents.coder.env", map[string]any{"A": "1"}, map[string]any{"A": config.Mask}},
		{"agents.coder", map[string]any{"command": "c", "env": map[string]any{"A": "1"}},
			map[string]any{"command": "c", "env": map[string]any{"A": config.Mask}}},
		{"", map[string]any{"token": "t"}, map[string]any{"token": config.Mask}},
	}
	for _, tc := range tests {
		if got := config.Masked(tc.path, tc.value); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Masked(%s, %v) = %v, want %v", tc.path, tc.value, got, tc.want)
		}
	}
}

// TestMaskedAgreesWithAgentMasking: config list and get mask a setting
// exactly when masking agent output treats a variable of that name as a
// secret: one rule for both.
func TestMaskedAgreesWithAgentMasking(t *testing.T) {
	for _, name := range []string{"OPENAI_API_KEY", "apiKey", "GITHUB_TOKEN", "GITHUB_TOKEN_PATH", "token_file", "clientSecret",
		"SECRETS_DIR", "db_password", "PasswordHint", "keys", "HOME", "PATH", "model", "baseURL", "passwd", "tok"} {
		masked := config.Masked("x."+name, "value") == config.Mask
		if want := secret.IsSecretName(name); masked != want {
			t.Errorf("Masked(x.%s) masks: %v; secret.IsSecretName(%q) = %v", name, masked, name, want)
		}
	}
}

// TestSet edits a commented config.yaml step by step and
// compares the result with a golden file: comments and key order stay.
func TestSet(t *testing.T) {
	home := writeHome(t, `# uwf configuration
agents:
  # Claude Code, headless.
  claude:
    command: claude   # found in PATH
    args: [-p]
    timeout: 20m
defaultAgent: claude  # used unless overridden

# Models come last.
models: {}
`)
	sets := [][2]string{
		{"agents.claude.timeout", "30m"},              // replace, keep the line comment
		{"agents.codex.command", "codex"},             // new agent: intermediate maps
		{"agents.codex.args", "[exec, --full-auto]"},  // a flow list
		{"agents.codex.env.CODEX_HOME", "/tmp/codex"}, // deeper
		{"defaultAgent", "codex"},
		{"agentOverrides.develop.tester", "human"},
		{"providers.openai.baseURL", "https://api.openai.com/v1"},
		{"providers.openai.apiKeyEnv", "OPENAI_API_KEY"},
		{"models.fast", "{provider: openai, model: gpt-4o-mini}"}, // a model needs both at once
		{"models.fast.model", "gpt-4.1-mini"},
		{"defaultModel", "fast"},
	}
	for _, s := range sets {
		if err := config.Set(home, s[0], s[1], builtins{}); err != nil {
			t.Fatalf("Set(%s, %s): %v", s[0], s[1], err)
		}
	}
	got, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/set.golden"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("config.yaml after sets:\n%s\nwant:\n%s", got, want)
	}
	c := mustLoad(t, home)
	name, _ := c.AgentName("develop", "coder", "")
	if a, ok := c.Agent(name); !ok || name != "codex" || a.Args[1] != "--full-auto" {
		t.Errorf("agent after sets = %s %+v, %v", name, a, ok)
	}
	if fi, err := os.Stat(filepath.Join(home, "config.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after set: %v, %v", fi.Mode(), err)
	}
	if es, err := os.ReadDir(home); err != nil || len(es) != 1 {
		t.Errorf("files in the home after sets (want only config.yaml): %v, %v", es, err)
	}

	// An edit that would make the config invalid is refused; nothing changes.
	for _, s := range [][2]string{
		{"agents.claude.timeout", "ten"},
		{"defaultAgent", "nobody"},
		{"agents.claude.commmand", "x"},
		{"agents.claude.command.sub", "x"},
		{"agents..command", "x"},
		{"models.slow.provider", "openai"}, // a model without its model id
	} {
		err := config.Set(home, s[0], s[1], builtins{})
		if err == nil || !errors.Is(err, cas.ErrInvalid) {
			t.Errorf("Set(%s, %s) = %v, want an error wrapping ErrInvalid", s[0], s[1], err)
		}
	}
	after, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	if string(after) != string(got) {
		t.Errorf("a refused set changed the file")
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Errorf("home holds %d entries, want only config.yaml (no temp files)", len(entries))
	}
}

func TestSetNewFile(t *testing.T) {
	home := filepath.Join(t.TempDir(), "new-home")
	if err := config.Set(home, "agents.bot.timeout", "90s", builtins{}); err == nil {
		t.Fatal("agent without command accepted")
	}
	if err := config.Set(home, "defaultAgent", "synth", builtins{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	if err != nil || string(got) != "defaultAgent: synth\n" {
		t.Errorf("new config.yaml = %q, %v", got, err)
	}
	// Values are read as YAML, so a string that looks like a number keeps
	// its quotes when given quoted.
	if err := config.Set(home, "agentOverrides.develop.coder", `"human"`, builtins{}); err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, home)
	if name, _ := c.AgentName("develop", "coder", ""); name != "human" {
		t.Errorf("AgentName = %s, want human", name)
	}
}

// builtins stands for package agent's built-in agents (config's tests do
// not import agent): human, llm, synth and replay:<thread>.
type builtins struct{}

func (builtins) IsBuiltin(name string) bool {
	if thread, ok := strings.CutPrefix(name, "replay:"); ok {
		return thread != ""
	}
	return slices.Contains([]string{"human", "llm", "synth"}, name)
}

func (b builtins) Reserves(name string) bool { return name == "replay" || b.IsBuiltin(name) }

func (builtins) String() string { return "human, llm, replay:<thread>, synth" }

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Minute, "10m"},
		{90 * time.Minute, "1h30m"},
		{2 * time.Hour, "2h"},
		{2*time.Hour + 5*time.Second, "2h0m5s"},
		{2500 * time.Millisecond, "2.5s"},
		{500 * time.Millisecond, "500ms"},
		{90 * time.Second, "1m30s"},
		{0, "0s"},
	}
	for _, tc := range tests {
		if got := config.FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
