package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
)

const commented = `# my settings
agents:
  coder: # the main one
    command: my-agent
defaultAgent: coder # keep me
# providers for the llm agent
providers:
  local: {baseURL: "http://localhost:11434/v1"}
`

func TestUpdate(t *testing.T) {
	home := writeHome(t, commented)
	changed, err := config.Update(home, []config.Edit{
		{Path: "providers.openai.baseURL", Value: "https://api.openai.com/v1"},
		{Path: "providers.openai.apiKeyEnv", Value: "OPENAI_API_KEY"},
		{Path: "models.openai", Value: "{provider: openai, model: gpt-4o-mini}"},
		{Path: "defaultModel", Value: "openai"}, // valid only with the edits before it
		{Path: "agents.coder", Value: "{command: other}", IfUnset: true},
		{Path: "agents.claude", Value: "{command: claude, args: [-p]}", IfUnset: true, Comment: "# Claude Code"},
	}, builtins{})
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v; want changed", changed, err)
	}
	b, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	got := string(b)
	for _, want := range []string{"# my settings", "coder: # the main one", "command: my-agent", "defaultAgent: coder # keep me",
		"# providers for the llm agent", "# Claude Code\n  claude: {command: claude, args: [-p]}", "defaultModel: openai"} {
		if !strings.Contains(got, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, got)
		}
	}
	c := mustLoad(t, home)
	if _, m, p, ok := c.ModelFor("w", "r"); !ok || m.Model != "gpt-4o-mini" || p.APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("ModelFor = %v %v %v", m, p, ok)
	}
	// The same edits again change nothing, byte for byte.
	changed, err = config.Update(home, []config.Edit{{Path: "defaultModel", Value: "openai"}, {Path: "agents.claude", Value: "{command: x}", IfUnset: true}}, builtins{})
	if err != nil || changed {
		t.Errorf("Update again = %v, %v; want unchanged", changed, err)
	}
	if b2, _ := os.ReadFile(filepath.Join(home, "config.yaml")); string(b2) != got {
		t.Errorf("an unchanged Update rewrote the file:\n%s", b2)
	}
}

func TestUpdateInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []config.Edit
		want  string
	}{
		{"unknown model", []config.Edit{{Path: "defaultModel", Value: "nope"}}, `defaultModel: unknown model "nope"`},
		{"bad URL", []config.Edit{{Path: "providers.x.baseURL", Value: "ftp://x"}}, "must be an http or https URL"},
		{"empty segment", []config.Edit{{Path: "providers..x", Value: "1"}}, "empty path segment"},
		{"through a scalar", []config.Edit{{Path: "defaultAgent.x", Value: "1"}}, "defaultAgent is a string, not a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := writeHome(t, commented)
			changed, err := config.Update(home, tc.edits, builtins{})
			if err == nil || !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || changed {
				t.Fatalf("Update = %v, %v; want an invalid error containing %q", changed, err, tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(home, "config.yaml")); string(b) != commented {
				t.Errorf("a failed Update changed the file:\n%s", b)
			}
		})
	}
}

func TestSetEnv(t *testing.T) {
	for _, tc := range []struct {
		name, before, key, value, after string
	}{
		{"new file", "", "OPENAI_API_KEY", "sk-abc123", "OPENAI_API_KEY=sk-abc123\n"},
		{"appended, comments kept", "# keys\nA=1\n\n# end\n", "B", "two", "# keys\nA=1\n\n# end\nB=two\n"},
		{"no final newline", "A=1", "B", "2", "A=1\nB=2\n"},
		{"replaced in place, export and comment kept", "# k\nexport KEY=old # the key\nOTHER=x\n", "KEY", "new", "# k\nexport KEY=new # the key\nOTHER=x\n"},
		{"last assignment wins", "KEY=a\nKEY='b'\n", "KEY", "c", "KEY=a\nKEY=c\n"},
		{"quoted value with comment", "KEY=\"a # b\" # note\n", "KEY", "d", "KEY=d # note\n"},
		{"spaces single-quoted", "", "K", "a b#c", "K='a b#c'\n"},
		{"quote double-quoted", "", "K", "it's $x\\n", "K=\"it's \\$x\\\\n\"\n"},
		{"empty", "", "K", "", "K=''\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			file := filepath.Join(home, ".env")
			if tc.before != "" {
				if err := os.WriteFile(file, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			changed, err := config.SetEnv(home, tc.key, tc.value)
			if err != nil || !changed {
				t.Fatalf("SetEnv = %v, %v", changed, err)
			}
			b, _ := os.ReadFile(file)
			if string(b) != tc.after {
				t.Errorf(".env = %q, want %q", b, tc.after)
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
				t.Errorf(".env mode %v, want 0600", fi.Mode().Perm())
			}
			if v, ok := mustLoad(t, home).Secret(tc.key); !ok || v != tc.value {
				t.Errorf("Secret(%s) = %q, %v; want %q", tc.key, v, ok, tc.value)
			}
			if changed, err := config.SetEnv(home, tc.key, tc.value); err != nil || changed {
				t.Errorf("SetEnv again = %v, %v; want unchanged", changed, err)
			}
		})
	}
}

func TestSetEnvErrors(t *testing.T) {
	home := t.TempDir()
	if _, err := config.SetEnv(home, "1BAD", "secret-value"); !errors.Is(err, cas.ErrInvalid) || strings.Contains(err.Error(), "secret-value") {
		t.Errorf("SetEnv(bad name) = %v", err)
	}
	broken := "A=1\nnot a line\n"
	os.WriteFile(filepath.Join(home, ".env"), []byte(broken), 0o600)
	_, err := config.SetEnv(home, "B", "secret-value")
	var ve *config.ValidationError
	if !errors.As(err, &ve) || strings.Contains(err.Error(), "secret-value") {
		t.Errorf("SetEnv on a broken .env = %v, want a ValidationError without the value", err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".env")); string(b) != broken {
		t.Errorf("SetEnv changed a broken .env: %q", b)
	}
}

// FuzzSetEnv checks that any value SetEnv accepts reads back as given,
// and that the lines already in the file keep their values.
func FuzzSetEnv(f *testing.F) {
	f.Add("A=1\n# c\n", "sk-abc")
	f.Add("export K='x' # c\n", "a 'b' \"c\" $d \\e\n\tf")
	f.Add("", "#")
	f.Fuzz(func(t *testing.T, before, value string) {
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, ".env"), []byte(before), 0o600)
		old, err := config.Load(home, nil)
		if err != nil {
			return // SetEnv refuses a broken file, as Load does
		}
		if _, err := config.SetEnv(home, "FUZZ_KEY", value); err != nil {
			if strings.ContainsRune(value, 0) || errors.Is(err, cas.ErrInvalid) {
				return
			}
			t.Fatalf("SetEnv(%q): %v", value, err)
		}
		c, err := config.Load(home, nil)
		if err != nil {
			t.Fatalf("Load after SetEnv(%q): %v", value, err)
		}
		if v, _ := c.Secret("FUZZ_KEY"); v != value {
			t.Fatalf("Secret = %q, want %q", v, value)
		}
		for _, k := range []string{"A", "K", "B"} {
			ov, ook := old.Secret(k)
			nv, nok := c.Secret(k)
			if ov != nv || ook != nok {
				t.Fatalf("%s changed from %q to %q", k, ov, nv)
			}
		}
	})
}

