package web_test

import (
	"strings"
	"testing"

	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/thread"
)

// TestThreadPageBranches checks that the timeline draws a call's and a
// join's branches side by side, each with its steps.
func TestThreadPageBranches(t *testing.T) {
	e := newEnv(t)
	data, err := examples.FS.ReadFile("parallel-review.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wf := e.putWorkflow("parallel-review.yaml", data)
	id, _, err := e.eng.Run(e.ctx, wf, "Add a --json flag", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	srv := e.server("tok")
	status, _, body := get(t, srv.URL+"/threads/"+id)
	if status != 200 {
		t.Fatalf("GET /threads/%s: %d\n%s", id, status, body)
	}
	for _, want := range []string{
		`class="entry kind-call"`, `class="entry kind-join"`, `class="branches"`,
		"<strong>security-reviewer</strong>", "<strong>style-reviewer</strong>",
		"#1 security-reviewer · synth", "join (parallel)", "call (race)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the thread page lacks %q", want)
		}
	}
	if strings.Contains(body, "/steps/0000000000000/") {
		t.Error("the page links a zero detail")
	}
}
