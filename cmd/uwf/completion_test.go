package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/uncaged/uwf/cas/disk"
	"github.com/uncaged/uwf/internal/pgtest"
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
		{words: []string{"thread", "list", "--parent", ""}, want: ids},
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
		{words: []string{"init", "--agent", "c"}, want: []string{"coder", "claude", "codex", "cursor"}},
		{words: []string{"init", "--agent", ""}, has: []string{"coder", "llm", "claude", "opencode", "aider", "hermes", "none"}},
		{words: []string{"thread", "step", "x", "--agent", "c"}, want: []string{"coder"}},
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

// TestCompleteWritesNothing completes thread ids where there is no store,
// or one whose creation was cut short, on disk and (with
// UWF_TEST_POSTGRES) in PostgreSQL: no candidates, and nothing created or
// initialised: no folder, file, schema, table or ref.
func TestCompleteWritesNothing(t *testing.T) {
	t.Run("disk", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			prepare func(t *testing.T, dir string)
		}{
			{"no store", func(*testing.T, string) {}},
			{"an empty folder", func(t *testing.T, dir string) {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}},
			{"creation cut short", func(t *testing.T, dir string) {
				st, err := disk.Create(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				st.Close()
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t)
				tc.prepare(t, e.storeDir())
				before := treeOf(t, e.home)
				other := filepath.Join(t.TempDir(), "a", "store")
				for _, words := range [][]string{{"thread", "show", ""}, {"--store", other, "workflow", "show", ""}} {
					if got := e.completions(words...); len(got) != 0 {
						t.Errorf("completions of %q = %q; want none", words, got)
					}
				}
				if after := treeOf(t, e.home); !slices.Equal(after, before) {
					t.Errorf("completion changed the home:\nbefore %q\nafter  %q", before, after)
				}
				if _, err := os.Stat(filepath.Dir(other)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("completion with --store %s created its parent folder", other)
				}
			})
		}
	})
	t.Run("postgres", func(t *testing.T) {
		base := pgtest.URL(t)
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to %s: %v", pgtest.EnvVar, err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		count := func(sql, schema string) int {
			t.Helper()
			var n int
			if err := conn.QueryRow(ctx, sql, schema).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		for _, empty := range []bool{false, true} {
			schema := pgtest.Schema(t, "uwf_complete_")
			if empty {
				if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
					t.Fatal(err)
				}
			}
			e := newEnv(t)
			url := base + sep + "schema=" + schema
			if got := e.completions("--store", url, "thread", "show", ""); len(got) != 0 {
				t.Errorf("completions = %q; want none", got)
			}
			t.Setenv("UWF_STORE", url)
			if got := e.completions("workflow", "show", ""); len(got) != 0 {
				t.Errorf("completions = %q; want none", got)
			}
			schemas := count("SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", schema)
			tables := count("SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema)
			if want := map[bool]int{false: 0, true: 1}[empty]; schemas != want || tables != 0 {
				t.Errorf("after completing (empty schema %v): %d schemas named %s, %d tables in it; want %d and 0", empty, schemas, schema, tables, want)
			}
		}
	})
}

// treeOf lists the paths under dir, relative to it (none if dir is absent).
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}
