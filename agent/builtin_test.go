package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
)

// configYAML configures two command agents, overrides and a model.
const configYAML = `agents:
  claude:
    command: claude
    args: [-p]
    timeout: 20m
  codex:
    command: /usr/local/bin/codex
    env: {CODEX_HOME: /tmp/codex}
defaultAgent: claude
agentOverrides:
  develop:
    reviewer: codex
    tester: human
providers:
  openai: {baseURL: 'https://api.openai.com/v1', apiKeyEnv: UWF_AGENT_TEST_KEY}
  local: {baseURL: 'http://localhost:11434/v1'}
models:
  fast: {provider: openai, model: gpt-4o-mini}
  qwen: {provider: local, model: qwen2.5}
modelOverrides:
  develop:
    planner: qwen
    coder: fast
`

func mustConfig(t *testing.T, text string) *config.Config {
	t.Helper()
	c, err := config.Parse("config.yaml", []byte(text), agent.Builtins())
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	return c
}

const replayID = "01J0000000000000000000000A"

func TestResolve(t *testing.T) {
	c := mustConfig(t, configYAML)
	tests := []struct {
		workflow, role, explicit string
		want                     string
		timeout                  time.Duration
	}{
		{"develop", "coder", "", "claude", 20 * time.Minute},             // defaultAgent
		{"develop", "reviewer", "", "codex", config.DefaultAgentTimeout}, // override, default timeout
		{"develop", "tester", "", "human", config.DefaultAgentTimeout},   // override to a built-in
		{"develop", "reviewer", "claude", "claude", 20 * time.Minute},    // explicit wins
		{"review-loop", "reviewer", "", "claude", 20 * time.Minute},      // other workflow: default
		{"develop", "coder", "synth", "synth", config.DefaultAgentTimeout},
		{"develop", "coder", "llm", "llm", config.DefaultAgentTimeout},
		{"develop", "coder", "replay:" + replayID, "replay:" + replayID, config.DefaultAgentTimeout},
	}
	for _, tc := range tests {
		name, spec, err := agent.Resolve(c, tc.workflow, tc.role, tc.explicit)
		if err != nil || name != tc.want || spec.Timeout != tc.timeout {
			t.Errorf("Resolve(%s, %s, %q) = %s %+v, %v; want %s timeout %v", tc.workflow, tc.role, tc.explicit, name, spec, err, tc.want, tc.timeout)
		}
	}
	_, spec, _ := agent.Resolve(c, "develop", "reviewer", "")
	spec.Env["CODEX_HOME"] = "changed"
	if c.Agents["codex"].Env["CODEX_HOME"] != "/tmp/codex" {
		t.Errorf("Resolve returned the config's own map")
	}

	_, _, err := agent.Resolve(c, "develop", "coder", "gpt")
	if !errors.Is(err, agent.ErrUnknownAgent) || !errors.Is(err, cas.ErrNotFound) ||
		err.Error() != `agent "gpt" (from --agent): unknown agent: cas: not found: it is neither configured nor built in (configured: claude, codex; built-in: human, llm, replay:<thread>, synth)` {
		t.Errorf("Resolve(unknown) = %v", err)
	}
	for _, bad := range []string{"replay:", "replay", "Synth"} {
		if _, _, err := agent.Resolve(c, "develop", "coder", bad); !errors.Is(err, agent.ErrUnknownAgent) {
			t.Errorf("Resolve(%q) = %v, want ErrUnknownAgent", bad, err)
		}
	}
	_, _, err = agent.Resolve(nil, "develop", "coder", "")
	if !errors.Is(err, agent.ErrNoAgent) || err.Error() != "no agent configured for role coder of workflow develop: pass --agent, or set defaultAgent or agentOverrides.develop.coder in config.yaml (configured: none; built-in: human, llm, replay:<thread>, synth)" {
		t.Errorf("Resolve with no config = %v", err)
	}
	if name, _, err := agent.Resolve(nil, "develop", "coder", "llm"); err != nil || name != "llm" {
		t.Errorf("Resolve(llm) with no config = %s, %v", name, err)
	}
}

