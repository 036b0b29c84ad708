package config_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/uncaged/uwf/config"
)

// ExampleParse reads a config.yaml and asks which agent and model run a
// role. The built-in agents would come from agent.Builtins; with none,
// every agent named must be configured.
func ExampleParse() {
	c, err := config.Parse("config.yaml", []byte(`
agents:
  claude: {command: claude, args: [-p], timeout: 20m}
  codex: {command: codex, env: {GITHUB_TOKEN: ghp_example}}
defaultAgent: claude
agentOverrides:
  develop: {reviewer: codex}
providers:
  local: {baseURL: 'http://localhost:11434/v1'}
models:
  qwen: {provider: local, model: qwen2.5-coder}
defaultModel: qwen
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	name, from := c.AgentName("develop", "reviewer", "")
	fmt.Println(name, "from", from)
	a, _ := c.Agent("claude")
	fmt.Println(a.Command, a.Args, a.Timeout)
	model, m, p, _ := c.ModelFor("develop", "planner")
	fmt.Println(model, m.Model, p.BaseURL)
	for _, kv := range c.List() {
		if kv.Path == "agents.codex.env.GITHUB_TOKEN" {
			fmt.Println(kv.Path, "=", kv.Value)
		}
	}
	// Output:
	// codex from agentOverrides.develop.reviewer
	// claude [-p] 20m0s
	// qwen qwen2.5-coder http://localhost:11434/v1
	// agents.codex.env.GITHUB_TOKEN = ********
}

// ExampleParse_invalid shows how problems are reported: every one, with
// its line and column.
func ExampleParse_invalid() {
	_, err := config.Parse("config.yaml", []byte(`
agents:
  coder: {command: x, timeout: 10}
defaultAgent: cdoer
`), nil)
	fmt.Println(err)
	// Output:
	// config.yaml:3:32: agents.coder.timeout: invalid duration "10": give a unit (10s, 10m)
	// config.yaml:4:15: defaultAgent: unknown agent "cdoer" (configured: coder; built-in: none)
}

// ExampleConfig_Agent_preset configures a coding agent by its preset and
// overrides one field: Agent returns the entry ready to run.
func ExampleConfig_Agent_preset() {
	c, err := config.Parse("config.yaml", []byte(`
agents:
  coder:
    preset: claude-code
    extraArgs: [--model, sonnet]
  reviewer:
    preset: codex
    command: /opt/codex/bin/codex
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range c.AgentNames() {
		a, _ := c.Agent(name)
		fmt.Println(name+":", a.Command, a.Args, "prompt on", a.Prompt+",", "output read as", a.Output)
	}
	for _, p := range config.Presets() {
		if p.Experimental {
			fmt.Println("experimental:", p.Name)
		}
	}
	// Output:
	// coder: claude [-p --output-format json --permission-mode acceptEdits --model sonnet] prompt on stdin, output read as claude-code
	// reviewer: /opt/codex/bin/codex [exec --json --sandbox workspace-write --skip-git-repo-check] prompt on stdin, output read as codex
	// experimental: aider
	// experimental: hermes
}

// ExampleUpdate sets up a provider and its model in one validated change,
// as uwf init does, and puts the key in .env: the comments of both files
// stay.
func ExampleUpdate() {
	home, err := os.MkdirTemp("", "uwf-config")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("# mine\nsecrets: [MY_VAR] # masked too\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".env"), []byte("# secrets\n"), 0o600)

	// defaultModel alone would be invalid (no such model): the edits are
	// checked together.
	changed, err := config.Update(home, []config.Edit{
		{Path: "providers.openai.baseURL", Value: "https://api.openai.com/v1"},
		{Path: "providers.openai.apiKeyEnv", Value: "OPENAI_API_KEY"},
		{Path: "models.small", Value: "{provider: openai, model: gpt-4o-mini}"},
		{Path: "defaultModel", Value: "small"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := config.SetEnv(home, "OPENAI_API_KEY", "sk-example-key"); err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	e, _ := os.ReadFile(filepath.Join(home, ".env"))
	fmt.Printf("changed: %v\n%s%s", changed, b, e)
	// Output:
	// changed: true
	// # mine
	// secrets: [MY_VAR] # masked too
	// providers:
	//   openai:
	//     baseURL: https://api.openai.com/v1
	//     apiKeyEnv: OPENAI_API_KEY
	// models:
	//   small: {provider: openai, model: gpt-4o-mini}
	// defaultModel: small
	// # secrets
	// OPENAI_API_KEY=sk-example-key
}
