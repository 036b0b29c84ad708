package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// oneRole is the workflow the preset tests run: one role, done at once.
const oneRole = `name: one
roles:
  worker:
    goal: Do the task.
    frontmatter:
      type: object
      properties:
        status: { const: done }
        summary: { type: string }
      required: [status, summary]
graph:
  $START: { new: { role: worker, prompt: "Do it." } }
  worker: { done: { role: $END, prompt: "Done: {{ summary }}" } }
`

// presetSecret is the API key the fake agents echo: it must never reach
// the store or the screen.
const presetSecret = "sk-ant-preset-test-0123456789"

// presetCase is what one preset's run must show.
type presetCase struct {
	preset  string
	argv    []string // the argv the fake saw; "<prompt>" stands for the prompt, "<file>" for the prompt file
	via     string   // where the prompt went: stdin, arg or file
	session string   // the step's session, as "step show" prints it ("" for none)
	version string   // the store's FORMAT after the run: "1" or "2"
}

var presetCases = []presetCase{
	{"claude-code", []string{"claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"}, "stdin",
		"claude-code session claude-session-1, model claude-sonnet-4-5, 4012 in (3000 cached) / 56 out tokens, 2 turns, $0.0123", "2"},
	{"codex", []string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check"}, "stdin",
		"codex session codex-thread-1, 24763 in (24448 cached) / 122 out tokens, 1 turns", "2"},
	{"cursor", []string{"agent", "-p", "--output-format", "json", "<prompt>"}, "arg",
		"cursor session cursor-session-1", "2"},
	{"gemini", []string{"gemini", "--output-format", "json", "--approval-mode", "auto_edit"}, "stdin",
		"gemini session gemini-session-1, model gemini-2.5-pro, 24939 in (21263 cached) / 20 out tokens (154 reasoning)", "2"},
	{"opencode", []string{"opencode", "run", "--format", "json"}, "stdin",
		"opencode session ses_opencode1, 9400 in (9000 cached) / 25 out tokens (10 reasoning), 1 turns, $0.002", "2"},
	{"aider", []string{"aider", "--yes-always", "--no-pretty", "--no-stream", "--message-file", "<file>"}, "file",
		"aider, model anthropic/claude-sonnet-4-5, 2300 in / 150 out tokens, 1 turns, $0.01", "2"},
	{"hermes", []string{"hermes", "-z", "<prompt>"}, "arg", "", "1"},
}

