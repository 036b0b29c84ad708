package moderator_test

import (
	"fmt"

	"github.com/uncaged/uwf/moderator"
)

// reviewLoop is the graph of the review-loop workflow of SPEC §6.
func reviewLoop() moderator.Graph {
	return moderator.Graph{
		moderator.Start: {"new": {Role: "planner", Prompt: "Plan this task."}},
		"planner":       {"done": {Role: "developer", Prompt: "Implement these steps: {{ steps }}"}},
		"developer":     {"done": {Role: "reviewer", Prompt: "Review this change: {{ summary }}"}},
		"reviewer": {
			"approved": {Role: moderator.End, Prompt: "Approved: {{ comments }}"},
			"rejected": {Role: "developer", Prompt: "Fix what the review found: {{ comments }}"},
		},
	}
}

// ExampleRoute routes one pass around the review loop of SPEC §6, with the
// outputs an extractor would have decoded from each role's frontmatter.
func ExampleRoute() {
	g := reviewLoop()
	show := func(d moderator.Decision, err error) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%s/%s -> %s: %s\n", d.From, d.Status, d.Role, d.Prompt)
	}

	show(moderator.RouteStart(g))
	show(moderator.Route(g, "planner", map[string]any{
		"status": "done",
		"steps":  []any{"Parse the config", "Add a --dry-run flag"},
	}))
	show(moderator.Route(g, "developer", map[string]any{"status": "done", "summary": "Added the flag."}))
	show(moderator.Route(g, "reviewer", map[string]any{"status": "rejected", "comments": "No tests."}))
	show(moderator.Route(g, "reviewer", map[string]any{"status": "approved", "comments": "LGTM"}))
	show(moderator.Route(g, "reviewer", map[string]any{"status": "maybe", "comments": "Hmm."}))
	// Output:
	// $START/new -> planner: Plan this task.
	// planner/done -> developer: Implement these steps:
	// - Parse the config
	// - Add a --dry-run flag
	// developer/done -> reviewer: Review this change: Added the flag.
	// reviewer/rejected -> developer: Fix what the review found: No tests.
	// reviewer/approved -> $END: Approved: LGTM
	// error: moderator: role "reviewer" has no edge for status "maybe" (known: approved, rejected)
}

// ExampleRender shows how arrays and objects are rendered.
func ExampleRender() {
	out, err := moderator.Render("Plan: {{plan}}\nFirst: {{ plan.steps.0 }}", map[string]any{
		"plan": map[string]any{
			"owner": "ann",
			"steps": []any{"a", "b"},
			"risks": []any{map[string]any{"what": "x", "level": 2.0}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out)
	// Output:
	// Plan:
	// owner: ann
	// risks:
	//   - level: 2
	//     what: x
	// steps:
	//   - a
	//   - b
	// First: a
}

// ExampleFields lists the fields a template needs from the output.
func ExampleFields() {
	fields, err := moderator.Fields("Fix {{ comments }} in {{files.0}}; see {{ comments }}.")
	fmt.Println(fields, err)
	// Output:
	// [comments files.0] <nil>
}
