package moderator_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/moderator"
)

// develop is the graph of the develop workflow: plan, code in phases,
// review, test, commit.
func develop() moderator.Graph {
	return moderator.Graph{
		moderator.Start: {"new": {Role: "planner", Prompt: "Plan this task."}},
		"planner":       {"done": {Role: "coder", Prompt: "Implement phase 1 of: {{ phases }}"}},
		"coder": {
			"phase_done": {Role: "coder", Prompt: "Next phase after: {{ summary }}"},
			"all_done":   {Role: "reviewer", Prompt: "Review: {{ summary }}"},
		},
		"reviewer": {
			"approved": {Role: "tester", Prompt: "Test it."},
			"rejected": {Role: "coder", Prompt: "Fix: {{ comments }}"},
		},
		"tester": {
			"passed": {Role: "committer", Prompt: "Commit it."},
			"failed": {Role: "coder", Prompt: "Tests failed: {{ failures }}"},
		},
		"committer": {"done": {Role: moderator.End, Prompt: "Committed {{ commit }}."}},
	}
}

func TestRoute(t *testing.T) {
	g := reviewLoop()
	tests := []struct {
		name    string
		role    string
		output  any
		want    moderator.Decision
		wantErr error
		msg     string // substring of the error message
	}{
		{
			name:   "start",
			role:   moderator.Start,
			output: map[string]any{"status": "new"},
			want:   moderator.Decision{From: "$START", Status: "new", Role: "planner", Prompt: "Plan this task."},
		},
		{
			name:   "planner done renders steps",
			role:   "planner",
			output: map[string]any{"status": "done", "steps": []any{"a", "b"}},
			want:   moderator.Decision{From: "planner", Status: "done", Role: "developer", Prompt: "Implement these steps:\n- a\n- b"},
		},
		{
			name:   "developer done",
			role:   "developer",
			output: map[string]any{"status": "done", "summary": "did it"},
			want:   moderator.Decision{From: "developer", Status: "done", Role: "reviewer", Prompt: "Review this change: did it"},
		},
		{
			name:   "reviewer rejected loops back",
			role:   "reviewer",
			output: map[string]any{"status": "rejected", "comments": "no tests"},
			want:   moderator.Decision{From: "reviewer", Status: "rejected", Role: "developer", Prompt: "Fix what the review found: no tests"},
		},
		{
			name:   "reviewer approved ends",
			role:   "reviewer",
			output: map[string]any{"status": "approved", "comments": "ok", "extra": 1.0},
			want:   moderator.Decision{From: "reviewer", Status: "approved", Role: moderator.End, Prompt: "Approved: ok"},
		},
		{
			name:   "suspend needs no edge",
			role:   "reviewer",
			output: map[string]any{"status": moderator.Suspend, "question": "which branch?"},
			want:   moderator.Decision{From: "reviewer", Status: "$SUSPEND", Role: moderator.Suspend},
		},
		{
			name:    "unknown role",
			role:    "tester",
			output:  map[string]any{"status": "done"},
			wantErr: moderator.ErrUnknownRole,
			msg:     `moderator: role "tester" (status "done") is not in the graph (known: $START, developer, planner, reviewer)`,
		},
		{
			name:    "end is not a source",
			role:    moderator.End,
			output:  map[string]any{"status": "done"},
			wantErr: moderator.ErrUnknownRole,
			msg:     `role "$END"`,
		},
		{
			name:    "unknown status names it and lists known",
			role:    "reviewer",
			output:  map[string]any{"status": "maybe", "comments": "?"},
			wantErr: moderator.ErrUnknownStatus,
			msg:     `moderator: role "reviewer" has no edge for status "maybe" (known: approved, rejected)`,
		},
		{
			name:    "empty status",
			role:    "reviewer",
			output:  map[string]any{"status": ""},
			wantErr: moderator.ErrUnknownStatus,
			msg:     `no edge for status ""`,
		},
		{
			name:    "bool status",
			role:    "reviewer",
			output:  map[string]any{"status": true},
			wantErr: moderator.ErrNoStatus,
			msg:     `moderator: output of role "reviewer" has status true (a bool), not a string (quote it in YAML)`,
		},
		{
			name:    "number status",
			role:    "reviewer",
			output:  map[string]any{"status": 1.1},
			wantErr: moderator.ErrNoStatus,
			msg:     `has status 1.1 (a number), not a string`,
		},
		{
			name:    "null status",
			role:    "reviewer",
			output:  map[string]any{"status": nil},
			wantErr: moderator.ErrNoStatus,
			msg:     `has a null status, not a string`,
		},
		{
			name:    "array status",
			role:    "reviewer",
			output:  map[string]any{"status": []any{"approved"}},
			wantErr: moderator.ErrNoStatus,
			msg:     `has a status that is an array, not a string`,
		},
		{
			name:    "missing status",
			role:    "reviewer",
			output:  map[string]any{"comments": "ok"},
			wantErr: moderator.ErrNoStatus,
			msg:     `moderator: output of role "reviewer" has no "status" field`,
		},
		{
			name:    "output not an object",
			role:    "reviewer",
			output:  "approved",
			wantErr: moderator.ErrNoStatus,
			msg:     `output of role "reviewer" is a string, not an object with a status`,
		},
		{
			name:    "output null",
			role:    "reviewer",
			output:  nil,
			wantErr: moderator.ErrNoStatus,
			msg:     `output of role "reviewer" is null`,
		},
		{
			name:   "typed output map",
			role:   "reviewer",
			output: map[string]string{"status": "approved", "comments": "ok"},
			want:   moderator.Decision{From: "reviewer", Status: "approved", Role: moderator.End, Prompt: "Approved: ok"},
		},
		{
			name:    "missing template field",
			role:    "reviewer",
			output:  map[string]any{"status": "approved"},
			wantErr: moderator.ErrMissingField,
			msg:     `moderator: edge reviewer/approved: template field "comments" missing from output`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := moderator.Route(g, tc.role, tc.output)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Route(%q, %v) error = %v, want %v", tc.role, tc.output, err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("Route(%q, %v) error = %q, want it to contain %q", tc.role, tc.output, err, tc.msg)
				}
				if got != (moderator.Decision{}) {
					t.Errorf("Route(%q, %v) = %+v with an error, want the zero Decision", tc.role, tc.output, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Route(%q, %v) error = %v", tc.role, tc.output, err)
			}
			if got != tc.want {
				t.Errorf("Route(%q, %v) = %+v, want %+v", tc.role, tc.output, got, tc.want)
			}
		})
	}
}

