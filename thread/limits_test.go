package thread_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/thread"
)

// unboundedLoop is loopWorkflow without maxSteps.
var unboundedLoop = strings.Replace(loopWorkflow, "maxSteps: 20\n", "", 1)

// TestDefaultStepLimit: a workflow without maxSteps is bounded by the
// default limit (here RunOptions.MaxSteps) the same way: a suspended mark
// naming the limit, a distinct limit event, and StepN with n = 0 bounded
// too; a resume gives another limit's worth of steps.
func TestDefaultStepLimit(t *testing.T) {
	te := newTEnv(t)
	wf := te.putWorkflow(unboundedLoop)
	var events []thread.Event
	opts := &thread.RunOptions{Config: loopAgent(t), MaxSteps: 5, Progress: func(ev thread.Event) {
		if ev.Type != thread.EventRunning {
			events = append(events, ev)
		}
	}}
	id, rs, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	roles := te.roles(id)
	if countSteps(roles) != 5 || roles[len(roles)-1] != "mark:suspended" {
		t.Fatalf("Run: roles %q, want 5 steps then a suspended mark", roles)
	}
	last := rs[len(rs)-1]
	if last.Kind != thread.EventLimit {
		t.Errorf("last result kind %q, want %q", last.Kind, thread.EventLimit)
	}
	hn, err := te.e.Node(te.ctx, te.head(id))
	if err != nil {
		t.Fatal(err)
	}
	wantReason := "step limit reached: 5 steps, the default for a workflow without maxSteps"
	if hn.Status() != thread.StatusSuspended || hn.Mark.Reason != wantReason {
		t.Errorf("head: status %s, reason %q; want suspended, %q", hn.Status(), hn.Mark.Reason, wantReason)
	}
	ev := events[len(events)-1]
	if ev.Type != thread.EventLimit || ev.Limit != 5 || ev.Reason != wantReason || ev.Head != last.Head {
		t.Errorf("last event %+v, want a limit event with limit 5", ev)
	}
	if _, err := te.e.Resume(te.ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := te.e.StepN(te.ctx, id, 0, opts); err != nil {
		t.Fatal(err)
	}
	if got := countSteps(te.roles(id)); got != 10 {
		t.Errorf("after resume and StepN(0): %d steps, want 10", got)
	}
}

// TestDefaultStepLimitIs100: without RunOptions.MaxSteps, a workflow
// without maxSteps stops at DefaultMaxSteps.
func TestDefaultStepLimitIs100(t *testing.T) {
	if testing.Short() {
		t.Skip("100 steps")
	}
	te := newTEnv(t)
	wf := te.putWorkflow(unboundedLoop)
	id, _, err := te.e.Start(te.ctx, wf, "task", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := te.e.StepN(te.ctx, id, 0, &thread.RunOptions{Config: loopAgent(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != thread.DefaultMaxSteps+1 || rs[len(rs)-1].Kind != thread.EventLimit {
		t.Fatalf("StepN(0): %d results, last %q; want %d steps and a limit", len(rs), rs[len(rs)-1].Kind, thread.DefaultMaxSteps)
	}
}

// TestUnknownAgentCreatesNothing: Run refuses an agent that cannot run
// before it creates a thread; Step refuses an unknown --agent before it
// writes anything, even where the next cycle would only append a mark.
func TestUnknownAgentCreatesNothing(t *testing.T) {
	te := newTEnv(t)
	wf := te.reviewLoop()
	for _, tc := range []struct {
		name string
		opts *thread.RunOptions
		is   error
	}{
		{"unknown --agent", &thread.RunOptions{Agent: "nope"}, agent.ErrUnknownAgent},
		{"no agent at all", &thread.RunOptions{}, agent.ErrNoAgent},
		{"replay of a missing thread", &thread.RunOptions{Agent: "replay:01JGJFGR4E0000000000000999"}, cas.ErrNotFound},
		{"replay of a bad id", &thread.RunOptions{Agent: "replay:xyz"}, thread.ErrInvalidID},
		{"llm without a model", &thread.RunOptions{Agent: "llm"}, nil},
		{"human without a terminal", &thread.RunOptions{Agent: "human"}, nil},
		{"a command that is not there", &thread.RunOptions{Config: parseConfig(t, "agents:\n  gone: {command: /nonexistent/agent}\ndefaultAgent: gone\n")}, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := te.threadRefs()
			id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), tc.opts)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Run = %v, want an error wrapping %v", err, tc.is)
			}
			if id != "" {
				t.Errorf("Run returned thread %q", id)
			}
			if after := te.threadRefs(); !slices.Equal(before, after) {
				t.Errorf("threads before %q, after %q", before, after)
			}
		})
	}
	// A thread whose next cycle is $END: an unknown --agent still appends
	// nothing.
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := te.e.ForkAt(te.ctx, id, 5) // after the approval: next is $END
	if err != nil {
		t.Fatal(err)
	}
	head := te.head(f)
	if _, err := te.e.Step(te.ctx, f, &thread.RunOptions{Agent: "nope"}); !errors.Is(err, agent.ErrUnknownAgent) || !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Step --agent nope = %v, want ErrUnknownAgent", err)
	}
	if te.head(f) != head {
		t.Errorf("Step with an unknown agent moved the thread")
	}
}

