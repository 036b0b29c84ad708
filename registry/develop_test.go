package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/uncaged/uwf/moderator"
)

// TestDevelopRouting routes the develop example's parsed graph through the
// moderator, edge by edge, checking targets and rendered prompts.
func TestDevelopRouting(t *testing.T) {
	w := mustParse(t, "develop.yaml", example(t, "develop.yaml"))
	g := w.Graph
	tests := []struct {
		name   string
		role   string
		output map[string]any
		next   string
		prompt string
	}{
		{"start", moderator.Start, map[string]any{"status": "new"}, "planner", "Plan this task in phases."},
		{"planner planned", "planner", map[string]any{
			"status": "planned",
			"phases": []any{
				map[string]any{"title": "Parse", "doneWhen": "tests pass"},
				map[string]any{"title": "Store", "doneWhen": "put works"},
			},
		}, "coder", "Implement the first phase of this plan, then stop:\n" +
			"- doneWhen: tests pass\n  title: Parse\n- doneWhen: put works\n  title: Store"},
		{"coder continue", "coder", map[string]any{"status": "continue", "summary": "parser done", "next": "Store"},
			"coder", "Done so far: parser done\nNow implement the next phase: Store"},
		{"coder done", "coder", map[string]any{"status": "done", "summary": "all phases"},
			"reviewer", "Review this change: all phases"},
		{"reviewer approved", "reviewer", map[string]any{"status": "approved", "comments": "LGTM"},
			"tester", "Test the reviewed change. Review notes: LGTM"},
		{"reviewer rejected", "reviewer", map[string]any{"status": "rejected", "comments": "add tests"},
			"coder", "Address this review, then answer done: add tests"},
		{"tester passed", "tester", map[string]any{"status": "passed", "report": "42 passed"},
			"committer", "Commit the change. Test report: 42 passed"},
		{"tester failed", "tester", map[string]any{"status": "failed", "failures": []any{
			map[string]any{"test": "TestPut", "error": "hash differs"},
		}}, "coder", "Fix these failing tests, then answer done:\n- error: hash differs\n  test: TestPut"},
		{"committer committed", "committer", map[string]any{"status": "committed", "commit": "abc123", "message": "registry: add"},
			moderator.End, "Committed abc123: registry: add"},
		{"suspend", "coder", map[string]any{"status": moderator.Suspend, "reason": "which DB?"}, moderator.Suspend, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := moderator.Route(g, tc.role, tc.output)
			if err != nil {
				t.Fatalf("Route(%s, %v): %v", tc.role, tc.output, err)
			}
			if d.Role != tc.next || d.Prompt != tc.prompt {
				t.Errorf("Route(%s, %v) = %s %q, want %s %q", tc.role, tc.output["status"], d.Role, d.Prompt, tc.next, tc.prompt)
			}
		})
	}
}

func TestDevelopRoutingErrors(t *testing.T) {
	g := mustParse(t, "develop.yaml", example(t, "develop.yaml")).Graph
	tests := []struct {
		name   string
		role   string
		output any
		is     error
		msg    string
	}{
		{"unknown status", "reviewer", map[string]any{"status": "maybe", "comments": "?"}, moderator.ErrUnknownStatus,
			`moderator: role "reviewer" has no edge for status "maybe" (known: approved, rejected)`},
		{"unknown tester status", "tester", map[string]any{"status": "flaky"}, moderator.ErrUnknownStatus,
			`moderator: role "tester" has no edge for status "flaky" (known: failed, passed)`},
		{"unknown role", "deployer", map[string]any{"status": "done"}, moderator.ErrUnknownRole, `role "deployer"`},
		{"missing field", "coder", map[string]any{"status": "continue", "summary": "x"}, moderator.ErrMissingField, `"next"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := moderator.Route(g, tc.role, tc.output)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Route = %v, want %v containing %s", err, tc.is, tc.msg)
			}
		})
	}
}

func TestReviewLoopStart(t *testing.T) {
	g := mustParse(t, "review-loop.yaml", example(t, "review-loop.yaml")).Graph
	d, err := moderator.RouteStart(g)
	if err != nil || d.Role != "planner" || d.Prompt != "Plan this task." {
		t.Errorf("RouteStart = %+v, %v", d, err)
	}
	d, err = moderator.Route(g, "planner", map[string]any{"status": "done", "steps": []any{"a", "b"}})
	if err != nil || d.Role != "developer" || d.Prompt != "Implement these steps:\n- a\n- b" {
		t.Errorf("Route(planner) = %+v, %v", d, err)
	}
}
