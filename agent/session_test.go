package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/config"
)

const recordedAnswer = "---\nstatus: done\nsummary: added the flag\n---\nAdded --json."

// TestCommandOutputFormats plays back each tool's recorded output (its
// documented shape) through a Command reading that tool's format: success
// gives the answer as Raw and the session; the tool's error and a rate
// limit fail the run with a reason that says so.
func TestCommandOutputFormats(t *testing.T) {
	tests := []struct {
		name, output   string
		stdout, stderr string // files under testdata/output; "" for none
		exit           int
		raw            string // want Raw on success
		session        *agent.Session
		reason         string // want the RunError's Reason to contain this; "" for success
		limited        bool
	}{
		{name: "claude-code ok", output: config.OutputClaudeCode, stdout: "claude-code-ok.stdout", raw: recordedAnswer,
			session: &agent.Session{Tool: "claude-code", ID: "4f9c2d1e-8a7b-4c3d-9e0f-1a2b3c4d5e6f", Model: "claude-sonnet-4-5",
				InputTokens: 4012, OutputTokens: 56, CacheReadTokens: 3000, CacheWriteTokens: 1000, CostUSD: 0.0123, Turns: 2}},
		{name: "claude-code error", output: config.OutputClaudeCode, stdout: "claude-code-error.stdout", exit: 1,
			reason: "exit status 1: claude-code reported: Tool permission request failed: Edit was denied"},
		{name: "claude-code error exit 0", output: config.OutputClaudeCode, stdout: "claude-code-error.stdout",
			reason: "claude-code reported an error: Tool permission request failed: Edit was denied"},
		{name: "claude-code rate limit", output: config.OutputClaudeCode, stdout: "claude-code-ratelimit.stdout", exit: 1,
			reason: "rate limited (exit status 1: claude-code reported: API Error: 429", limited: true},
		{name: "codex ok", output: config.OutputCodex, stdout: "codex-ok.stdout", raw: recordedAnswer,
			session: &agent.Session{Tool: "codex", ID: "0199a213-81c0-7800-8aa1-bbab2a035a53",
				InputTokens: 24763, OutputTokens: 122, CacheReadTokens: 24448, Turns: 1}},
		{name: "codex error", output: config.OutputCodex, stdout: "codex-error.stdout", exit: 1,
			reason: "codex reported: unexpected status 401 Unauthorized"},
		{name: "codex rate limit", output: config.OutputCodex, stdout: "codex-ratelimit.stdout", exit: 1,
			reason: "429 Too Many Requests", limited: true},
		{name: "gemini ok", output: config.OutputGemini, stdout: "gemini-ok.stdout", raw: recordedAnswer,
			session: &agent.Session{Tool: "gemini", ID: "c0a8f2b4-5d6e-4f70-8a9b-0c1d2e3f4a5b", Model: "gemini-2.5-pro",
				InputTokens: 25439, OutputTokens: 25, CacheReadTokens: 21263, ReasoningTokens: 154}},
		{name: "gemini error", output: config.OutputGemini, stderr: "gemini-error.stderr", exit: 53,
			reason: "exit status 53: gemini reported: Reached max session turns"},
		{name: "gemini rate limit", output: config.OutputGemini, stderr: "gemini-ratelimit.stderr", exit: 1,
			reason: "exhausted your capacity", limited: true},
		{name: "cursor ok", output: config.OutputCursor, stdout: "cursor-ok.stdout", raw: recordedAnswer,
			session: &agent.Session{Tool: "cursor", ID: "b7e1c2d3-4f5a-6b7c-8d9e-0f1a2b3c4d5e"}},
		{name: "cursor error", output: config.OutputCursor, stderr: "cursor-error.stderr", exit: 1,
			reason: "exit status 1"},
		{name: "cursor rate limit", output: config.OutputCursor, stderr: "cursor-ratelimit.stderr", exit: 1,
			reason: "rate limited (exit status 1)", limited: true},
		{name: "opencode ok", output: config.OutputOpenCode, stdout: "opencode-ok.stdout", raw: recordedAnswer,
			session: &agent.Session{Tool: "opencode", ID: "ses_5d2a9c1e4ffeHq3kT0aZ1bC2d",
				InputTokens: 18600, OutputTokens: 65, CacheReadTokens: 17000, CacheWriteTokens: 100, ReasoningTokens: 10, CostUSD: 0.006, Turns: 2}},
		{name: "opencode error", output: config.OutputOpenCode, stdout: "opencode-error.stdout", exit: 1,
			reason: "opencode reported: No API key found for provider anthropic"},
		{name: "opencode rate limit", output: config.OutputOpenCode, stdout: "opencode-ratelimit.stdout", exit: 1,
			reason: "Rate limit exceeded", limited: true},
		{name: "aider ok", output: config.OutputAider, stdout: "aider-ok.stdout", raw: recordedAnswer + "\n",
			session: &agent.Session{Tool: "aider", Model: "anthropic/claude-sonnet-4-5",
				InputTokens: 2300, OutputTokens: 150, CacheReadTokens: 1100, CostUSD: 0.0123, Turns: 1}},
		{name: "aider error", output: config.OutputAider, stderr: "aider-error.stderr", exit: 1,
			reason: "exit status 1"},
		{name: "aider rate limit", output: config.OutputAider, stderr: "aider-ratelimit.stderr", exit: 1,
			reason: "rate limited", limited: true},
		{name: "not the format", output: config.OutputClaudeCode, stdout: "codex-ok.stdout",
			reason: "cannot read its output as claude-code output"},
		{name: "codex without an answer", output: config.OutputCodex, stdout: "opencode-ok.stdout",
			reason: "codex gave no answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := func(name string) string {
				if name == "" {
					return filepath.Join(t.TempDir(), "empty")
				}
				p, err := filepath.Abs(filepath.Join("testdata", "output", name))
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			out, errFile := file(tc.stdout), "-"
			if tc.stdout == "" {
				if err := os.WriteFile(out, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.stderr != "" {
				errFile = file(tc.stderr)
			}
			c := helper(t, agent.CommandSpec{Output: tc.output}, "print", out, errFile, strconv.Itoa(tc.exit))
			res, err := c.Run(t.Context(), request())
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.Raw != tc.raw {
					t.Errorf("Raw = %q, want %q", res.Raw, tc.raw)
				}
				if !reflect.DeepEqual(res.Session, tc.session) {
					t.Errorf("Session = %+v\nwant      %+v", res.Session, tc.session)
				}
				return
			}
			var re *agent.RunError
			if !errors.As(err, &re) {
				t.Fatalf("Run = %v, %v; want a *RunError", res, err)
			}
			if !strings.Contains(re.Reason, tc.reason) {
				t.Errorf("Reason = %q, want it to contain %q", re.Reason, tc.reason)
			}
			if got := errors.Is(err, agent.ErrRateLimited); got != tc.limited {
				t.Errorf("errors.Is(err, ErrRateLimited) = %v, want %v (%v)", got, tc.limited, err)
			}
			want := tc.exit
			if want == 0 {
				want = agent.ExitFailure
			}
			if re.Result.ExitCode != want {
				t.Errorf("ExitCode = %d, want %d", re.Result.ExitCode, want)
			}
		})
	}
}