// TestBuiltinsInConfig checks what config.yaml may say about the built-in
// agents, as agent.Builtins tells config.
func TestBuiltinsInConfig(t *testing.T) {
	b := agent.Builtins()
	if got := b.String(); got != "human, llm, replay:<thread>, synth" {
		t.Errorf("Builtins().String() = %q", got)
	}
	tests := []struct {
		name              string
		builtin, reserved bool
	}{
		{"human", true, true},
		{"llm", true, true},
		{"synth", true, true},
		{"replay", false, true},
		{"replay:" + replayID, true, true},
		{"replay:", false, false},
		{"claude", false, false},
		{"LLM", false, false},
	}
	for _, tc := range tests {
		if got := b.IsBuiltin(tc.name); got != tc.builtin {
			t.Errorf("IsBuiltin(%q) = %v, want %v", tc.name, got, tc.builtin)
		}
		if got := agent.IsBuiltin(tc.name); got != tc.builtin {
			t.Errorf("agent.IsBuiltin(%q) = %v, want %v", tc.name, got, tc.builtin)
		}
		if got := b.Reserves(tc.name); got != tc.reserved {
			t.Errorf("Reserves(%q) = %v, want %v", tc.name, got, tc.reserved)
		}
	}

	// Each built-in may be named without an entry, and none may be taken.
	for _, name := range []string{"human", "llm", "synth", "replay:" + replayID} {
		if _, err := config.Parse("config.yaml", []byte("defaultAgent: "+name+"\n"), b); err != nil {
			t.Errorf("defaultAgent: %s: %v", name, err)
		}
		if _, err := config.Parse("config.yaml", []byte("defaultAgent: "+name+"\n"), nil); err == nil {
			t.Errorf("defaultAgent: %s accepted with no built-ins", name)
		}
	}
	_, err := config.Parse("config.yaml", []byte("agents:\n  synth: {command: x}\n  replay: {command: y}\n"), b)
	want := "config.yaml:2:3: agents.synth: \"synth\" is a built-in agent (human, llm, replay:<thread>, synth); pick another name\n" +
		"config.yaml:3:3: agents.replay: \"replay\" is a built-in agent (human, llm, replay:<thread>, synth); pick another name"
	if err == nil || err.Error() != want {
		t.Errorf("entries named like built-ins: %v\nwant:\n%s", err, want)
	}
}

// threads is a fake source of threads for replay: one thread, id, with
// steps.
type threads struct {
	id    string
	steps []agent.Recorded
}

func (f threads) CheckThread(_ context.Context, id string) error {
	if strings.EqualFold(id, f.id) {
		return nil
	}
	return fmt.Errorf("thread %s: %w", id, cas.ErrNotFound)
}

func (f threads) Recorded(ctx context.Context, id string) (string, []agent.Recorded, error) {
	if err := f.CheckThread(ctx, id); err != nil {
		return "", nil, err
	}
	return f.id, f.steps, nil
}

