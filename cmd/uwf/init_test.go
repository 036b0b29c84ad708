package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/config"
)

// testKey is the API key the tests type or pipe: it must appear in no
// output, only in .env.
const testKey = "sk-test-0123456789abcdef"

// fakePath makes a folder of executables named names (each a script that
// exits 0) and puts it alone on PATH, so uwf init detects exactly them.
func fakePath(t *testing.T, names ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

func (e *env) readEnvFile() string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, ".env"))
	if err != nil {
		e.t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(e.home, ".env"))
	if err != nil {
		e.t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		e.t.Errorf(".env has mode %v, want 0600", fi.Mode().Perm())
	}
	return string(b)
}

// TestInitGolden runs uwf init with flags only (stdin is not a terminal:
// nothing is asked) and compares what it prints, and the files, with
// testdata/golden/init.txt.
func TestInitGolden(t *testing.T) {
	e := newEnv(t)
	fakePath(t, "claude", "codex")
	t.Setenv("OPENAI_API_KEY", "")
	os.Unsetenv("OPENAI_API_KEY")
	tr := &transcript{e: e}
	tr.run("", "init")
	tr.run("", "init", "--provider", "openai", "--agent", "claude")
	tr.run(testKey+"\n", "init", "--provider", "openai", "--api-key-stdin", "--agent", "claude", "--yes")
	tr.run("", "init", "--agent", "cursor")                     // a preset whose program is not on PATH: a note
	tr.run("", "init", "--model", "gpt-4o", "--agent", "human") // the cursor entry stays
	tr.run("", "init", "--agent", "none")                       // defaultAgent goes
	tr.run("", "init", "--base-url", "ftp://example.com")
	tr.run("", "init", "--agent", "nobody")
	tr.run("", "setup", "--provider", "ollama", "--agent", "llm", "--json", "--yes")
	tr.b.WriteString("config.yaml:\n" + indentBlock(e.readConfig()))
	env := e.readEnvFile()
	out := e.masked(tr.b.String())
	if strings.Count(out, testKey) != 1 { // once: the transcript's stdin, not the output
		t.Errorf("the API key was printed:\n%s", out)
	}
	if env != "OPENAI_API_KEY="+testKey+"\n" {
		t.Errorf(".env = %q", env)
	}
	golden(t, "init.txt", out)
}

