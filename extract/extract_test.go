package extract_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/extract"
)

// update rewrites the golden files under testdata/golden.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// reviewerYAML is the reviewer's schema of the review-loop workflow (SPEC §6).
const reviewerYAML = `
type: object
properties:
  status: { enum: [approved, rejected] }
  comments: { type: string }
required: [status, comments]
`

// closedYAML is a planner with more to violate.
const closedYAML = `
type: object
properties:
  status: { const: done }
  steps: { type: array, items: { type: string }, minItems: 1 }
  effort: { type: integer, minimum: 1, maximum: 5 }
required: [status, steps, effort]
additionalProperties: false
`

// oneOfYAML is a reviewer whose fields depend on the status.
const oneOfYAML = `
oneOf:
  - type: object
    properties: { status: { const: approved }, comments: { type: string } }
    required: [status]
    additionalProperties: false
  - type: object
    properties:
      status: { const: rejected }
      comments: { type: string, minLength: 1 }
      severity: { type: integer, minimum: 1, maximum: 3 }
    required: [status, comments, severity]
    additionalProperties: false
`

func compile(t testing.TB, y string) *cas.Schema {
	t.Helper()
	doc, err := cas.ParseYAML([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cas.CompileSchema(doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeLLM is a JSONExtractor with a canned answer that records its calls.
type fakeLLM struct {
	answer string
	err    error
	calls  atomic.Int32
	schema any
	raw    string
}

func (f *fakeLLM) ExtractJSON(ctx context.Context, schema any, raw string) (string, error) {
	f.calls.Add(1)
	f.schema, f.raw = schema, raw
	if f.err != nil {
		return "", f.err
	}
	return f.answer, ctx.Err()
}

// asError returns err as an *extract.Error wrapping want.
func asError(t *testing.T, err, want error) *extract.Error {
	t.Helper()
	var e *extract.Error
	if !errors.As(err, &e) || !errors.Is(err, want) || !errors.Is(err, extract.ErrExtract) {
		t.Fatalf("error = %v (%T), want an *extract.Error wrapping %v", err, err, want)
	}
	return e
}

// messages lists the violations as "path: message".
func messages(e *extract.Error) []string {
	var out []string
	for _, v := range e.Violations {
		out = append(out, v.Path+": "+v.Message)
	}
	return out
}

func TestExtractFrontmatter(t *testing.T) {
	t.Parallel()
	reviewer := compile(t, reviewerYAML)
	raw := "\uFEFF\r\n---\r\nstatus: rejected\r\ncomments: |\r\n  Two problems.\r\n  See below.\r\n---\r\n# Review\r\n\r\nDetails.\r\n"
	out, err := extract.Extract(t.Context(), raw, reviewer, nil)
	if err != nil {
		t.Fatalf("Extract() error = %v", err)
	}
	want := map[string]any{"status": "rejected", "comments": "Two problems.\nSee below.\n"}
	if !equalJSON(out.Value, want) || out.Body != "# Review\n\nDetails.\n" || out.Via != extract.ViaFrontmatter || out.Suspend {
		t.Errorf("Extract() = %+v, want value %v and the body", out, want)
	}

	out, err = extract.Extract(t.Context(), "---\n---\nJust a body.", nil, nil)
	if err != nil || !equalJSON(out.Value, map[string]any{}) || out.Body != "Just a body." {
		t.Errorf("Extract(empty frontmatter, nil schema) = %+v, %v; want an empty mapping", out, err)
	}
	out, err = extract.Extract(t.Context(), "---\n# only a comment\n---\n", nil, nil)
	if err != nil || !equalJSON(out.Value, map[string]any{}) {
		t.Errorf("Extract(comment-only frontmatter) = %+v, %v; want an empty mapping", out, err)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := cas.Canonical(a)
	y, err2 := cas.Canonical(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func TestExtractSuspend(t *testing.T) {
	t.Parallel()
	reviewer := compile(t, reviewerYAML)
	llm := &fakeLLM{answer: `{"status":"approved","comments":"x"}`}

	out, err := extract.Extract(t.Context(), "---\nstatus: $SUSPEND\nreason: Which database should I use?\n---\nI need a decision.\n", reviewer, llm)
	if err != nil {
		t.Fatalf("Extract($SUSPEND) error = %v", err)
	}
	if !out.Suspend || out.Reason != "Which database should I use?" || out.Value != nil || out.Body != "I need a decision.\n" || out.Via != extract.ViaFrontmatter {
		t.Errorf("Extract($SUSPEND) = %+v", out)
	}

	// Without a reason (none, null, blank) the answer is accepted.
	for _, raw := range []string{
		"---\nstatus: $SUSPEND\n---\nstuck\n",
		"---\nstatus: $SUSPEND\nreason:\n---\nstuck\n",
		"---\nstatus: $SUSPEND\nreason: '  '\n---\nstuck\n",
	} {
		out, err := extract.Extract(t.Context(), raw, reviewer, llm)
		if err != nil || !out.Suspend || out.Reason != extract.NoReason || out.Value != nil || out.Body != "stuck\n" {
			t.Errorf("Extract(%q) = %+v, %v; want a $SUSPEND with reason %q", raw, out, err, extract.NoReason)
		}
	}
	// A reason that is not text is a final error.
	for _, raw := range []string{
		"---\nstatus: $SUSPEND\nreason: [a, b]\n---\n",
		"---\nstatus: $SUSPEND\nreason: 3\n---\n",
	} {
		_, err := extract.Extract(t.Context(), raw, reviewer, llm)
		e := asError(t, err, extract.ErrInvalidOutput)
		if e.Reason != "a $SUSPEND answer's reason must be text" || len(e.Violations) != 1 || e.Violations[0].Path != "/reason" {
			t.Errorf("Extract(%q) error = %+v", raw, e)
		}
	}
	if n := llm.calls.Load(); n != 0 {
		t.Errorf("the LLM was asked %d times about a $SUSPEND, want never", n)
	}
}

func TestExtractErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		schema     string
		raw        string
		want       error
		wantReason string
		wantLine   int
		wantViol   []string // every violation, as "path: message"
	}{
		{name: "no frontmatter", schema: reviewerYAML, raw: "I approve this change.", want: extract.ErrNoFrontmatter,
			wantReason: "the output does not start with a frontmatter block (a line ---)"},
		{name: "bad YAML, with its line in the raw output", schema: reviewerYAML, raw: "\n\n---\nstatus: approved\ncomments: a: b\n---\n",
			want: extract.ErrBadFrontmatter, wantLine: 5},
		{name: "a list, not a mapping", schema: reviewerYAML, raw: "---\n- a\n- b\n---\n", want: extract.ErrBadFrontmatter,
			wantReason: "the frontmatter is a list, not a mapping of fields"},
		{name: "a scalar, not a mapping", schema: reviewerYAML, raw: "---\napproved\n---\n", want: extract.ErrBadFrontmatter,
			wantReason: "the frontmatter is a string, not a mapping of fields"},
		{name: "unknown status names the allowed ones", schema: reviewerYAML, raw: "---\nstatus: maybe\ncomments: hmm\n---\n",
			want: extract.ErrInvalidOutput, wantReason: "the frontmatter does not match the role schema",
			wantViol: []string{`/status: unknown status "maybe": the allowed statuses are "approved", "rejected"`}},
		{name: "every violation is named", schema: closedYAML, raw: "---\nstatus: done\nsteps: []\neffort: 9\nextra: 1\n---\n",
			want: extract.ErrInvalidOutput,
			wantViol: []string{
				": additional properties 'extra' not allowed",
				"/effort: maximum: got 9, want 5",
				"/steps: minItems: got 0, want 1",
			}},
		{name: "unknown status and a missing field", schema: closedYAML, raw: "---\nstatus: finished\nsteps: [a]\n---\n",
			want: extract.ErrInvalidOutput,
			wantViol: []string{
				`/status: unknown status "finished": the allowed statuses are "done"`,
				": missing property 'effort'",
			}},
		{name: "a status that is not a string", schema: reviewerYAML, raw: "---\nstatus: true\ncomments: ok\n---\n",
			want: extract.ErrInvalidOutput, wantViol: []string{`/status: value must be one of 'approved', 'rejected'`}},
		{name: "oneOf: only the variant of the status speaks", schema: oneOfYAML, raw: "---\nstatus: rejected\ncomments: ''\n---\n",
			want: extract.ErrInvalidOutput,
			wantViol: []string{
				": missing property 'severity'",
				"/comments: minLength: got 0, want 1",
			}},
		{name: "oneOf: unknown status", schema: oneOfYAML, raw: "---\nstatus: meh\n---\n",
			want: extract.ErrInvalidOutput, wantViol: []string{`/status: unknown status "meh": the allowed statuses are "approved", "rejected"`}},
		{name: "empty frontmatter against a schema", schema: reviewerYAML, raw: "---\n---\n",
			want: extract.ErrInvalidOutput, wantViol: []string{": missing properties 'status', 'comments'"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := extract.Extract(t.Context(), tc.raw, compile(t, tc.schema), nil)
			e := asError(t, err, tc.want)
			if tc.wantReason != "" && e.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q", e.Reason, tc.wantReason)
			}
			if tc.wantLine != 0 && e.Line != tc.wantLine {
				t.Errorf("Line = %d, want %d (%v)", e.Line, tc.wantLine, err)
			}
			if tc.wantViol != nil {
				got := messages(e)
				if strings.Join(got, "\n") != strings.Join(tc.wantViol, "\n") {
					t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wantViol, "\n"))
				}
				for _, v := range e.Violations {
					if !strings.Contains(err.Error(), v.Message) {
						t.Errorf("Error() %q does not name %q", err, v.Message)
					}
				}
			}
		})
	}
}

func TestExtractLLMFallback(t *testing.T) {
	t.Parallel()
	reviewer := compile(t, reviewerYAML)
	tests := []struct {
		name      string
		raw       string
		llm       *fakeLLM
		wantValue map[string]any
		wantBody  string
		wantErr   error  // the fast path's kind
		wantFall  string // substring of the fallback's error
	}{
		{name: "no frontmatter, valid JSON", raw: "Looks good to me, approved. Nice tests.",
			llm:       &fakeLLM{answer: `{"status": "approved", "comments": "Nice tests."}`},
			wantValue: map[string]any{"status": "approved", "comments": "Nice tests."}, wantBody: "Looks good to me, approved. Nice tests."},
		{name: "invalid frontmatter, valid JSON in a code fence", raw: "---\nstatus: Approved!\n---\nBody text.\n",
			llm:       &fakeLLM{answer: "```json\n{\"status\": \"approved\", \"comments\": \"\"}\n```"},
			wantValue: map[string]any{"status": "approved", "comments": ""}, wantBody: "Body text.\n"},
		{name: "the LLM's JSON is invalid too", raw: "---\nstatus: maybe\n---\n",
			llm:     &fakeLLM{answer: `{"status": "perhaps"}`},
			wantErr: extract.ErrInvalidOutput, wantFall: `its answer does not match the role schema: at /status: unknown status "perhaps"`},
		{name: "the LLM's answer is not JSON", raw: "no frontmatter",
			llm:     &fakeLLM{answer: "Sure! Here it is: status approved"},
			wantErr: extract.ErrNoFrontmatter, wantFall: "its answer is not JSON"},
		{name: "the LLM's answer is not an object", raw: "no frontmatter",
			llm:     &fakeLLM{answer: `["approved"]`},
			wantErr: extract.ErrNoFrontmatter, wantFall: "its answer is a list, not an object"},
		{name: "the LLM fails", raw: "---\nstatus: [\n---\n",
			llm:     &fakeLLM{err: errors.New("agent llm: HTTP 500 Internal Server Error")},
			wantErr: extract.ErrBadFrontmatter, wantFall: "HTTP 500"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := extract.Extract(t.Context(), tc.raw, reviewer, tc.llm)
			if tc.llm.calls.Load() != 1 || tc.llm.raw != tc.raw || !equalJSON(tc.llm.schema, reviewer.Doc()) {
				t.Errorf("the LLM got %d calls, raw %q, schema %v; want one call with the raw output and the schema", tc.llm.calls.Load(), tc.llm.raw, tc.llm.schema)
			}
			if tc.wantErr != nil {
				e := asError(t, err, tc.wantErr)
				if e.Fallback == nil || !strings.Contains(e.Fallback.Error(), tc.wantFall) || !strings.Contains(err.Error(), "the LLM fallback failed too: ") {
					t.Errorf("Fallback = %v, want it to contain %q", e.Fallback, tc.wantFall)
				}
				return
			}
			if err != nil {
				t.Fatalf("Extract() error = %v", err)
			}
			if out.Via != extract.ViaLLM || !equalJSON(out.Value, tc.wantValue) || out.Body != tc.wantBody {
				t.Errorf("Extract() = %+v, want value %v, body %q via llm", out, tc.wantValue, tc.wantBody)
			}
		})
	}

	t.Run("a valid frontmatter never asks the LLM", func(t *testing.T) {
		llm := &fakeLLM{answer: "{}"}
		if _, err := extract.Extract(t.Context(), "---\nstatus: approved\ncomments: ok\n---\n", reviewer, llm); err != nil || llm.calls.Load() != 0 {
			t.Errorf("Extract() error = %v, LLM calls = %d; want no call", err, llm.calls.Load())
		}
	})

	t.Run("interrupted during the fallback", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := extract.Extract(ctx, "no frontmatter", reviewer, &fakeLLM{err: context.Canceled})
		if !errors.Is(err, context.Canceled) || errors.Is(err, extract.ErrExtract) {
			t.Errorf("Extract() error = %v, want context.Canceled and no extraction error", err)
		}
	})
}

func TestCorrectionPromptGolden(t *testing.T) {
	t.Parallel()
	reviewer, closed := compile(t, reviewerYAML), compile(t, closedYAML)
	var b strings.Builder
	for _, tc := range []struct {
		name   string
		raw    string
		schema *cas.Schema
	}{
		{"no frontmatter", "I approve.", reviewer},
		{"no closing fence", "---\nstatus: approved\n", reviewer},
		{"bad YAML", "---\nstatus: approved\ncomments: a: b\n---\n", reviewer},
		{"violations", "---\nstatus: finished\nsteps: []\neffort: 0\nnotes: x\n---\n", closed},
		{"suspend with a reason that is not text", "---\nstatus: $SUSPEND\nreason: [a]\n---\n", reviewer},
	} {
		_, err := extract.Extract(t.Context(), tc.raw, tc.schema, nil)
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		b.WriteString("== " + tc.name + "\n" + extract.CorrectionPrompt(err) + "\n")
	}
	b.WriteString("== another error\n" + extract.CorrectionPrompt(errors.New("agent claude: exit status 1")))
	golden(t, "correction.txt", b.String())
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