func TestNew(t *testing.T) {
	ctx := t.Context()
	t.Setenv("UWF_AGENT_TEST_KEY", "sk-test")
	c := mustConfig(t, configYAML)
	src := threads{id: replayID, steps: []agent.Recorded{{Role: "coder", Raw: "---\nstatus: done\n---\n"}}}
	opts := &agent.Options{Config: c, Workflow: "develop", Role: "coder", HumanInput: "answer.md", Threads: src}
	tests := []struct {
		name     string
		wantName string
		wantType string
		counts   bool
	}{
		{"synth", "synth", "*agent.Synth", true},
		{"human", "human", "*agent.Human", false},
		{"llm", "llm", "*agent.LLM", false},
		{"replay:" + strings.ToLower(replayID), "replay:" + replayID, "*agent.Replay", true},
		{"claude", "claude", "*agent.Command", false},
	}
	for _, tc := range tests {
		name, spec, err := agent.Resolve(c, "develop", "coder", tc.name)
		if err != nil {
			t.Fatalf("Resolve(%s): %v", tc.name, err)
		}
		a, err := agent.New(ctx, name, spec, opts)
		if err != nil {
			t.Errorf("New(%s) = %v", tc.name, err)
			continue
		}
		if got := fmt.Sprintf("%T", a); got != tc.wantType || a.Name() != tc.wantName {
			t.Errorf("New(%s) = %s named %s, want %s named %s", tc.name, got, a.Name(), tc.wantType, tc.wantName)
		}
		if _, counts := a.(agent.StepCounter); counts != tc.counts {
			t.Errorf("New(%s) is a StepCounter: %v, want %v", tc.name, counts, tc.counts)
		}
	}

	// The replay agent plays back what the source recorded.
	a, err := agent.New(ctx, "replay:"+replayID, config.Agent{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, &agent.Request{Role: "coder"})
	if err != nil || res.Raw != src.steps[0].Raw {
		t.Errorf("replay Run = %+v, %v", res, err)
	}

	// What a built-in cannot be built without.
	for _, tc := range []struct {
		name string
		opts *agent.Options
		want string
	}{
		{"human", &agent.Options{}, "the human agent needs a terminal (or --input FILE)"},
		{"llm", &agent.Options{Workflow: "develop", Role: "coder"}, "no model configured: set defaultModel (and its provider) in config.yaml"},
		{"replay:" + replayID, &agent.Options{}, "replay: no threads to replay from"},
		{"replay:01J0000000000000000000000B", opts, "replay: thread 01J0000000000000000000000B: cas: not found"},
	} {
		if _, err := agent.New(ctx, tc.name, config.Agent{}, tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("New(%s) error = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLLMFor(t *testing.T) {
	c := mustConfig(t, configYAML)
	t.Setenv("UWF_AGENT_TEST_KEY", "")
	os.Unsetenv("UWF_AGENT_TEST_KEY")
	if _, err := agent.LLMFor(c, "develop", "coder", nil); err == nil || err.Error() != "model fast: the API key variable UWF_AGENT_TEST_KEY is not set (in the environment or <home>/.env)" {
		t.Errorf("LLMFor without the key = %v", err)
	}
	// A provider without apiKeyEnv needs no key.
	if l, err := agent.LLMFor(c, "develop", "planner", nil); err != nil || l.Name() != "llm" {
		t.Errorf("LLMFor(planner) = %v, %v", l, err)
	}
	if _, err := agent.LLMFor(nil, "develop", "planner", nil); err == nil {
		t.Errorf("LLMFor with no config succeeded")
	}
}

func TestCheck(t *testing.T) {
	ctx := t.Context()
	c := mustConfig(t, configYAML)
	dir := t.TempDir()
	prog := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := threads{id: replayID}
	term := &agent.Options{Config: c, Workflow: "develop", Role: "planner", HumanInput: "a.md", Threads: src}
	tests := []struct {
		name string
		spec config.Agent
		opts *agent.Options
		want error  // errors.Is, when not nil
		msg  string // the message, when not ""
	}{
		{"synth", config.Agent{}, nil, nil, ""},
		{"human", config.Agent{}, term, nil, ""},
		{"human", config.Agent{}, &agent.Options{}, nil, "the human agent needs a terminal (or --input FILE)"},
		{"llm", config.Agent{}, term, nil, ""},
		{"llm", config.Agent{}, &agent.Options{Role: "coder"}, nil, "agent llm: no model configured: set defaultModel (and its provider) in config.yaml"},
		{"replay:" + replayID, config.Agent{}, term, nil, ""},
		{"replay:01J0000000000000000000000B", config.Agent{}, term, cas.ErrNotFound, "agent replay:01J0000000000000000000000B: thread 01J0000000000000000000000B: cas: not found"},
		{"mine", config.Agent{Command: prog}, term, nil, ""},
		{"gone", config.Agent{Command: filepath.Join(dir, "nope")}, term, fs.ErrNotExist, ""},
		{"gone", config.Agent{Command: "uwf-agent-test-no-such-program"}, term, exec.ErrNotFound, ""},
	}
	for _, tc := range tests {
		err := agent.Check(ctx, tc.name, tc.spec, dir, tc.opts)
		switch {
		case tc.want == nil && tc.msg == "":
			if err != nil {
				t.Errorf("Check(%s) = %v, want nil", tc.name, err)
			}
		case tc.want != nil && !errors.Is(err, tc.want), tc.msg != "" && (err == nil || err.Error() != tc.msg):
			t.Errorf("Check(%s) = %v, want %v %q", tc.name, err, tc.want, tc.msg)
		}
	}

	// CheckName looks only at the name: the replay source.
	if err := agent.CheckName(ctx, "human", nil); err != nil {
		t.Errorf("CheckName(human) = %v", err)
	}
	if err := agent.CheckName(ctx, "replay:01J0000000000000000000000B", term); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("CheckName(replay of a missing thread) = %v", err)
	}
	if err := agent.CheckName(ctx, "replay:"+replayID, term); err != nil {
		t.Errorf("CheckName(replay) = %v", err)
	}
}
