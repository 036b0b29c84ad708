package thread_test

import (
	"testing"

	"github.com/uncaged/uwf/thread"
)

// TestSummary: a session and a sum of sessions are worded alike, and what
// is zero is left out.
func TestSummary(t *testing.T) {
	sessions := []struct {
		s    thread.Session
		want string
	}{
		{thread.Session{Tool: "codex"}, "codex"},
		{thread.Session{Tool: "claude-code", ID: "s-1", Model: "m", InputTokens: 1234, CacheReadTokens: 1000, OutputTokens: 56, Turns: 3, CostUSD: 0.0123},
			"claude-code session s-1, model m, 1234 in (1000 cached) / 56 out tokens, 3 turns, $0.0123"},
		{thread.Session{Tool: "gemini", OutputTokens: 20, ReasoningTokens: 154}, "gemini, 0 in / 20 out tokens (154 reasoning)"},
		{thread.Session{Tool: "x", ReasoningTokens: 9, CacheReadTokens: 9}, "x"},
	}
	for _, tc := range sessions {
		if got := tc.s.Summary(); got != tc.want {
			t.Errorf("Session.Summary() = %q, want %q", got, tc.want)
		}
	}
	sums := []struct {
		u    thread.Usage
		want string
	}{
		{thread.Usage{}, "0 sessions"},
		{thread.Usage{Sessions: 1, Turns: 2}, "1 session, 2 turns"},
		{thread.Usage{Sessions: 3, InputTokens: 1234, CacheReadTokens: 1000, OutputTokens: 56, ReasoningTokens: 7, Turns: 7, CostNanoUSD: 12_300_000},
			"3 sessions, 1234 in (1000 cached) / 56 out tokens (7 reasoning), 7 turns, $0.0123"},
	}
	for _, tc := range sums {
		if got := tc.u.Summary(); got != tc.want {
			t.Errorf("Usage.Summary() = %q, want %q", got, tc.want)
		}
	}
}