// TestUpdateDelete removes keys with Edit.Delete: the rest of the file and
// its comments stay, the comment on the removed key's line goes with it,
// and one above it moves to what follows.
func TestUpdateDelete(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  string
		edits   []config.Edit
		after   string // "" means unchanged
		wantErr string
	}{
		{"top-level key and its line comment", commented,
			[]config.Edit{{Path: "defaultAgent", Delete: true}},
			"# my settings\nagents:\n  coder: # the main one\n    command: my-agent\n# providers for the llm agent\nproviders:\n  local: {baseURL: \"http://localhost:11434/v1\"}\n", ""},
		{"the comment above moves to the next key", "defaultAgent: human\n# who may see\nsecrets: [TOKEN] # the bot's\nagentOverrides: {w: {r: synth}}\n",
			[]config.Edit{{Path: "secrets", Delete: true}}, "defaultAgent: human\n# who may see\nagentOverrides: {w: {r: synth}}\n", ""},
		{"the comment above the last key stays at the end", "defaultAgent: human\n# who may see\nsecrets: [TOKEN]\n",
			[]config.Edit{{Path: "secrets", Delete: true}}, "defaultAgent: human\n# who may see\n", ""},
		{"nested, the mapping emptied", "agents:\n  coder: {command: x}\ndefaultModel: \"\"\n",
			[]config.Edit{{Path: "agents.coder", Delete: true}}, "agents: {}\ndefaultModel: \"\"\n", ""},
		{"nested key of a block mapping", "providers:\n  p:\n    baseURL: http://x/v1\n    apiKeyEnv: K # key\n",
			[]config.Edit{{Path: "providers.p.apiKeyEnv", Delete: true}}, "providers:\n  p:\n    baseURL: http://x/v1\n", ""},
		{"set, then delete in one change", "secrets: [TOKEN]\n",
			[]config.Edit{{Path: "defaultAgent", Value: "human"}, {Path: "secrets", Delete: true}}, "defaultAgent: human\n", ""},
		{"missing key", commented, []config.Edit{{Path: "defaultModel", Delete: true}}, "", ""},
		{"missing parent", commented, []config.Edit{{Path: "models.x.model", Delete: true}}, "", ""},
		{"no file", "", []config.Edit{{Path: "defaultAgent", Delete: true}}, "", ""},
		{"through a scalar", commented, []config.Edit{{Path: "defaultAgent.x", Delete: true}}, "", "defaultAgent is a string, not a mapping"},
		{"leaves it invalid", "agents:\n  coder: {command: x}\ndefaultAgent: coder\n",
			[]config.Edit{{Path: "agents.coder", Delete: true}}, "", `defaultAgent: unknown agent "coder"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := writeHome(t, tc.before)
			changed, err := config.Update(home, tc.edits, builtins{})
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) || changed {
					t.Fatalf("Update = %v, %v; want an invalid error containing %q", changed, err, tc.wantErr)
				}
			} else if err != nil || changed != (tc.after != "") {
				t.Fatalf("Update = %v, %v; want changed %v", changed, err, tc.after != "")
			}
			b, err := os.ReadFile(filepath.Join(home, "config.yaml"))
			want := tc.after
			if want == "" {
				want = tc.before
			}
			if tc.before == "" && tc.after == "" {
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("deleting from no file wrote one: %q", b)
				}
				return
			}
			if string(b) != want {
				t.Errorf("config.yaml =\n%s\nwant\n%s", b, want)
			}
			mustLoad(t, home)
		})
	}
}