// testStart is when the tests began: prompt files newer than it are ours.
var testStart = time.Now()

// TestCommandPromptModes checks each way of passing the prompt: on stdin,
// as the last argument (after a flag or not), in a file only the user can
// read that is gone after the run; a prompt too long for an argument fails
// before anything runs.
func TestCommandPromptModes(t *testing.T) {
	req := request()

	c := helper(t, agent.CommandSpec{Prompt: config.PromptArg, PromptFlag: "-z"}, "echo", "a")
	res, err := c.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Raw, `"stdin":""`) || !strings.Contains(res.Raw, `"args":["a","-z","Implement the plan.\n"]`) {
		t.Errorf("arg mode: helper saw %s", res.Raw)
	}

	c = helper(t, agent.CommandSpec{Prompt: config.PromptStdin}, "echo")
	if res, err = c.Run(t.Context(), req); err != nil || !strings.Contains(res.Raw, `"stdin":"Implement the plan.\n","args":[]`) {
		t.Errorf("stdin mode: %v, helper saw %v", err, res)
	}

	c = helper(t, agent.CommandSpec{Prompt: config.PromptFile, PromptFlag: "--message-file"}, "catlast", "--yes")
	if res, err = c.Run(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if want := "-rw------- --yes --message-file\nImplement the plan.\n"; res.Raw != want {
		t.Errorf("file mode: helper printed %q, want %q", res.Raw, want)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "uwf-prompt-*.md"))
	for _, f := range left {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(testStart) {
			t.Errorf("prompt file %s left behind", f)
		}
	}

	long := *req
	long.Prompt = strings.Repeat("x", agent.MaxPromptArg+1)
	c = helper(t, agent.CommandSpec{Prompt: config.PromptArg}, "echo")
	_, err = c.Run(t.Context(), &long)
	var re *agent.RunError
	if !errors.As(err, &re) || re.Result.ExitCode != agent.ExitCannotRun || !strings.Contains(re.Reason, "too long to pass as an argument") {
		t.Errorf("a prompt over MaxPromptArg: %v", err)
	}
}
