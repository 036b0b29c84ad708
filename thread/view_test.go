package thread_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// steps lists thread id with Engine.Steps as "role:status" and
// "mark:<kind>" (the start left out, checked to come first).
func steps(t *testing.T, te *tenv, id string) ([]string, error) {
	t.Helper()
	var out []string
	first := true
	for n, err := range te.e.Steps(te.ctx, id) {
		if err != nil {
			return out, err
		}
		if first != (n.Kind == thread.KindStart) {
			t.Errorf("Steps: a %s node at depth %d (first: %v)", n.Kind, n.Depth(), first)
		}
		first = false
		switch n.Kind {
		case thread.KindStep:
			out = append(out, n.Step.Role+":"+n.Status)
		case thread.KindMark:
			if n.Status != "" {
				t.Errorf("Steps: mark %s has status %q", n.Hash, n.Status)
			}
			out = append(out, "mark:"+n.Mark.Mark)
		}
	}
	return out, nil
}

func TestStepsAndStepView(t *testing.T) {
	te := newTEnv(t)
	id, _, err := te.e.Run(te.ctx, te.reviewLoop(), "Add a --json flag", t.TempDir(), &thread.RunOptions{Agent: "synth"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := steps(t, te, id)
	if err != nil || !slices.Equal(got, reviewLoopPath) {
		t.Errorf("Steps = %q, %v; want %q", got, err, reviewLoopPath)
	}
	for n, err := range te.e.Steps(te.ctx, id) {
		if err != nil {
			t.Fatal(err)
		}
		v, err := te.e.StepView(te.ctx, n.Hash)
		if n.Kind != thread.KindStep {
			if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "a "+n.Kind+" node, not a step") {
				t.Errorf("StepView(%s node) = %v, want ErrInvalid naming its kind", n.Kind, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("StepView(%s): %v", n.Hash, err)
		}
		if v.Hash != n.Hash || v.Step.Role != n.Step.Role || v.Step.Output != n.Step.Output {
			t.Errorf("StepView(%s) = %+v, want the step %+v", n.Hash, v, n.Step)
		}
		if st, _ := v.Output.Payload.(map[string]any)["status"].(string); st != n.Status {
			t.Errorf("StepView(%s).Output status %q, Steps said %q", n.Hash, st, n.Status)
		}
		if v.Detail == nil || v.Prompt == "" || !strings.Contains(v.Raw, "status: "+n.Status) {
			t.Errorf("StepView(%s): detail %+v, prompt %q, raw %q", n.Hash, v.Detail, v.Prompt, v.Raw)
		}
	}
	if _, err := te.e.StepView(te.ctx, cas.Sum([]byte("absent"))); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("StepView(absent) = %v, want ErrNotFound", err)
	}
	for _, err := range te.e.Steps(te.ctx, "01JGJFGS3P0000000000000099") {
		if !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Steps(no such thread) = %v, want ErrNotFound", err)
		}
	}
}

func TestStepViewTexts(t *testing.T) {
	te := newTEnv(t)
	id := te.start()
	c, err := te.e.Next(te.ctx, te.head(id))
	if err != nil {
		t.Fatal(err)
	}
	d := &thread.Detail{Prompt: te.put(cas.ContentSchema, "the prompt"), Raw: te.put(cas.ContentSchema, "third"),
		Stderr: te.put(cas.ContentSchema, "warning"), EdgePrompt: "go", ExitCode: 3, DurationMs: 7,
		Attempts: []cas.Hash{te.put(cas.ContentSchema, "first"), te.put(cas.ContentSchema, "second")}}
	s := &thread.Step{Chain: c, Role: "dev", Output: te.out, Detail: te.put(cas.DetailSchema, d.Payload()), Agent: "test", StartedAt: 1, CompletedAt: 2}
	h := te.put(cas.StepSchema, s.Payload())
	v, err := te.e.StepView(te.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if v.Prompt != "the prompt" || v.Raw != "third" || v.Stderr != "warning" || !slices.Equal(v.Attempts, []string{"first", "second"}) ||
		v.Detail.ExitCode != 3 || v.Detail.EdgePrompt != "go" || v.Output.Payload != "output" {
		t.Errorf("StepView = %+v", v)
	}
}

// TestViewErrors: a node a step names that is absent or of the wrong kind
// is an error naming it, never an empty field.
func TestViewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage returns the step to view (after storing what it needs)
		// and the node it damages or points wrongly at.
		damage func(te *tenv, c thread.Chain) (step, at cas.Hash, del bool)
		want   error
		what   string
	}{
		{"output absent", func(te *tenv, c thread.Chain) (cas.Hash, cas.Hash, bool) {
			out := te.put(cas.ContentSchema, "doomed output")
			return te.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "r", Output: out, Detail: te.det, Agent: "a"}).Payload()), out, true
		}, cas.ErrNotFound, "output"},
		{"detail absent", func(te *tenv, c thread.Chain) (cas.Hash, cas.Hash, bool) {
			d := &thread.Detail{Prompt: te.put(cas.ContentSchema, "p"), Raw: te.put(cas.ContentSchema, "r"), EdgePrompt: "doomed"}
			dh := te.put(cas.DetailSchema, d.Payload())
			return te.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "r", Output: te.out, Detail: dh, Agent: "a"}).Payload()), dh, true
		}, cas.ErrNotFound, "detail"},
		{"raw absent", func(te *tenv, c thread.Chain) (cas.Hash, cas.Hash, bool) {
			raw := te.put(cas.ContentSchema, "doomed raw")
			d := &thread.Detail{Prompt: te.put(cas.ContentSchema, "p"), Raw: raw}
			return te.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "r", Output: te.out, Detail: te.put(cas.DetailSchema, d.Payload()), Agent: "a"}).Payload()), raw, true
		}, cas.ErrNotFound, "raw output"},
		{"attempt absent", func(te *tenv, c thread.Chain) (cas.Hash, cas.Hash, bool) {
			a := te.put(cas.ContentSchema, "doomed attempt")
			d := &thread.Detail{Prompt: te.put(cas.ContentSchema, "p"), Raw: te.put(cas.ContentSchema, "r"), Attempts: []cas.Hash{a}}
			return te.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "r", Output: te.out, Detail: te.put(cas.DetailSchema, d.Payload()), Agent: "a"}).Payload()), a, true
		}, cas.ErrNotFound, "failed attempt 1"},
		{"raw not content", func(te *tenv, c thread.Chain) (cas.Hash, cas.Hash, bool) {
			d := &thread.Detail{Prompt: te.put(cas.ContentSchema, "p"), Raw: te.wf}
			return te.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "r", Output: te.out, Detail: te.put(cas.DetailSchema, d.Payload()), Agent: "a"}).Payload()), te.wf, false
		}, cas.ErrInvalid, "not a content node"},
		{"detail not a detail", func(te *tenv, c thread.Chain) (cas.Hash, cas.Hash, bool) {
			return te.put(cas.StepSchema, (&thread.Step{Chain: c, Role: "r", Output: te.out, Detail: te.wf, Agent: "a"}).Payload()), te.wf, false
		}, cas.ErrInvalid, "not a detail node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTEnv(t)
			id := te.start()
			c, err := te.e.Next(te.ctx, te.head(id))
			if err != nil {
				t.Fatal(err)
			}
			step, at, del := tc.damage(te, c)
			if err := te.e.Commit(te.ctx, id, step, "step r"); err != nil {
				t.Fatal(err)
			}
			if del {
				if ok, err := te.st.DeleteIfOlder(te.ctx, at, te.clock.Now().Add(time.Hour)); !ok || err != nil {
					t.Fatalf("delete %s: %v, %v", at, ok, err)
				}
			}
			_, err = te.e.StepView(te.ctx, step)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), at.String()) || !strings.Contains(err.Error(), tc.what) {
				t.Errorf("StepView = %v; want %v naming %s (%s)", err, tc.want, at, tc.what)
			}
			if tc.name == "raw not content" {
				// thread read renders the raw output's body: the same error.
				if _, err := te.e.Read(te.ctx, id, thread.ReadOptions{}); !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), at.String()) {
					t.Errorf("Read = %v, want ErrInvalid naming %s", err, at)
				}
			}
			if tc.what == "output" {
				// thread steps reads the output too: the error reaches
				// the caller rather than an empty status.
				if _, err := steps(t, te, id); !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), at.String()) {
					t.Errorf("Steps = %v, want ErrNotFound naming %s", err, at)
				}
			}
		})
	}
}
