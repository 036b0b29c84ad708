package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completionEnv is a home with the example workflow registered, two
// threads (newest first in ids) and a config.yaml with one agent.
func completionEnv(t *testing.T) (e *env, ids []string) {
	t.Helper()
	e = newEnv(t)
	e.writeConfig("agents:\n  coder: {command: my-agent}\ndefaultAgent: coder\n")
	e.ok("", "workflow", "put", exampleWorkflowPath(t))
	for _, task := range []string{"one", "two"} {
		e.clock.Advance(1e9)
		out := e.ok("", "thread", "start", "review-loop", "-p", task)
		ids = append([]string{firstField(out)}, ids...)
	}
	return e, ids
}

// exampleWorkflowPath is examples/review-loop.yaml, absolute.
func exampleWorkflowPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(filepath.Dir(goldenDir), "..", "..", "..", "examples", "review-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// completions runs uwf __complete and returns the candidates (without
// their descriptions).
func (e *env) completions(words ...string) []string {
	e.t.Helper()
	out := e.ok("", append([]string{"__complete", "--"}, words...)...)
	var got []string
	for line := range strings.Lines(out) {
		w, _, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok {
			e.t.Fatalf("__complete printed %q: want <candidate>\\t<description>", line)
		}
		got = append(got, w)
	}
	return got
}

func TestComplete(t *testing.T) {
	e, ids := completionEnv(t)
	other := filepath.Join(t.TempDir(), "other")
	for _, tc := range []struct {
		words []string
		want  []string // exactly these, in this order; nil: none
		has   []string // at least these
	}{
		{words: []string{""}, has: []string{"cas", "workflow", "thread", "config", "init", "completion", "demo", "serve"}},
		{words: []string{"thr"}, want: []string{"thread"}},
		{words: []string{"thread", "s"}, want: []string{"start", "step", "show", "steps", "suspend"}},
		{words: []string{"thread", "show", ""}, want: ids},
		{words: []string{"thread", "show", ids[1][:25]}, want: ids[1:]},
		{words: []string{"--json", "thread", "--json", "show", ""}, want: ids},
		{words: []string{"thread", "show", ids[0], ""}},
		{words: []string{"thread", "fork", ""}, want: ids},
		{words: []string{"thread", "run", "rev"}, want: []string{"review-loop"}},
		{words: []string{"thread", "run", "-p", "task", ""}, want: []string{"review-loop"}},
		{words: []string{"workflow", "show", ""}, want: []string{"review-loop"}},
		{words: []string{"workflow", "history", "r"}, want: []string{"review-loop"}},
		{words: []string{"workflow", "put", ""}}, // a file: the shell offers them
		{words: []string{"thread", "list", "--status", ""}, want: []string{"active", "done", "killed", "suspended"}},
		{words: []string{"thread", "list", "--st"}, want: []string{"--status", "--store"}},
		{words: []string{"thread", "step", "--ag"}, want: []string{"--agent"}},
		{words: []string{"thread", "step", ids[0], "--agent", ""}, want: []string{"coder", "human", "llm", "synth"}},
		{words: []string{"thread", "replay", ids[0], "--workflow=r"}, want: []string{"--workflow=review-loop"}},
		{words: []string{"thread", "replay", ids[0], "--workflow", "=", ""}, want: []string{"review-loop"}},
		{words: []string{"cas", "ref", "log", "w"}, want: []string{"workflows/review-loop"}},
		{words: []string{"cas", "ref", "log", "threads/" + ids[0][:25]}, want: []string{"threads/" + ids[0]}},
		{words: []string{"config", "get", "def"}, want: []string{"defaultAgent"}},
		{words: []string{"completion", ""}, want: []string{"bash", "zsh", "fish"}},
		{words: []string{"init", "--provider", "o"}, want: []string{"openai", "openrouter", "ollama"}},
		{words: []string{"--home", other, "thread", "show", ""}}, // no store there
		{words: []string{"nope", ""}},
	} {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			got := e.completions(tc.words...)
			if tc.has != nil {
				for _, w := range tc.has {
					if !slices.Contains(got, w) {
						t.Errorf("completions of %q = %q, lacking %q", tc.words, got, w)
					}
				}
				if slices.Contains(got, completeCommandName) {
					t.Errorf("the hidden %s is offered", completeCommandName)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("completions of %q = %q, want %q", tc.words, got, tc.want)
			}
		})
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("completing against a missing store created %s", other)
	}
}

