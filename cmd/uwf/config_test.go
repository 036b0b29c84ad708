package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sampleConfig = `# uwf configuration
agents:
  coder:                 # the main agent
    command: claude
    args: [-p, --output-format, text, "10"]
    timeout: 20m
    env:
      GITHUB_TOKEN: ghp-secret-1   # masked: an env value
      PLAIN: also-secret-2         # masked too: every env value is
defaultAgent: coder
# models for the llm agent
providers:
  openai:
    baseURL: https://api.openai.com/v1
    apiKeyEnv: OPENAI_API_KEY    # names a variable: shown
models:
  fast: {provider: openai, model: gpt-4o-mini}
defaultModel: fast
`

func (e *env) configFile() string { return filepath.Join(e.home, "config.yaml") }

func (e *env) writeConfig(content string) {
	e.t.Helper()
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(e.configFile(), []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) readConfig() string {
	e.t.Helper()
	b, err := os.ReadFile(e.configFile())
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// TestConfigGolden runs the config commands on a commented config.yaml and
// compares what they print, and the file after each set, with
// testdata/golden/config.txt.
func TestConfigGolden(t *testing.T) {
	e := newEnv(t)
	tr := &transcript{e: e}
	tr.run("", "config", "list")
	tr.run("", "config", "list", "--json")
	e.writeConfig(sampleConfig)
	tr.run("", "config", "list")
	tr.run("", "config", "list", "--json")
	tr.run("", "config", "get", "agents.coder")
	tr.run("", "config", "get", "agents.coder.args")
	tr.run("", "config", "get", "agents.coder.env.GITHUB_TOKEN")
	tr.run("", "config", "get", "--json", "agents.coder")
	tr.run("", "config", "get", "--json", "defaultModel")
	tr.run("", "config", "get", "agents.nope")
	tr.run("", "config", "set", "agents.coder.timeout", "5m")
	tr.run("", "config", "set", "agents.reviewer.command", "/usr/local/bin/review")
	tr.run("", "config", "set", "agents.reviewer.args", "[--strict, -]")
	tr.run("", "config", "set", "--json", "agentOverrides.review-loop.reviewer", "reviewer")
	tr.run("", "config", "set", "agents.reviewer.env.API_TOKEN", "tok-secret-3")
	tr.run("", "config", "set", "agents.coder.timeout", "ten")
	tr.run("", "config", "set", "defaultAgent", "nobody")
	tr.run("", "config", "get", "agents.reviewer")
	tr.b.WriteString("config.yaml:\n" + indentBlock(e.readConfig()))
	out := e.masked(tr.b.String())
	printed, _, _ := strings.Cut(out, "config.yaml:\n")
	var results strings.Builder // what uwf printed, without the command lines
	for line := range strings.Lines(printed) {
		if !strings.HasPrefix(line, "$ uwf ") {
			results.WriteString(line)
		}
	}
	for _, secret := range []string{"ghp-secret-1", "also-secret-2", "tok-secret-3"} {
		if strings.Contains(results.String(), secret) {
			t.Errorf("uwf config printed the secret %q", secret)
		}
	}
	golden(t, "config.txt", out)
}

// TestConfigSetKeepsComments checks that set keeps every comment and the
// order of keys, and changes only the value set.
func TestConfigSetKeepsComments(t *testing.T) {
	e := newEnv(t)
	e.writeConfig(sampleConfig)
	e.ok("", "config", "set", "agents.coder.timeout", "5m")
	got := e.readConfig()
	for line := range strings.Lines(sampleConfig) {
		_, comment, ok := strings.Cut(line, "#")
		if ok && !strings.Contains(got, "#"+strings.TrimSpace(comment)) && !strings.Contains(got, "# "+strings.TrimSpace(strings.TrimPrefix(comment, " "))) {
			t.Errorf("config set lost the comment %q:\n%s", comment, got)
		}
	}
	if !strings.Contains(got, "timeout: 5m") || strings.Contains(got, "20m") {
		t.Errorf("config set agents.coder.timeout 5m:\n%s", got)
	}
	keys := regexp.MustCompile(`(?m)^[a-zA-Z]+:`).FindAllString(got, -1)
	if strings.Join(keys, " ") != "agents: defaultAgent: providers: models: defaultModel:" {
		t.Errorf("config set changed the order of keys: %q", keys)
	}
	if out := e.ok("", "config", "get", "agents.coder.timeout"); out != "5m\n" {
		t.Errorf("config get after set = %q", out)
	}
	// Setting a file that does not exist creates it (and the home).
	e2 := newEnv(t)
	e2.ok("", "config", "set", "defaultAgent", "synth")
	if got := e2.readConfig(); got != "defaultAgent: synth\n" {
		t.Errorf("config set on no file wrote %q", got)
	}
	if fi, err := os.Stat(e2.configFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.yaml created with %v, %v; want mode 0600", fi.Mode(), err)
	}
}

// TestConfigBad checks that a broken config.yaml or .env fails every
// command that reads it, exit 1, naming the file, line and column of every
// problem; and that a bad set changes nothing.
func TestConfigBad(t *testing.T) {
	e := newEnv(t)
	e.write("review-loop.yaml", reviewLoop)
	id := strings.TrimSpace(e.ok("", "thread", "start", "review-loop.yaml", "-p", "x"))
	bad := "agents:\n  coder:\n    command: claude\n    timeout: ten\n    colour: blue\ndefaultAgent: nobody\n"
	e.writeConfig(bad)
	file := e.configFile()
	want := []string{
		file + ":4:14: agents.coder.timeout: invalid duration",
		file + ":5:5: agents.coder: unknown key \"colour\"",
		file + ":6:15: defaultAgent: unknown agent \"nobody\"",
	}
	for _, args := range [][]string{
		{"config", "list"},
		{"config", "get", "defaultAgent"},
		{"thread", "step", id},
		{"thread", "run", "review-loop", "-p", "x", "--agent", "synth"},
	} {
		r := e.run("", args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != 1 || r.stdout != "" || len(lines) != len(want) {
			t.Errorf("uwf %q with a bad config.yaml: %v\nwant exit 1 and %d lines on stderr", args, r, len(want))
			continue
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("uwf %q: stderr line %d = %q, want %q...", args, i+1, lines[i], w)
			}
		}
	}
	// set on a broken file: refused, the file unchanged.
	r := e.run("", "config", "set", "defaultAgent", "synth")
	if r.code != 1 || !strings.Contains(r.stderr, file+":4:14:") || e.readConfig() != bad {
		t.Errorf("config set on a broken file: %v\nfile now:\n%s", r, e.readConfig())
	}
	// YAML that does not parse.
	e.writeConfig("agents: [\n")
	if r := e.run("", "config", "list"); r.code != 1 || !strings.HasPrefix(r.stderr, file+":") {
		t.Errorf("config list with unparsable YAML: %v", r)
	}
	// A malformed .env names its line.
	e.writeConfig("defaultAgent: synth\n")
	if err := os.WriteFile(filepath.Join(e.home, ".env"), []byte("OK=1\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := e.run("", "config", "list"); r.code != 1 || !strings.Contains(r.stderr, filepath.Join(e.home, ".env")+":2:") {
		t.Errorf("config list with a bad .env: %v", r)
	}
}
