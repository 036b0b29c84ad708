package thread_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// everyStatus pins its roles' statuses in the ways package roleschema
// reads (a oneOf of consts in status, variants cut by the status beside
// them, a "not" in status), and loops each role so that synth, which walks
// looping statuses first, outputs every status the validator allowed.
const everyStatus = `name: every-status
roles:
  sorter:
    frontmatter:
      type: object
      required: [status]
      properties:
        status: { oneOf: [{ const: left }, { const: right }] }
  checker:
    frontmatter:
      type: object
      required: [status]
      properties:
        status: { enum: [ok, again] }
        note: { type: string }
      oneOf:
        - { properties: { status: { const: ok } }, required: [note] }
        - { properties: { status: { const: again } } }
        - { properties: { status: { const: never } } }
  refiner:
    frontmatter:
      type: object
      required: [status]
      properties:
        status: { enum: [a, b, c], not: { const: c } }
graph:
  $START: { new: { role: sorter, prompt: Sort. } }
  sorter:
    left: { role: sorter, prompt: Again. }
    right: { role: checker, prompt: Check. }
  checker:
    again: { role: checker, prompt: Again. }
    ok: { role: refiner, prompt: "Noted: {{note}}" }
  refiner:
    a: { role: refiner, prompt: Again. }
    b: { role: $END, prompt: Done. }
`

// TestSynthRunsEveryValidatedStatus runs, with synth, a workflow whose
// role schemas the validator reads with package roleschema, and checks
// that the run outputs every status the validator allowed, and only those.
func TestSynthRunsEveryValidatedStatus(t *testing.T) {
	te := newTEnv(t)
	wf, err := registry.Parse("every-status.yaml", []byte(everyStatus))
	if err != nil {
		t.Fatalf("the workflow does not validate: %v", err)
	}
	id, _, err := te.e.Run(te.ctx, te.putWorkflow(everyStatus), "task", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{}
	for _, rs := range te.roles(id) {
		if role, status, ok := strings.Cut(rs, ":"); ok && role != "mark" {
			if !slices.Contains(seen[role], status) {
				seen[role] = append(seen[role], status)
			}
		}
	}
	for _, role := range wf.RoleNames() {
		allowed := wf.Statuses(role)
		if len(allowed) < 2 {
			t.Errorf("role %s: the validator allowed %q; the test wants at least two statuses per role", role, allowed)
		}
		got := slices.Sorted(slices.Values(seen[role]))
		if !slices.Equal(got, allowed) {
			t.Errorf("role %s: the run output statuses %q; the validator allowed %q", role, got, allowed)
		}
	}
	want := []string{"sorter:left", "sorter:right", "checker:again", "checker:ok", "refiner:a", "refiner:b", "mark:done"}
	if got := te.roles(id); !slices.Equal(got, want) {
		t.Errorf("roles = %q, want %q", got, want)
	}
}
