package agent_test

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/config"
)

// developerSchema is the developer's output schema of the review-loop
// workflow (SPEC §6), as plain JSON values.
var developerSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"status":  map[string]any{"const": "done"},
		"summary": map[string]any{"type": "string", "description": "What you changed, in one line."},
	},
	"required": []any{"status", "summary"},
}

// ExampleAssemble lays out the prompt of the developer's step.
func ExampleAssemble() {
	fmt.Print(agent.Assemble(agent.PromptParts{
		Workflow:   "review-loop",
		Role:       "developer",
		Goal:       "You are a developer. Implement the plan.",
		Schema:     developerSchema,
		EdgePrompt: "Implement these steps:\n- parse the input\n- write the output",
		Thread:     "### step 1: planner (done)",
	}))
	// Output:
	// # Role: developer (workflow review-loop)
	//
	// You are the developer role of a uwf workflow. Read the sections below, do the task, and answer in the output format.
	//
	// ## Goal
	//
	// You are a developer. Implement the plan.
	//
	// ## Output format
	//
	// Start your answer with a frontmatter block: a line `---`, the fields below in YAML, and a line `---`. Then write anything else (your reasoning, notes for the next role) in markdown. The answer must begin with the `---` line itself, not with a code fence.
	//
	// Fields:
	// - `status` (required, the constant `done`)
	// - `summary` (required, a string): What you changed, in one line.
	//
	// Example:
	//
	// ```markdown
	// ---
	// status: done
	// summary: <summary>
	// ---
	// Your notes, in markdown.
	// ```
	//
	// If you cannot go on without a person (a question only they can answer, access you lack), answer with only this block instead; the thread then waits for a human:
	//
	// ```markdown
	// ---
	// status: $SUSPEND
	// reason: <what you need from a human>
	// ---
	// ```
	//
	// ## Task
	//
	// Implement these steps:
	// - parse the input
	// - write the output
	//
	// ## The thread so far
	//
	// ### step 1: planner (done)
}

// ExampleSynth makes up the reviewer's outputs of two successive runs: the
// statuses are walked in turn, so the review loop goes round.
func ExampleSynth() {
	reviewer := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status":   map[string]any{"enum": []any{"approved", "rejected"}},
			"comments": map[string]any{"type": "string"},
		},
		"required": []any{"status", "comments"},
	}
	s := agent.NewSynth(0)
	for runs := range 2 {
		res, err := s.Run(context.Background(), &agent.Request{
			Thread: "01JCQ5S7Q7T7Y3V0Z3K5W8M9AB", Role: "reviewer", Schema: reviewer, RoleRuns: runs, StepIndex: 2 + 2*runs,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(res.Raw)
	}
	// Output:
	// ---
	// status: approved
	// comments: synth comments 1 for reviewer, review the error paths
	// ---
	// # synth: reviewer, run 1
	//
	// Made up by the synth agent (seed 0) for step 3 of thread 01JCQ5S7Q7T7Y3V0Z3K5W8M9AB, status approved.
	// ---
	// status: rejected
	// comments: synth comments 2 for reviewer, measure the docs
	// ---
	// # synth: reviewer, run 2
	//
	// Made up by the synth agent (seed 0) for step 5 of thread 01JCQ5S7Q7T7Y3V0Z3K5W8M9AB, status rejected.
}

// ExampleReplay replays a source thread whose developer step needed a
// retry: the first attempt returns the output that failed extraction.
func ExampleReplay() {
	r := agent.NewReplay("01JCQ5S7Q7T7Y3V0Z3K5W8M9AB", []agent.Recorded{
		{Role: "planner", Raw: "---\nstatus: done\nsteps: [a]\n---\n"},
		{Role: "developer", Raw: "---\nstatus: done\nsummary: ok\n---\n", Attempts: []string{"I did it!"}},
	})
	for attempt := range 2 {
		res, _ := r.Run(context.Background(), &agent.Request{Role: "developer", StepIndex: 1, Attempt: attempt})
		fmt.Printf("attempt %d: %q\n", attempt, res.Raw)
	}
	_, err := r.Run(context.Background(), &agent.Request{Role: "reviewer", StepIndex: 1})
	fmt.Println(err)
	// Output:
	// attempt 0: "I did it!"
	// attempt 1: "---\nstatus: done\nsummary: ok\n---\n"
	// agent replay:01JCQ5S7Q7T7Y3V0Z3K5W8M9AB: replay: step 2 of thread 01JCQ5S7Q7T7Y3V0Z3K5W8M9AB was role developer, this is role reviewer (routing diverged)
}

// ExampleResolve picks and builds the agent of a role: config.yaml names
// synth, a built-in agent, for the reviewer of develop.
func ExampleResolve() {
	cfg, err := config.Parse("config.yaml", []byte("agentOverrides:\n  develop: {reviewer: synth}\n"), agent.Builtins())
	if err != nil {
		fmt.Println(err)
		return
	}
	name, _, err := agent.Resolve(cfg, "develop", "reviewer", "")
	fmt.Println(name, err)
	a, err := agent.New(context.Background(), name, config.Agent{}, &agent.Options{Seed: 1})
	fmt.Println(a.Name(), err)
	_, _, err = agent.Resolve(cfg, "develop", "coder", "")
	fmt.Println(err)
	// Output:
	// synth <nil>
	// synth <nil>
	// no agent configured for role coder of workflow develop: pass --agent, or set defaultAgent or agentOverrides.develop.coder in config.yaml (configured: none; built-in: human, llm, replay:<thread>, synth)
}