// threadRefs lists the threads/ and failures/ refs.
func (te *tenv) threadRefs() []string {
	te.t.Helper()
	var out []string
	for _, prefix := range []string{thread.ThreadPrefix, thread.FailurePrefix} {
		for r, err := range te.refs.List(te.ctx, prefix) {
			if err != nil {
				te.t.Fatal(err)
			}
			out = append(out, r.Name)
		}
	}
	return out
}

// TestSecretsMasked: an agent that prints secrets (its environment, the
// store URL) on stdout and stderr, and fails once with a secret in its
// error, leaves none of them in any stored object or in the errors, events
// and failure records; a 7-byte secret is not masked.
func TestSecretsMasked(t *testing.T) {
	te := newTEnv(t)
	home := t.TempDir()
	const (
		dotenvKey   = "dotenv-api-key-value"
		marked      = "marked-in-config-value"
		storePass   = "store-pass-word"
		providerKey = "sk-provider-secret"
		extra       = "extra-secret-value"
		short       = "short7!"
	)
	env := "MY_API_KEY=" + dotenvKey + "\nPLAIN_VALUE=" + marked + "\nSHORT_TOKEN=" + short + "\nPROVIDER_VAR=" + providerKey + "\n"
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	// The agent prints secrets everywhere: in its frontmatter, body and
	// stderr; its first run fails with them on stderr.
	body := fmt.Sprintf(`cat >/dev/null
echo "stderr: $UWF_STORE %[1]s %[2]s %[3]s %[4]s %[5]s %[6]s" >&2
if [ ! -e "$OUT/failed" ]; then touch "$OUT/failed"; echo "fatal: %[1]s" >&2; exit 3; fi
if [ ! -e "$OUT/prose" ]; then touch "$OUT/prose"; echo "no frontmatter, but %[2]s"; exit 0; fi
printf -- '---\nstatus: finished\nnote: "%[1]s %[3]s"\n---\nbody %[2]s %[4]s %[5]s %[6]s\n'
`, dotenvKey, marked, storePass, providerKey, extra, short)
	out := t.TempDir()
	agentPath := script(t, t.TempDir(), "leaky.sh", body)
	cfgText := fmt.Sprintf("agents:\n  leaky:\n    command: %s\n    env: {OUT: %s}\ndefaultAgent: leaky\nproviders:\n  p: {baseURL: 'https://example.invalid/v1', apiKeyEnv: PROVIDER_VAR}\nsecrets: [PLAIN_VALUE]\n", agentPath, out)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(home, agent.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	wf := te.putWorkflow(strings.Replace(unboundedLoop, "enum: [again, finished]", "enum: [again, finished]}, note: {type: string", 1))
	var printed strings.Builder
	opts := &thread.RunOptions{Config: cfg, Store: "postgres://uwf:" + storePass + "@127.0.0.1/uwf", Secrets: []string{extra},
		Progress: func(ev thread.Event) { fmt.Fprintf(&printed, "%+v\n", ev) }}
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), opts)
	if err == nil {
		t.Fatal("the first run should fail")
	}
	fmt.Fprintln(&printed, err)
	if _, err := te.e.StepN(te.ctx, id, 0, opts); err != nil {
		t.Fatal(err)
	}
	if st, _ := te.e.Node(te.ctx, te.head(id)); st.Status() != thread.StatusDone {
		t.Fatalf("thread %s: %s, want done", id, st.Status())
	}
	secrets := []string{dotenvKey, marked, storePass, providerKey, extra}
	check := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q:\n%s", what, s, text)
			}
		}
	}
	check("the errors and events", printed.String())
	var all strings.Builder
	for o, err := range te.st.All(te.ctx) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := te.st.Get(te.ctx, o.Hash)
		if err != nil {
			t.Fatal(err)
		}
		check("object "+o.Hash.String(), string(b))
		all.Write(b)
	}
	// What was masked shows the mask; the short secret is kept.
	for _, want := range []string{`stderr: postgres://uwf:********@127.0.0.1/uwf ********`, `fatal: ********`, `no frontmatter, but ********`,
		`"note":"******** ********"`, "body ******** ******** ******** " + short} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the store lacks %q", want)
		}
	}
}