// presetEnv is a home whose agent "a" is the preset, run through the fake
// executable under the tool's command name on PATH, in mode.
func presetEnv(t *testing.T, preset, mode, timeout string) (*env, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake agents are shell scripts")
	}
	fake, err := filepath.Abs(filepath.Join("testdata", "presets", "fake-agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t) // changes the working folder
	bin, log := t.TempDir(), t.TempDir()
	for _, name := range []string{"claude", "codex", "agent", "gemini", "opencode", "aider", "hermes"} {
		if err := os.Symlink(fake, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("ANTHROPIC_API_KEY", presetSecret)
	e.writeConfig("agents:\n  a:\n    preset: " + preset + "\n    env: {FAKE_MODE: " + mode + ", FAKE_LOG: " + log + "}\n    timeout: " + timeout + "\ndefaultAgent: a\n")
	e.write("one.yaml", oneRole)
	return e, log
}

// threadOf returns the thread id that "thread run" printed first.
func threadOf(t *testing.T, r result) string {
	t.Helper()
	first, _, _ := strings.Cut(r.stdout+r.stderr, "\n")
	for f := range strings.FieldsSeq(first) {
		if len(f) == 26 {
			return f
		}
	}
	t.Fatalf("no thread id in %v", r)
	return ""
}

// checkNoSecret fails if the secret is anywhere in the store's files or in
// what uwf printed.
func checkNoSecret(t *testing.T, e *env, printed ...string) {
	t.Helper()
	for _, p := range printed {
		if strings.Contains(p, presetSecret) {
			t.Errorf("the API key was printed:\n%s", p)
		}
	}
	checkNotStored(t, e, presetSecret, "the API key")
}

// checkNotStored fails if text is in any file under the home (the store,
// config.yaml, .env), naming what it is.
func checkNotStored(t *testing.T, e *env, text, what string) {
	t.Helper()
	err := filepath.WalkDir(e.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && bytes.Contains(data, []byte(text)) {
			t.Errorf("%s is stored in %s", what, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPresetRuns runs a thread with each preset's fake executable: the
// argv is the preset's, the prompt arrives where the preset passes it, the
// answer is extracted, the session is in the detail node (a detail-run
// node, which moves the store to format version 2; a preset without
// structured output leaves it at version 1), thread show and step show
// print it, and the API key is masked everywhere.
func TestPresetRuns(t *testing.T) {
	for _, tc := range presetCases {
		t.Run(tc.preset, func(t *testing.T) {
			e, log := presetEnv(t, tc.preset, "ok", "20s")
			r := e.run("", "thread", "run", "one.yaml", "-p", "Add a --json flag")
			if r.code != 0 {
				t.Fatalf("thread run: %v", r)
			}
			id := threadOf(t, r)
			if st, _ := e.status(id); st != "done" {
				t.Fatalf("status %s, want done", st)
			}

			argvData, err := os.ReadFile(filepath.Join(log, "argv"))
			if err != nil {
				t.Fatal(err)
			}
			argv := strings.Split(strings.TrimSuffix(string(argvData), "\x00"), "\x00")
			stdin, _ := os.ReadFile(filepath.Join(log, "stdin"))
			var prompt string
			want := slices.Clone(tc.argv)
			switch tc.via {
			case "stdin":
				prompt = string(stdin)
			case "arg":
				prompt = argv[len(argv)-1]
				want[len(want)-1] = prompt
				if len(stdin) != 0 {
					t.Errorf("stdin = %q, want nothing when the prompt is an argument", stdin)
				}
			case "file":
				data, _ := os.ReadFile(filepath.Join(log, "promptfile"))
				prompt = string(data)
				want[len(want)-1] = argv[len(argv)-1]
				if _, err := os.Stat(argv[len(argv)-1]); err == nil {
					t.Errorf("the prompt file %s outlived the run", argv[len(argv)-1])
				}
			}
			if !slices.Equal(argv, want) {
				t.Errorf("argv = %q\nwant   %q", argv, want)
			}
			if !strings.Contains(prompt, "Do it.") || !strings.Contains(prompt, "Add a --json flag") {
				t.Errorf("the prompt (by %s) lacks the task: %q", tc.via, prompt)
			}

			steps := e.stepsOf(id)
			stepHash := steps[1][1]
			var sj struct {
				stepJSON
				Detail  string
				Session map[string]any
			}
			e.okJSON(&sj, "step", "show", stepHash)
			if sj.Value["summary"] != "from "+filepath.Base(tc.argv[0]) {
				t.Errorf("extracted output = %v, want the fake's answer", sj.Value)
			}
			if !strings.HasPrefix(sj.Raw, "---\nstatus: done\n") || !strings.Contains(sj.Raw, "Done with key ********") {
				t.Errorf("raw output = %q, want the answer alone, its key masked", sj.Raw)
			}
			var det struct{ Type string }
			e.okJSON(&det, "cas", "get", sj.Detail)
			show := e.ok("", "step", "show", stepHash)
			tshow := e.ok("", "thread", "show", id)
			if tc.session == "" {
				if sj.Session != nil || det.Type != "DKGXHKXNQVG36" || strings.Contains(show, "session:") || strings.Contains(tshow, "session:") {
					t.Errorf("a preset without structured output recorded a session: %v, detail type %s", sj.Session, det.Type)
				}
			} else {
				if det.Type != "F2RQ12Y9KG94G" || sj.Session["tool"] != tc.preset {
					t.Errorf("detail %s type %s, session %v; want a detail-run node of %s", sj.Detail, det.Type, sj.Session, tc.preset)
				}
				if !strings.Contains(show, "session:   "+tc.session+"\n") {
					t.Errorf("step show lacks the session line %q:\n%s", tc.session, show)
				}
				// The head is the done mark: thread show names the session
				// of the step before it.
				if !strings.Contains(tshow, "session:  "+tc.session+" (depth 1)\n") {
					t.Errorf("thread show lacks the session line %q:\n%s", tc.session, tshow)
				}
				// The totals of the one run that reported a session are its
				// session's, in text and JSON, and --json has the session.
				if !strings.Contains(tshow, "\ntotals:   1 session") || !strings.HasSuffix(tshow, " (1 step)\n") {
					t.Errorf("thread show lacks the totals line:\n%s", tshow)
				}
				var tj struct {
					Session map[string]any
					Totals  map[string]any
				}
				e.okJSON(&tj, "thread", "show", id)
				if tj.Session["node"] != stepHash || tj.Session["depth"] != 1.0 || tj.Session["id"] != sj.Session["id"] ||
					tj.Session["tool"] != tc.preset || tj.Session["inputTokens"] != sj.Session["inputTokens"] {
					t.Errorf("thread show --json session = %v, want the step's %s: %v", tj.Session, stepHash, sj.Session)
				}
				num := func(v any) float64 { f, _ := v.(float64); return f }
				if tj.Totals["sessions"] != 1.0 || tj.Totals["steps"] != 1.0 || num(tj.Totals["inputTokens"]) != num(sj.Session["inputTokens"]) ||
					num(tj.Totals["outputTokens"]) != num(sj.Session["outputTokens"]) || num(tj.Totals["costUSD"]) != num(sj.Session["costUSD"]) {
					t.Errorf("thread show --json totals = %v, want the one session %v", tj.Totals, sj.Session)
				}
				// thread read decodes the detail-run node as a detail.
				if !strings.Contains(e.ok("", "thread", "read", id), "from "+filepath.Base(tc.argv[0])) {
					t.Error("thread read does not show the step")
				}
			}
			format, err := os.ReadFile(filepath.Join(e.storeDir(), "FORMAT"))
			if err != nil || !strings.Contains(string(format), tc.version) {
				t.Errorf("FORMAT = %q, %v; want version %s", format, err, tc.version)
			}
			if out := e.ok("", "cas", "fsck"); !strings.Contains(out, "ok") && out == "" {
				t.Errorf("fsck: %q", out)
			}
			checkNoSecret(t, e, r.stdout, r.stderr, show, tshow)
		})
	}
}

// TestPresetFailures runs each preset's fake in its failure modes: the
// tool's error, a rate limit and a timeout each give a failed step whose
// error says which, the thread unmoved, and thread show naming it.
func TestPresetFailures(t *testing.T) {
	modes := []struct {
		mode, timeout, want string
	}{
		{"error", "20s", "Invalid API key ********"},
		{"ratelimit", "20s", "rate limited"},
		{"timeout", "300ms", "timed out after 300ms"},
	}
	for _, tc := range presetCases {
		for _, m := range modes {
			t.Run(tc.preset+"/"+m.mode, func(t *testing.T) {
				e, _ := presetEnv(t, tc.preset, m.mode, m.timeout)
				r := e.run("", "thread", "run", "one.yaml", "-p", "Add a --json flag")
				if r.code != 1 {
					t.Fatalf("thread run: %v; want exit 1", r)
				}
				id := threadOf(t, r)
				if st, _ := e.status(id); st != "active" {
					t.Errorf("status %s, want active (nothing moved)", st)
				}
				if !strings.Contains(r.stderr, m.want) {
					t.Errorf("stderr lacks %q:\n%s", m.want, r.stderr)
				}
				show := e.ok("", "thread", "show", id)
				if !strings.Contains(show, "last failure:") || !strings.Contains(show, m.want) {
					t.Errorf("thread show lacks the failure %q:\n%s", m.want, show)
				}
				checkNoSecret(t, e, r.stdout, r.stderr, show)
			})
		}
	}
}

// TestPresetEscapedSecret runs each preset's fake failing with the API key
// JSON-escaped in its error (stdout or stderr, as the tool writes it): the
// key is masked in every form wherever the run is stored or printed (the
// failure's error, its detail's raw output and stderr, thread show, the
// run's output), neither as written nor escaped.
func TestPresetEscapedSecret(t *testing.T) {
	const escaped = `\u0073k\u002D\u0061nt\u002Dpreset\u002Dtest\u002D0123456789`
	for _, tc := range presetCases {
		t.Run(tc.preset, func(t *testing.T) {
			e, _ := presetEnv(t, tc.preset, "escaped", "20s")
			r := e.run("", "thread", "run", "one.yaml", "-p", "Add a --json flag")
			if r.code != 1 {
				t.Fatalf("thread run: %v; want exit 1", r)
			}
			id := threadOf(t, r)
			show := e.ok("", "thread", "show", id)
			var tj struct {
				LastFailure struct{ Detail, Error string }
			}
			e.okJSON(&tj, "thread", "show", id)
			if !strings.Contains(tj.LastFailure.Error, "********") {
				t.Errorf("the failure's error %q does not show the masked key", tj.LastFailure.Error)
			}
			det := e.ok("", "cas", "get", tj.LastFailure.Detail)
			printed := []string{r.stdout, r.stderr, show, det, tj.LastFailure.Error}
			for _, h := range regexp.MustCompile(`"(raw|stderr)":"([0-9A-Z]{13})"`).FindAllStringSubmatch(det, -1) {
				printed = append(printed, e.ok("", "cas", "get", h[2]))
			}
			checkNoSecret(t, e, printed...)
			for _, p := range printed {
				if strings.Contains(p, escaped) || strings.Contains(p, `u0073k`) {
					t.Errorf("the escaped key was printed:\n%s", p)
				}
			}
			checkNotStored(t, e, `u0073k`, "the escaped key")
		})
	}
}

// TestConfigListExperimentalPreset checks config list marks an
// experimental preset, in text and JSON.
func TestConfigListExperimentalPreset(t *testing.T) {
	e := newEnv(t)
	e.writeConfig("agents:\n  h: {preset: hermes}\n  c: {preset: claude-code}\n")
	out := e.ok("", "config", "list")
	if !strings.Contains(out, "agents.h.preset = hermes  # experimental preset: not confirmed") {
		t.Errorf("config list does not mark hermes experimental:\n%s", out)
	}
	if !strings.Contains(out, "agents.c.preset = claude-code\n") {
		t.Errorf("config list marks claude-code:\n%s", out)
	}
	var kvs []struct{ Path, Value, Note string }
	e.okJSON(&kvs, "config", "list")
	for _, kv := range kvs {
		if (kv.Path == "agents.h.preset") != (kv.Note != "") {
			t.Errorf("config list --json: %+v", kv)
		}
	}
}

// TestPresetNotInstalled checks a preset whose tool is not on PATH fails
// before a thread starts, saying which preset and what to do.
func TestPresetNotInstalled(t *testing.T) {
	e := newEnv(t)
	t.Setenv("PATH", t.TempDir())
	e.writeConfig("agents:\n  coder: {preset: claude-code}\ndefaultAgent: coder\n")
	e.write("one.yaml", oneRole)
	r := e.run("", "thread", "run", "one.yaml", "-p", "x")
	if r.code == 0 || !strings.Contains(r.stderr, `"claude"`) || !strings.Contains(r.stderr, "preset claude-code: install it, or set agents.coder.command") {
		t.Errorf("thread run without the tool: %v", r)
	}
	if strings.Contains(r.stdout, "thread ") {
		t.Errorf("a thread started: %v", r)
	}
}