func TestRouteErrorFields(t *testing.T) {
	g := reviewLoop()
	tests := []struct {
		name   string
		g      moderator.Graph
		role   string
		output any
		want   moderator.Error
	}{
		{
			name:   "unknown role",
			g:      g,
			role:   "ghost",
			output: map[string]any{"status": "done"},
			want: moderator.Error{Kind: moderator.KindUnknownRole, Role: "ghost", Status: "done",
				Known: []string{"$START", "developer", "planner", "reviewer"}},
		},
		{
			name:   "unknown status",
			g:      g,
			role:   "reviewer",
			output: map[string]any{"status": "maybe"},
			want: moderator.Error{Kind: moderator.KindUnknownStatus, Role: "reviewer", Status: "maybe",
				Known: []string{"approved", "rejected"}},
		},
		{
			name:   "missing field",
			g:      g,
			role:   "developer",
			output: map[string]any{"status": "done"},
			want: moderator.Error{Kind: moderator.KindMissingField, Role: "developer", Status: "done",
				Field: "summary", Offset: 20},
		},
		{
			name:   "bad template in an edge",
			g:      moderator.Graph{"a": {"done": {Role: "b", Prompt: "oops {{ x"}}},
			role:   "a",
			output: map[string]any{"status": "done"},
			want: moderator.Error{Kind: moderator.KindBadTemplate, Role: "a", Status: "done", Offset: 5,
				Detail: `unclosed "{{"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := moderator.Route(tc.g, tc.role, tc.output)
			var e *moderator.Error
			if !errors.As(err, &e) {
				t.Fatalf("Route(%q) error = %v, want a *moderator.Error", tc.role, err)
			}
			if e.Kind != tc.want.Kind || e.Role != tc.want.Role || e.Status != tc.want.Status ||
				e.Field != tc.want.Field || !slices.Equal(e.Known, tc.want.Known) || e.Offset != tc.want.Offset ||
				(tc.want.Detail != "" && e.Detail != tc.want.Detail) {
				t.Errorf("Route(%q) error = %#v, want %#v", tc.role, *e, tc.want)
			}
		})
	}
}

func TestRouteStart(t *testing.T) {
	tests := []struct {
		name    string
		g       moderator.Graph
		want    moderator.Decision
		wantErr error
	}{
		{
			name: "review loop",
			g:    reviewLoop(),
			want: moderator.Decision{From: "$START", Status: "new", Role: "planner", Prompt: "Plan this task."},
		},
		{
			name: "start template may name the status",
			g:    moderator.Graph{moderator.Start: {"new": {Role: "a", Prompt: "status {{status}}"}}},
			want: moderator.Decision{From: "$START", Status: "new", Role: "a", Prompt: "status new"},
		},
		{name: "nil graph", g: nil, wantErr: moderator.ErrUnknownRole},
		{name: "no start", g: moderator.Graph{"a": {"done": {Role: moderator.End}}}, wantErr: moderator.ErrUnknownRole},
		{name: "no new edge", g: moderator.Graph{moderator.Start: {"go": {Role: "a"}}}, wantErr: moderator.ErrUnknownStatus},
		{
			name:    "start template naming other fields",
			g:       moderator.Graph{moderator.Start: {"new": {Role: "a", Prompt: "{{ task }}"}}},
			wantErr: moderator.ErrMissingField,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := moderator.RouteStart(tc.g)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("RouteStart() error = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("RouteStart() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRouteDevelop(t *testing.T) {
	g := develop()
	tests := []struct {
		role     string
		output   map[string]any
		wantRole string
		wantErr  error
		msg      string
	}{
		{role: moderator.Start, output: map[string]any{"status": "new"}, wantRole: "planner"},
		{role: "planner", output: map[string]any{"status": "done", "phases": []any{"p1"}}, wantRole: "coder"},
		{role: "coder", output: map[string]any{"status": "phase_done", "summary": "p1"}, wantRole: "coder"},
		{role: "coder", output: map[string]any{"status": "all_done", "summary": "all"}, wantRole: "reviewer"},
		{role: "reviewer", output: map[string]any{"status": "approved"}, wantRole: "tester"},
		{role: "reviewer", output: map[string]any{"status": "rejected", "comments": "x"}, wantRole: "coder"},
		{role: "tester", output: map[string]any{"status": "passed"}, wantRole: "committer"},
		{role: "tester", output: map[string]any{"status": "failed", "failures": []any{"TestA"}}, wantRole: "coder"},
		{role: "committer", output: map[string]any{"status": "done", "commit": "abc123"}, wantRole: moderator.End},
		{
			role:    "tester",
			output:  map[string]any{"status": "flaky"},
			wantErr: moderator.ErrUnknownStatus,
			msg:     `moderator: role "tester" has no edge for status "flaky" (known: failed, passed)`,
		},
		{
			role:    "coder",
			output:  map[string]any{"status": "done"},
			wantErr: moderator.ErrUnknownStatus,
			msg:     `role "coder" has no edge for status "done" (known: all_done, phase_done)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.role+"/"+tc.output["status"].(string), func(t *testing.T) {
			got, err := moderator.Route(g, tc.role, tc.output)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Route(%q, %v) error = %v, want %v containing %q", tc.role, tc.output, err, tc.wantErr, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Route(%q, %v) error = %v", tc.role, tc.output, err)
			}
			if got.Role != tc.wantRole || got.From != tc.role || got.Status != tc.output["status"] {
				t.Errorf("Route(%q, %v) = %+v, want role %q", tc.role, tc.output, got, tc.wantRole)
			}
		})
	}
}