// TestSecretsMaskedAtCuts: a secret that straddles the cut where a
// command's stderr was cut to its last [agent.MaxStderr] bytes, or where
// the error of a failed run cuts stderr's last line short, leaves no part
// of it in the store or in the error.
func TestSecretsMaskedAtCuts(t *testing.T) {
	const sec = "QZJWVK-secret-XPLM"
	body := `cat >/dev/null
if [ "$MODE" = tail ]; then
  { head -c 1000 /dev/zero | tr '\0' x; printf %s "$SEC"; head -c $((` + fmt.Sprint(agent.MaxStderr) + `-5)) /dev/zero | tr '\0' y; } >&2
else
  { head -c 190 /dev/zero | tr '\0' x; printf '%s\n' "$SEC"; } >&2
fi
exit 3
`
	for _, mode := range []string{"tail", "long line"} {
		t.Run(mode, func(t *testing.T) {
			te := newTEnv(t)
			home := t.TempDir()
			agentPath := script(t, t.TempDir(), "cut.sh", body)
			cfgText := fmt.Sprintf("agents:\n  cut:\n    command: %s\n    env: {SEC: %s, MODE: %q}\ndefaultAgent: cut\n", agentPath, sec, mode)
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfgText), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(home, agent.Builtins())
			if err != nil {
				t.Fatal(err)
			}
			wf := te.putWorkflow(unboundedLoop)
			_, _, runErr := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Config: cfg, Secrets: []string{sec}})
			if runErr == nil {
				t.Fatal("the run should fail")
			}
			check := func(what, text string) {
				t.Helper()
				for _, part := range []string{sec[:4], sec[len(sec)-4:]} {
					if strings.Contains(text, part) {
						t.Errorf("%s holds %q of the secret: ...%s...", what, part, around(text, part))
					}
				}
			}
			check("the error", runErr.Error())
			var stderr string
			for o, err := range te.st.All(te.ctx) {
				if err != nil {
					t.Fatal(err)
				}
				b, err := te.st.Get(te.ctx, o.Hash)
				if err != nil {
					t.Fatal(err)
				}
				check("object "+o.Hash.String(), string(b))
				if content := strings.HasPrefix(string(b), `{"payload":"`); content && (strings.Contains(string(b), "yyyyyyyy") || strings.Contains(string(b), "xxxxxxxx")) {
					stderr = string(b)
				}
			}
			want := "[... stderr cut here: what came before was dropped, and the 5 bytes after the cut, which could hold part of a secret]"
			if mode != "tail" {
				want = "********"
			}
			if !strings.Contains(stderr, want) {
				t.Errorf("the recorded stderr lacks %q: %.300s", want, stderr)
			}
		})
	}
}

// around returns the text around the first part in s.
func around(s, part string) string {
	i := strings.Index(s, part)
	return s[max(0, i-20):min(len(s), i+len(part)+20)]
}