// TestCompleteNoStore completes where there is no store yet: nothing, and
// no store is created.
func TestCompleteNoStore(t *testing.T) {
	e := newEnv(t)
	if got := e.completions("thread", "show", ""); len(got) != 0 {
		t.Errorf("completions without a store = %q", got)
	}
	if got := e.completions("thread", "sh"); !slices.Equal(got, []string{"show"}) {
		t.Errorf("completions of a subcommand without a store = %q", got)
	}
	if _, err := os.Stat(e.storeDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("completion created the store")
	}
}

func TestCompletionCommand(t *testing.T) {
	e := newEnv(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out := e.ok("", "completion", shell); !strings.Contains(out, "__complete --") {
			t.Errorf("completion %s does not call __complete:\n%s", shell, out)
		}
	}
	if r := e.run("", "completion", "tcsh"); r.code != 2 || !strings.Contains(r.stderr, `unknown shell "tcsh": want bash, zsh or fish`) {
		t.Errorf("completion tcsh: %v", r)
	}
	if r := e.run("", "completion"); r.code != 2 {
		t.Errorf("completion without a shell: %v", r)
	}
}

// shellEnv puts a "uwf" on PATH that runs this test binary as uwf, on the
// home of e, for the shells to call.
func shellEnv(t *testing.T, e *env) []string {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nUWF_TEST_MAIN=1 exec '" + bin + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "uwf"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "UWF_HOME="+e.home, "UWF_STORE=", "HOME="+t.TempDir())
}

// TestCompletionScripts loads each shell's script in that shell and
// completes a thread id and a workflow name through it. bash is always
// there; zsh and fish are skipped when not installed.
func TestCompletionScripts(t *testing.T) {
	e, ids := completionEnv(t)
	environ := shellEnv(t, e)
	for _, tc := range []struct {
		shell string
		args  []string
		// script completes the line $1 (the words after "uwf", the last
		// one being completed) and prints a candidate per line.
		script string
	}{
		{"bash", []string{"--norc", "--noprofile", "-c"}, `
eval "$(uwf completion bash)" || exit 7
[ "$(complete -p uwf)" = "complete -o default -F _uwf_complete uwf" ] || { complete -p uwf; exit 8; }
read -ra COMP_WORDS <<< "uwf $1"
[[ $1 == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_uwf_complete
printf '%s\n' "${COMPREPLY[@]}"
`},
		{"zsh", []string{"-f", "-c"}, `
autoload -Uz compinit && compinit -u -D
eval "$(uwf completion zsh)" || exit 7
[[ $_comps[uwf] == _uwf ]] || exit 8
_describe() { local c; for c in "${(@P)${@[-1]}}"; do print -r -- "${c%%:*}"; done }
_files() { print -r -- "(files)" }
words=(uwf ${(z)1}); [[ $1 == *" " ]] && words+=("")
CURRENT=${#words}
_uwf
`},
		{"fish", []string{"--no-config", "-c"}, `
uwf completion fish | source; or exit 7
complete -C "uwf $argv[1]" | string replace -r '\t.*' ''; true
`},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			sh, err := exec.LookPath(tc.shell)
			if err != nil {
				if tc.shell == "bash" {
					t.Fatalf("bash is needed: %v", err)
				}
				t.Skipf("%s is not installed: its completion script is not tested", tc.shell)
			}
			complete := func(line string) []string {
				t.Helper()
				args := append(slices.Clone(tc.args), tc.script, tc.shell, line)
				if tc.shell == "fish" {
					args = append(slices.Clone(tc.args), tc.script, line)
				}
				cmd := exec.Command(sh, args...)
				cmd.Env = environ
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s completing %q: %v\n%s", tc.shell, line, err, out)
				}
				return strings.Fields(string(out))
			}
			if got := complete("thread show "); !slices.Equal(sorted(got), sorted(ids)) {
				t.Errorf("%s completes %q with %q, want the thread ids %q", tc.shell, "uwf thread show ", got, ids)
			}
			if got := complete("thread show " + ids[1][:24]); !slices.Equal(got, ids[1:]) {
				t.Errorf("%s completes a thread id prefix with %q, want %q", tc.shell, got, ids[1:])
			}
			if got := complete("thread run rev"); !slices.Equal(got, []string{"review-loop"}) {
				t.Errorf("%s completes %q with %q, want review-loop", tc.shell, "uwf thread run rev", got)
			}
			if got := complete("workf"); !slices.Equal(got, []string{"workflow"}) {
				t.Errorf("%s completes %q with %q, want workflow", tc.shell, "uwf workf", got)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
