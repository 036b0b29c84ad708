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
	// Each branch links to its thread (read by its id after the join),
	// and a branch's page links back to the parent and names its call.
	calls, err := e.eng.Calls(e.ctx, id)
	if err != nil || len(calls) == 0 {
		t.Fatalf("Calls: %v, %v", calls, err)
	}
	for _, c := range calls {
		for _, b := range c.Branches {
			if !strings.Contains(body, `<a class="mono branch-link" href="/threads/`+b.Thread+`">`) {
				t.Errorf("the thread page does not link branch %s's thread %s", b.Key, b.Thread)
			}
			status, _, page := get(t, srv.URL+"/threads/"+b.Thread)
			if status != 200 {
				t.Fatalf("GET the branch thread %s: %d\n%s", b.Thread, status, page)
			}
			for _, want := range []string{"<dt>Branch of</dt>", `<a class="mono parent-link" href="/threads/` + id + `">`, "branch <strong>" + b.Key + "</strong> of call", c.Call.String()} {
				if !strings.Contains(page, want) {
					t.Errorf("the branch page of %s lacks %q", b.Key, want)
				}
			}
		}
	}
}