func TestGraphHelpers(t *testing.T) {
	g := develop()
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"Roles", g.Roles(), []string{"$START", "coder", "committer", "planner", "reviewer", "tester"}},
		{"Statuses coder", g.Statuses("coder"), []string{"all_done", "phase_done"}},
		{"Statuses tester", g.Statuses("tester"), []string{"failed", "passed"}},
		{"Statuses unknown", g.Statuses("ghost"), nil},
		{"Targets", g.Targets(), []string{"$END", "coder", "committer", "planner", "reviewer", "tester"}},
		{"nil Roles", moderator.Graph(nil).Roles(), nil},
		{"nil Targets", moderator.Graph(nil).Targets(), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
			}
		})
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		kind     moderator.ErrorKind
		sentinel error
		name     string
	}{
		{moderator.KindUnknownRole, moderator.ErrUnknownRole, "unknown role"},
		{moderator.KindUnknownStatus, moderator.ErrUnknownStatus, "unknown status"},
		{moderator.KindNoStatus, moderator.ErrNoStatus, "no status"},
		{moderator.KindMissingField, moderator.ErrMissingField, "missing field"},
		{moderator.KindBadTemplate, moderator.ErrBadTemplate, "bad template"},
		{moderator.ErrorKind(0), nil, "ErrorKind(0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &moderator.Error{Kind: tc.kind}
			if got := e.Unwrap(); got != tc.sentinel {
				t.Errorf("(&Error{Kind: %v}).Unwrap() = %v, want %v", tc.kind, got, tc.sentinel)
			}
			if got := tc.kind.String(); got != tc.name {
				t.Errorf("ErrorKind(%d).String() = %q, want %q", int(tc.kind), got, tc.name)
			}
			if msg := e.Error(); !strings.HasPrefix(msg, "moderator: ") {
				t.Errorf("Error() = %q, want the moderator: prefix", msg)
			}
		})
	}
}
