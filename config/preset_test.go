package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/uncaged/uwf/config"
)

// TestPresetFill checks that a preset fills in what an entry leaves unset
// and that each field is overridden alone.
func TestPresetFill(t *testing.T) {
	home := writeHome(t, `agents:
  claude: {preset: claude-code}
  claudeSonnet: {preset: claude-code, extraArgs: [--model, sonnet]}
  myClaude: {preset: claude-code, command: /opt/claude, args: [-p], output: text}
  aiderArg: {preset: aider, prompt: arg}
  plain: {command: tool}
`)
	c := mustLoad(t, home)
	tests := []struct {
		name string
		want config.Agent
	}{
		{"claude", config.Agent{Preset: "claude-code", Command: "claude",
			Args:   []string{"-p", "--output-format", "json", "--permission-mode", "acceptEdits"},
			Prompt: config.PromptStdin, Output: config.OutputClaudeCode, Timeout: config.DefaultAgentTimeout}},
		{"claudeSonnet", config.Agent{Preset: "claude-code", Command: "claude",
			Args:   []string{"-p", "--output-format", "json", "--permission-mode", "acceptEdits", "--model", "sonnet"},
			Prompt: config.PromptStdin, Output: config.OutputClaudeCode, Timeout: config.DefaultAgentTimeout}},
		{"myClaude", config.Agent{Preset: "claude-code", Command: "/opt/claude", Args: []string{"-p"},
			Prompt: config.PromptStdin, Output: config.OutputText, Timeout: config.DefaultAgentTimeout}},
		// A prompt mode of one's own drops the preset's prompt flag.
		{"aiderArg", config.Agent{Preset: "aider", Command: "aider", Args: []string{"--yes-always", "--no-pretty", "--no-stream"},
			Prompt: config.PromptArg, Output: config.OutputAider, Timeout: config.DefaultAgentTimeout}},
		{"plain", config.Agent{Command: "tool", Prompt: config.PromptStdin, Output: config.OutputText, Timeout: config.DefaultAgentTimeout}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := c.Agent(tc.name)
			if !ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Agent(%q) = %+v, %v\nwant %+v", tc.name, got, ok, tc.want)
			}
		})
	}
	if a, _ := c.Agent("aider"); a.Command != "" {
		t.Errorf("Agent(aider) found an entry that is not there: %+v", a)
	}
	if a, _ := c.Agent("claudeSonnet"); a.ExtraArgs != nil {
		t.Errorf("ExtraArgs not folded into Args: %+v", a)
	}
}

// TestPresetsTable checks every preset names a command, a known prompt mode
// and output format, and a source, and that Presets returns copies.
func TestPresetsTable(t *testing.T) {
	ps := config.Presets()
	if len(ps) < 7 {
		t.Fatalf("Presets() has %d presets, want at least 7", len(ps))
	}
	for i, p := range ps {
		if p.Command == "" || p.Tool == "" || p.Source == "" || !contains(config.PromptModes, p.Prompt) || !contains(config.OutputFormats, p.Output) {
			t.Errorf("preset %+v is incomplete", p)
		}
		if i > 0 && ps[i-1].Name >= p.Name {
			t.Errorf("presets not sorted: %s before %s", ps[i-1].Name, p.Name)
		}
		if q, ok := config.PresetByName(p.Name); !ok || !reflect.DeepEqual(q, p) {
			t.Errorf("PresetByName(%q) = %+v, %v", p.Name, q, ok)
		}
	}
	ps[1].Args[0] = "changed"
	if q, _ := config.PresetByName(ps[1].Name); q.Args[0] == "changed" {
		t.Error("Presets returned the table's own Args")
	}
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// TestListExperimentalPreset checks config list notes an experimental
// preset, and only that.
func TestListExperimentalPreset(t *testing.T) {
	c := mustLoad(t, writeHome(t, "agents:\n  h: {preset: hermes}\n  c: {preset: codex}\n"))
	notes := map[string]string{}
	for _, kv := range c.List() {
		notes[kv.Path] = kv.Note
	}
	if n := notes["agents.h.preset"]; !strings.HasPrefix(n, "experimental preset") {
		t.Errorf("hermes preset note = %q, want experimental", n)
	}
	if n, ok := notes["agents.c.preset"]; !ok || n != "" {
		t.Errorf("codex preset note = %q (listed %v), want none", n, ok)
	}
}

// TestSetPreset checks config set accepts a preset alone and refuses an
// unknown one, leaving the file alone.
func TestSetPreset(t *testing.T) {
	home := t.TempDir()
	if err := config.Set(home, "agents.coder.preset", "gemini", nil); err != nil {
		t.Fatalf("Set preset: %v", err)
	}
	err := config.Set(home, "agents.coder.preset", "gemeni", nil)
	if err == nil || !strings.Contains(err.Error(), `unknown preset "gemeni"`) {
		t.Fatalf("Set unknown preset = %v", err)
	}
	a, ok := mustLoad(t, home).Agent("coder")
	if !ok || a.Command != "gemini" || a.Output != config.OutputGemini {
		t.Errorf("after a refused set, Agent(coder) = %+v, %v", a, ok)
	}
}
