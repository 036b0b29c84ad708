package thread_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// testSessionDetail runs the review loop with an agent whose output is
// read as claude-code's JSON: every step's detail is a detail-run node
// holding the session (which moves a version-1 store to version 2), it
// decodes as a detail with DecodeDetail, and the replay agent replays the
// thread from those details.
func testSessionDetail(t *testing.T, te *tenv) {
	if v, err := te.repo.FormatVersion(te.ctx); err != nil || v != 1 {
		t.Fatalf("a new store is at version %d (%v), want 1", v, err)
	}
	wf := te.reviewLoop()
	dir := t.TempDir()
	agentPath := script(t, dir, "claude.sh", `cat > /dev/null
case "$UWF_ROLE" in
planner) ans='---\nstatus: done\nsteps: [a]\n---\n' ;;
developer) ans='---\nstatus: done\nsummary: did a\n---\n' ;;
reviewer) ans='---\nstatus: approved\ncomments: ok\n---\n' ;;
esac
printf '{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"%s","session_id":"s-%s","total_cost_usd":0.25,"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5},"modelUsage":{"m1":{"costUSD":0.25}}}\n' "$ans" "$UWF_ROLE"
`)
	cfg := parseConfig(t, fmt.Sprintf("agents:\n  claude:\n    command: %s\n    output: claude-code\ndefaultAgent: claude\n", agentPath))
	id, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := te.repo.FormatVersion(te.ctx); err != nil || v != 2 {
		t.Errorf("after steps with sessions the store is at version %d (%v), want 2", v, err)
	}
	for n, err := range te.e.NewestFirst(te.ctx, te.head(id)) {
		if err != nil {
			t.Fatal(err)
		}
		if n.Step == nil {
			continue
		}
		v, err := te.e.StepView(te.ctx, n.Hash)
		if err != nil {
			t.Fatal(err)
		}
		want := &thread.Session{Tool: "claude-code", ID: "s-" + n.Step.Role, Model: "m1", InputTokens: 100, OutputTokens: 5,
			CacheReadTokens: 90, CostUSD: 0.25, Turns: 3}
		if !reflect.DeepEqual(v.Detail.Session, want) {
			t.Errorf("step %s: session %+v, want %+v", n.Step.Role, v.Detail.Session, want)
		}
		dn, err := te.repo.Get(te.ctx, n.Step.Detail)
		if err != nil || dn.Type != cas.DetailRunSchema {
			t.Errorf("step %s: detail type %s (%v), want detail-run", n.Step.Role, dn.Type, err)
		}
	}
	// The replay agent reads the recorded raw outputs from those details.
	rid, _, err := te.e.Run(te.ctx, wf, "task", t.TempDir(), &thread.RunOptions{Config: cfg, Agent: "replay:" + id})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := te.roles(rid), te.roles(id); !slices.Equal(got, want) {
		t.Errorf("replay roles = %q, want %q", got, want)
	}
	if r, err := te.e.Read(te.ctx, id, thread.ReadOptions{}); err != nil || !strings.Contains(r.Text, "did a") {
		t.Errorf("Read: %v\n%v", err, r)
	}
}

// TestDetailSessionNode pins the encoding of a detail-run node and
// checks that Payload and DecodeDetail round-trip it, leaving out the
// fields not reported; a detail without a session stays a detail node.
func TestDetailSessionNode(t *testing.T) {
	p, _ := cas.ParseHash("54YMEB1H6FVZG")
	d := &thread.Detail{Prompt: p, Raw: p, EdgePrompt: "do it", Attempts: []cas.Hash{}, ExitCode: 0, DurationMs: 42,
		Session: &thread.Session{Tool: "codex", ID: "t-1", InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}}
	n := d.Node()
	data, err := n.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"payload":{"attempts":[],"durationMs":42,"edgePrompt":"do it","exitCode":0,"prompt":"54YMEB1H6FVZG","raw":"54YMEB1H6FVZG","session":{"costUSD":0.5,"id":"t-1","inputTokens":10,"outputTokens":2,"tool":"codex"}},"type":"F2RQ12Y9KG94G"}`
	if string(data) != want {
		t.Errorf("detail-run node =\n%s\nwant\n%s", data, want)
	}
	got, err := thread.DecodeDetail(n)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Errorf("DecodeDetail = %+v, %v; want %+v", got, err, d)
	}
	d.Session = nil
	if n := d.Node(); n.Type != cas.DetailSchema {
		t.Errorf("a detail without a session is typed %s, want detail", n.Type)
	}
}

// TestDecodeDetailSessionErrors checks that a malformed session is an
// invalid detail.
func TestDecodeDetailSessionErrors(t *testing.T) {
	base := func(session any) cas.Node {
		p := map[string]any{"prompt": "54YMEB1H6FVZG", "raw": "54YMEB1H6FVZG", "edgePrompt": "", "attempts": []any{},
			"exitCode": float64(0), "durationMs": float64(0)}
		if session != nil {
			p["session"] = session
		}
		return cas.Node{Type: cas.DetailRunSchema, Payload: p}
	}
	tests := []struct {
		name string
		n    cas.Node
	}{
		{"no session", base(nil)},
		{"session not an object", base("codex")},
		{"negative tokens", base(map[string]any{"tool": "x", "inputTokens": float64(-1)})},
		{"cost a string", base(map[string]any{"tool": "x", "costUSD": "1"})},
		{"tool a number", base(map[string]any{"tool": float64(1)})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := thread.DecodeDetail(tc.n); !errors.Is(err, cas.ErrInvalid) {
				t.Errorf("DecodeDetail = %v, want ErrInvalid", err)
			}
		})
	}
}

// FuzzDecodeDetail decodes arbitrary detail and detail-run nodes: what
// decodes re-encodes to a payload that decodes the same.
func FuzzDecodeDetail(f *testing.F) {
	f.Add([]byte(`{"payload":{"attempts":[],"durationMs":42,"edgePrompt":"do it","exitCode":0,"prompt":"54YMEB1H6FVZG","raw":"54YMEB1H6FVZG","session":{"costUSD":0.5,"id":"t-1","inputTokens":10,"outputTokens":2,"tool":"codex"}},"type":"F2RQ12Y9KG94G"}`))
	f.Add([]byte(`{"payload":{"attempts":["54YMEB1H6FVZG"],"durationMs":1,"edgePrompt":"","exitCode":124,"prompt":"54YMEB1H6FVZG","raw":"54YMEB1H6FVZG","stderr":"54YMEB1H6FVZG"},"type":"DKGXHKXNQVG36"}`))
	f.Add([]byte(`{"payload":{"session":{"tool":"x","turns":1e300}},"type":"F2RQ12Y9KG94G"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cn, err := cas.DecodeNode(data)
		if err != nil {
			return
		}
		d, err := thread.DecodeDetail(cn)
		if err != nil {
			return
		}
		d2, err := thread.DecodeDetail(d.Node())
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("re-decoding %+v: %+v, %v", d, d2, err)
		}
	})
}
