package web_test

import (
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// TestDetailSession checks that the detail view reads a detail-run
// node with the same decoder as a detail node and shows the session,
// escaped.
func TestDetailSession(t *testing.T) {
	e := newEnv(t)
	srv := e.server("tok")
	p := e.put(cas.ContentSchema, "prompt")
	raw := e.put(cas.ContentSchema, "---\nstatus: done\n---\nbody")
	d := &thread.Detail{Prompt: p, Raw: raw, EdgePrompt: "go", Attempts: []cas.Hash{}, DurationMs: 7,
		Session: &thread.Session{Tool: "claude-code", ID: "s-1", Model: "<script>window.pwned=1</script>", InputTokens: 12, OutputTokens: 3, CostUSD: 0.25}}
	n := d.Node()
	h := e.put(n.Type, n.Payload)
	for _, path := range []string{"/steps/" + h.String() + "/detail", "/steps/" + h.String() + "/detail?frag=1"} {
		status, _, body := get(t, srv.URL+path)
		if status != 200 {
			t.Fatalf("GET %s: %d\n%s", path, status, body)
		}
		if !strings.Contains(body, "Session: claude-code session s-1, model &lt;script&gt;window.pwned=1&lt;/script&gt;, 12 in / 3 out tokens, $0.25") {
			t.Errorf("GET %s lacks the escaped session:\n%s", path, body)
		}
		if strings.Contains(body, "<script>window.pwned") {
			t.Errorf("GET %s: the model name is not escaped", path)
		}
	}
}