// TestInitRerun re-runs uwf init on files a user wrote: comments, key
// order and settings it does not manage are kept, in both files.
func TestInitRerun(t *testing.T) {
	e := newEnv(t)
	fakePath(t, "codex")
	os.Unsetenv("ANTHROPIC_API_KEY")
	e.writeConfig(`# mine
agents:
  coder: # my wrapper
    command: my-agent
    timeout: 20m
defaultAgent: coder # the usual
providers:
  openai: {baseURL: "https://api.openai.com/v1", apiKeyEnv: OPENAI_API_KEY} # first
models:
  small: {provider: openai, model: gpt-4o-mini}
defaultModel: small
agentOverrides:
  review-loop: {reviewer: human}
`)
	envBefore := "# keys\nexport GITHUB_TOKEN=ghp-other-secret # for the agents\nANTHROPIC_API_KEY=old-key-value # rotated\n"
	if err := os.WriteFile(filepath.Join(e.home, ".env"), []byte(envBefore), 0o644); err != nil {
		t.Fatal(err)
	}
	// A non-interactive re-run answers from the configuration: only the
	// model changes.
	out := e.ok("", "init", "--model", "gpt-4.1-mini")
	cfg := e.readConfig()
	for _, want := range []string{"# mine", "coder: # my wrapper", "timeout: 20m", "defaultAgent: coder # the usual",
		"# first", "model: gpt-4.1-mini", "defaultModel: small", "review-loop: {reviewer: human}"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config.yaml lost %q:\n%s", want, cfg)
		}
	}
	if !strings.Contains(out, "defaultModel   small: gpt-4.1-mini") || !strings.Contains(out, "defaultAgent   coder: my-agent") {
		t.Errorf("init printed:\n%s", out)
	}
	if got := e.readEnvFile(); got != envBefore {
		t.Errorf(".env changed without a key given:\n%s", got)
	}
	// A second provider with a key: added beside the first, the key
	// replaced in place in .env, its export and comment kept.
	// (With the debug log on: the key is in no log either.)
	r := e.run(testKey, "--log-level", "debug", "init", "--provider", "anthropic", "--api-key-stdin", "--agent", "codex", "--yes")
	if r.code != 0 || !strings.Contains(r.stderr, "level=DEBUG") || strings.Contains(r.stdout+r.stderr, testKey) {
		t.Errorf("init with the debug log: %v\nwant exit 0, a debug log, and no key", r)
	}
	cfg = e.readConfig()
	for _, want := range []string{"# mine", "coder: # my wrapper", "# first", "anthropic:", "baseURL: https://api.anthropic.com/v1",
		"apiKeyEnv: ANTHROPIC_API_KEY", "defaultModel: anthropic", "defaultAgent: codex # the usual",
		"# Codex CLI in its headless mode (preset codex, docs/AGENTS.md), added by uwf init\n  codex: {preset: codex}"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	wantEnv := "# keys\nexport GITHUB_TOKEN=ghp-other-secret # for the agents\nANTHROPIC_API_KEY=" + testKey + " # rotated\n"
	if got := e.readEnvFile(); got != wantEnv {
		t.Errorf(".env = %q, want %q", got, wantEnv)
	}
	// A model already named after the provider, of another provider, is
	// left alone.
	e.ok("", "config", "set", "models.groq", "{provider: openai, model: gpt-4o}")
	e.ok("", "init", "--provider", "groq", "--no-api-key", "--yes")
	cfg = e.readConfig()
	for _, want := range []string{"groq: {provider: openai, model: gpt-4o}", "groq-2:\n    provider: groq\n    model: llama-3.1-8b-instant", "defaultModel: groq-2"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	e.ok("", "init", "--provider", "anthropic", "--yes")

	// The same answers again change nothing.
	before := e.readConfig()
	out = e.ok("", "init", "--provider", "anthropic", "--agent", "codex")
	if !strings.Contains(out, "config.yaml is unchanged.") || e.readConfig() != before {
		t.Errorf("an unchanged re-run rewrote config.yaml:\n%s", out)
	}

	// No default agent: defaultAgent goes (with the comment on its line),
	// the agents and everything else stay; again, nothing changes.
	out = e.ok("", "init", "--agent", "none")
	cfg = e.readConfig()
	if want := strings.Replace(before, "defaultAgent: codex # the usual\n", "", 1); cfg != want || want == before {
		t.Errorf("init --agent none: config.yaml =\n%s\nwant\n%s", cfg, want)
	}
	if !strings.Contains(out, "defaultAgent   none") {
		t.Errorf("init --agent none printed:\n%s", out)
	}
	if out = e.ok("", "init", "--agent", "none"); !strings.Contains(out, "config.yaml is unchanged.") || e.readConfig() != cfg {
		t.Errorf("init --agent none again:\n%s", out)
	}
	// The preset's name and its program name the same agent.
	for _, name := range []string{"claude-code", "claude"} {
		e.ok("", "init", "--agent", name)
		if cfg := e.readConfig(); !strings.HasSuffix(cfg, "\ndefaultAgent: claude\n") || strings.Count(cfg, "  claude: {preset: claude-code}\n") != 1 {
			t.Errorf("init --agent %s: config.yaml =\n%s", name, cfg)
		}
	}
}

func TestInitErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		stdin  string
		args   []string
		code   int
		want   string
	}{
		{"nothing to answer with", "", "", []string{"init"}, 2, "no answer was given for: --provider, --agent"},
		{"no key", "", "", []string{"init", "--provider", "openai", "--agent", "synth"}, 2, "--api-key-stdin (or OPENAI_API_KEY set in the environment, or --no-api-key)"},
		{"custom provider without URL", "", "", []string{"init", "--provider", "mine", "--yes", "--no-api-key"}, 2, "no answer was given for: --base-url"},
		{"bad provider name", "", "", []string{"init", "--provider", "a b", "--yes"}, 2, `invalid --provider "a b"`},
		{"bad URL", "", "", []string{"init", "--base-url", "localhost:8080", "--yes"}, 2, "want an http or https URL"},
		{"bad key variable", "", "", []string{"init", "--api-key-env", "sk-live-123", "--yes"}, 2, "names the variable that holds the key, not the key"},
		{"empty key", "", "\n", []string{"init", "--api-key-stdin", "--yes"}, 2, "stdin holds no key"},
		{"contradiction", "", "", []string{"init", "--api-key-stdin", "--no-api-key"}, 2, "contradict"},
		{"unknown agent", "", "", []string{"init", "--agent", "nobody", "--yes", "--no-api-key"}, 2, `invalid --agent "nobody": not an agent`},
		{"llm without a model", "", "", []string{"init", "--provider", "none", "--agent", "llm"}, 2, "the llm agent needs a model"},
		{"arguments", "", "", []string{"init", "extra"}, 2, "want no arguments"},
		{"key for a keyless provider", "", "sk-abc\n", []string{"init", "--provider", "ollama", "--api-key-stdin", "--yes"}, 2, "provider ollama needs no key"},
		{"key without provider", "", "sk-abc\n", []string{"init", "--provider", "none", "--api-key-stdin", "--yes"}, 2, "no provider to give a key to"},
		{"broken config", "agents:\n  coder: {command: x, colour: red}\n", "", []string{"init", "--yes"}, 1, `agents.coder: unknown key "colour"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			fakePath(t)
			os.Unsetenv("OPENAI_API_KEY")
			if tc.config != "" {
				e.writeConfig(tc.config)
			}
			r := e.run(tc.stdin, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
				t.Fatalf("uwf %q: %v\nwant exit %d and %q", tc.args, r, tc.code, tc.want)
			}
			if tc.config == "" {
				if _, err := os.Stat(e.configFile()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a failed init wrote config.yaml")
				}
			}
			if _, err := os.Stat(filepath.Join(e.home, ".env")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed init wrote .env")
			}
		})
	}
}

// ptySession runs the test binary as uwf on a pseudo-terminal and reads
// everything it writes there.
type ptySession struct {
	t    *testing.T
	tty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startPTY(t *testing.T, home string, args ...string) *ptySession {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+home, "UWF_STORE=", "UWF_LOG_LEVEL=", "TERM=dumb")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	p := &ptySession{t: t, tty: tty, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return p
}

// expect waits until the terminal has shown s (anywhere in what it
// showed so far).
func (p *ptySession) expect(s string) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		got := p.out.String()
		p.mu.Unlock()
		if strings.Contains(got, s) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.Fatalf("the terminal never showed %q; it showed:\n%s", s, p.out.String())
}

func (p *ptySession) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.tty, s); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to end and returns its exit code and all it
// showed.
func (p *ptySession) wait() (int, string) {
	p.t.Helper()
	err := p.cmd.Wait()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), p.out.String()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0, p.out.String()
}

// TestInitTerminal answers uwf init's questions on a pseudo-terminal: the
// defaults offered, an answer corrected after a problem, the key typed
// without echo; then the files, and the key in no output.
func TestInitTerminal(t *testing.T) {
	fakePath(t, "claude", "gemini", "aider")
	os.Unsetenv("OPENROUTER_API_KEY")
	home := filepath.Join(t.TempDir(), "home")
	p := startPTY(t, home, "init")
	p.expect("Agent CLIs on PATH: claude (Claude Code), gemini (Gemini CLI), aider (Aider, experimental preset).")
	p.expect("LLM provider (openai, anthropic, openrouter, gemini, groq, deepseek, mistral, ollama, a name of your own, or none) [openai]: ")
	p.send("openrouter\n")
	p.expect("Base URL of openrouter's OpenAI-compatible API [https://openrouter.ai/api/v1]: ")
	p.send("\n")
	p.expect("Model [openai/gpt-4o-mini]: ")
	p.send("anthropic/claude-3.5-haiku\n")
	p.expect("API key, kept in .env as OPENROUTER_API_KEY (not shown; Enter to skip): ")
	p.send(testKey[:6] + "Zz\x7f\x7f" + testKey[6:] + "\r") // two typos taken back; a terminal's Enter
	p.expect("Default agent (claude, gemini, aider, llm, human, synth, none) [claude]: ")
	p.send("codexx\n")
	p.expect("not an agent: choose one of claude, gemini, aider, llm, human, synth, none")
	p.send("\n")
	code, shown := p.wait()
	if code != 0 {
		t.Fatalf("uwf init exited %d:\n%s", code, shown)
	}
	t.Logf("the terminal showed:\n%s", shown)
	if strings.Contains(shown, testKey) {
		t.Errorf("the key was echoed or printed:\n%s", shown)
	}
	for _, want := range []string{"Wrote " + filepath.Join(home, "config.yaml"), "Wrote " + filepath.Join(home, ".env") + " (mode 0600): OPENROUTER_API_KEY.",
		"defaultModel   openrouter: anthropic/claude-3.5-haiku", "defaultAgent   claude: claude -p --output-format json --permission-mode acceptEdits (preset claude-code)", "Next: uwf demo && uwf thread run review-loop"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, shown)
		}
	}
	e := &env{t: t, home: home}
	if got := e.readEnvFile(); got != "OPENROUTER_API_KEY="+testKey+"\n" {
		t.Errorf(".env = %q", got)
	}
	cfg := e.readConfig()
	for _, want := range []string{"baseURL: https://openrouter.ai/api/v1", "apiKeyEnv: OPENROUTER_API_KEY", "model: anthropic/claude-3.5-haiku",
		"defaultModel: openrouter", "# Claude Code in its headless mode (preset claude-code, docs/AGENTS.md), added by uwf init\n  claude: {preset: claude-code}", "defaultAgent: claude"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, testKey) {
		t.Errorf("the key is in config.yaml")
	}

	// Again: the answers are now the defaults, and Enter keeps the key.
	p = startPTY(t, home, "setup")
	p.expect("[openrouter]: ")
	p.send("\n")
	p.expect("[https://openrouter.ai/api/v1]: ")
	p.send("\n")
	p.expect("Model [anthropic/claude-3.5-haiku]: ")
	p.send("\n")
	p.expect("(not shown; Enter keeps the one in .env): ")
	p.send("\n")
	p.expect("[claude]: ")
	p.send("\n")
	if code, shown := p.wait(); code != 0 || !strings.Contains(shown, "config.yaml is unchanged.") || strings.Contains(shown, testKey) {
		t.Errorf("re-run: exit %d:\n%s", code, shown)
	}
	if got := e.readEnvFile(); got != "OPENROUTER_API_KEY="+testKey+"\n" {
		t.Errorf(".env after a re-run = %q", got)
	}

	// Once more, choosing no default agent: defaultAgent goes, the claude
	// entry stays.
	p = startPTY(t, home, "init", "--provider", "openrouter", "--base-url", "https://openrouter.ai/api/v1", "--model", "anthropic/claude-3.5-haiku")
	p.expect("(not shown; Enter keeps the one in .env): ")
	p.send("\n")
	p.expect("[claude]: ")
	p.send("none\n")
	if code, shown := p.wait(); code != 0 || !strings.Contains(shown, "defaultAgent   none") {
		t.Errorf("re-run choosing none: exit %d:\n%s", code, shown)
	}
	if cfg := e.readConfig(); strings.Contains(cfg, "defaultAgent") || !strings.Contains(cfg, "claude: {preset: claude-code}") {
		t.Errorf("config.yaml after choosing none:\n%s", cfg)
	}
}

// TestInitTerminalInterrupt interrupts uwf init at the hidden key prompt:
// it exits 130, writes nothing, and leaves the terminal echoing.
func TestInitTerminalInterrupt(t *testing.T) {
	t.Run("Ctrl-C", func(t *testing.T) { testInitInterrupt(t, true) })
	t.Run("SIGINT", func(t *testing.T) { testInitInterrupt(t, false) })
}

func testInitInterrupt(t *testing.T, byKey bool) {
	fakePath(t)
	home := filepath.Join(t.TempDir(), "home")
	p := startPTY(t, home, "init", "--provider", "openai", "--model", "gpt-4o")
	p.expect("[https://api.openai.com/v1]: ")
	p.send("\n")
	p.expect("(not shown; Enter to skip): ")
	p.send("sk-half")
	time.Sleep(50 * time.Millisecond)
	if byKey {
		p.send("\x03")
	} else {
		p.cmd.Process.Signal(syscall.SIGINT)
	}
	code, shown := p.wait()
	if code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, shown)
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted init wrote its home")
	}
	if strings.Contains(shown, "sk-half") {
		t.Errorf("the key was echoed:\n%s", shown)
	}
}

// TestInitJSON checks uwf init --json: one object saying where the key
// is, never the key.
func TestInitJSON(t *testing.T) {
	e := newEnv(t)
	fakePath(t, "aider", "opencode")
	t.Setenv("MY_GROQ_KEY", testKey)
	var got initResult
	out := e.okJSON(&got, "init", "--provider", "groq", "--yes", "--agent", "aider", "--api-key-env", "MY_GROQ_KEY")
	if strings.Contains(out, testKey) {
		t.Errorf("the key was printed: %s", out)
	}
	want := initResult{Config: filepath.Join(e.home, "config.yaml"), ConfigWrote: true, Env: filepath.Join(e.home, ".env"),
		Provider: "groq", BaseURL: "https://api.groq.com/openai/v1", Model: "groq", ModelID: "llama-3.1-8b-instant", APIKeyEnv: "MY_GROQ_KEY",
		APIKey: "environment", DefaultAgent: "aider", AgentCLIs: []string{"opencode", "aider"},
		Next: `uwf demo && uwf thread run review-loop -p "your task"`}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Errorf("init --json =\n%s\nwant\n%s", g, w)
	}
	if _, err := os.Stat(filepath.Join(e.home, ".env")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key from the environment was written to .env")
	}
	if cfg := e.readConfig(); !strings.Contains(cfg, "# Aider in its headless mode (preset aider, experimental: not confirmed from its own documentation or help; docs/AGENTS.md), added by uwf init\n  aider: {preset: aider}") {
		t.Errorf("config.yaml:\n%s", cfg)
	}
	// The entry is the preset's whole: what the preset says now is what
	// runs, so a later change of the preset reaches it.
	c, err := config.Load(e.home, agent.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := config.PresetByName("aider")
	a, ok := c.Agent("aider")
	if !ok || a.Command != p.Command || !slices.Equal(a.Args, p.Args) || a.Prompt != p.Prompt || a.PromptFlag != p.PromptFlag || a.Output != p.Output {
		t.Errorf("agent aider = %+v, want preset %+v", a, p)
	}
}

// TestInitTerminalEOF ends the input (Ctrl-D) at each kind of question:
// exit 1, a message saying so, nothing written.
func TestInitTerminalEOF(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		until string
	}{
		{"a question", []string{"init"}, "[openai]: "},
		{"the hidden key", []string{"init", "--provider", "openai", "--base-url", "https://api.openai.com/v1", "--model", "gpt-4o"}, "(not shown; Enter to skip): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakePath(t)
			os.Unsetenv("OPENAI_API_KEY")
			home := filepath.Join(t.TempDir(), "home")
			p := startPTY(t, home, tc.args...)
			p.expect(tc.until)
			p.send("\x04")
			code, shown := p.wait()
			if code != 1 || !strings.Contains(shown, "uwf: uwf init: the input ended before every question was answered") {
				t.Errorf("exit %d:\n%s", code, shown)
			}
			if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("init wrote its home after the input ended")
			}
		})
	}
}

// TestInitNext checks the command uwf init prints next: the --home and
// --store of the command line kept (the environment's inherited), a
// store's password hidden, and the example workflow registered from the
// checkout's file where the working folder has it, else by uwf demo.
func TestInitNext(t *testing.T) {
	checkout := t.TempDir()
	if err := os.MkdirAll(filepath.Join(checkout, "examples"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "examples", "review-loop.yaml"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	const run = ` thread run review-loop -p "your task"`
	for _, tc := range []struct {
		name, cwd, home, envHome, store, agent, want string
	}{
		{"checkout", checkout, "", "", "", "claude", "uwf workflow put examples/review-loop.yaml && uwf" + run},
		{"elsewhere, the default home", elsewhere, "", "", "", "claude", "uwf --home /h/.uncaged/workflow demo && uwf" + run},
		{"UWF_HOME", elsewhere, "/env/home", "/env/home", "", "claude", "uwf demo && uwf" + run},
		{"--home", elsewhere, "/my home", "/env/home", "", "claude", "uwf --home '/my home' demo && uwf --home '/my home'" + run},
		{"--store with a password", checkout, "", "", "postgres://u:hunter2@db/uwf", "claude",
			"uwf --store postgres://u:xxxxx@db/uwf workflow put examples/review-loop.yaml && uwf --store postgres://u:xxxxx@db/uwf" + run +
				"    (the store's password is shown as xxxxx: put yours back, or set UWF_STORE and drop --store)"},
		{"no agent", elsewhere, "/h2", "", "", "", "uwf --home /h2 demo    (offline; then choose an agent: uwf --home /h2 init --agent <name>)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.cwd)
			t.Setenv("UWF_HOME", tc.envHome)
			t.Setenv("UWF_STORE", "")
			s := &session{home: tc.home, store: tc.store}
			if got := initNext(s, initResult{DefaultAgent: tc.agent}, "/h/.uncaged/workflow"); got != tc.want {
				t.Errorf("next =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestInitOtherCommand: Cursor's program is agent, a link into
// ~/.local/share/cursor-agent, and cursor-agent on installs from before the
// rename. uwf init detects either (writing command: cursor-agent for the
// older name), and does not take an unrelated program called agent for
// Cursor.
func TestInitOtherCommand(t *testing.T) {
	for _, tc := range []struct {
		name, onPath string
		link         bool   // onPath is a link into a cursor-agent folder
		want         string // the entry written; "" when nothing is detected
	}{
		{"the older name", "cursor-agent", false, "  cursor: {preset: cursor, command: cursor-agent}\n"},
		{"agent, a link into cursor-agent", "agent", true, "  cursor: {preset: cursor}\n"},
		{"another program called agent", "agent", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			fakePath(t, tc.onPath)
			if tc.link {
				bin := os.Getenv("PATH")
				real := filepath.Join(t.TempDir(), "cursor-agent", "versions", "1", "cursor-agent")
				if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(bin, tc.onPath), real); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(real, filepath.Join(bin, tc.onPath)); err != nil {
					t.Fatal(err)
				}
			}
			out := e.ok("", "init", "--provider", "none", "--yes", "--json")
			if tc.want == "" {
				if !strings.Contains(out, `"agentCLIs":[]`) {
					t.Errorf("init took an unrelated agent for Cursor:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, `"agentCLIs":["cursor"]`) || !strings.Contains(out, `"defaultAgent":"cursor"`) {
				t.Errorf("init did not detect %s:\n%s", tc.onPath, out)
			}
			cfg := e.readConfig()
			if !strings.Contains(cfg, tc.want) {
				t.Errorf("init --yes: config.yaml =\n%s\nwant it to contain %q", cfg, tc.want)
			}
			// Named by the program found, the same entry.
			e.writeConfig("")
			e.ok("", "init", "--provider", "none", "--agent", tc.onPath)
			cfg = e.readConfig()
			if !strings.Contains(cfg, tc.want) || !strings.HasSuffix(cfg, "\ndefaultAgent: cursor\n") {
				t.Errorf("init --agent %s: config.yaml =\n%s\nwant it to contain %q", tc.onPath, cfg, tc.want)
			}
		})
	}
}
