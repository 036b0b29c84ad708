package thread_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/config"
	"github.com/uncaged/uwf/registry"
	"github.com/uncaged/uwf/thread"
)

// benchEnv is a memory store with an engine, for the composition
// benchmarks.
func benchEnv(b *testing.B) (context.Context, *cas.Repo, *thread.Engine) {
	b.Helper()
	mem := cas.NewMemStore(nil)
	repo, err := cas.Open(b.Context(), mem, mem.Refs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return b.Context(), repo, thread.New(repo, nil)
}

func benchPut(b *testing.B, e *thread.Engine, text string) cas.Hash {
	b.Helper()
	w, err := registry.Parse("w.yaml", []byte(text))
	if err != nil {
		b.Fatal(err)
	}
	res, err := e.Registry().Put(b.Context(), w)
	if err != nil {
		b.Fatal(err)
	}
	return res.Hash
}

// BenchmarkParallelStage runs a parallel stage of 1 and of 8 branches
// whose agent sleeps 1 s, side by side, and reports each stage's wall time
// and ratio = wall(8) / wall(1); the target is ratio <= 1.5.
func BenchmarkParallelStage(b *testing.B) {
	ctx, _, e := benchEnv(b)
	log := b.TempDir()
	path := benchScript(b, fakeAgentBody)
	cfg := parseConfigB(b, fmt.Sprintf("agents:\n  fake:\n    command: %s\n    env: {LOG: %s}\ndefaultAgent: fake\n", path, log))
	opts := &thread.RunOptions{Config: cfg}
	wfs := map[int]cas.Hash{}
	for _, n := range []int{1, 8} {
		members := make([]string, n)
		for i := range members {
			members[i] = "second" + strconv.Itoa(i)
		}
		text := stageWorkflow("parallel", members...)
		if n == 1 {
			// A stage runs at least two roles: one branch is a child
			// workflow of one role.
			benchPut(b, e, "name: one\nroles:\n  second0: "+okRole+"\ngraph:\n  $START: { new: { role: second0, prompt: Go. } }\n  second0: { ok: { role: $END } }\n")
			text = "name: one-branch\nroles:\n  stage: { workflow: one, frontmatter: { properties: { status: { const: ok } } } }\ngraph:\n  $START: { new: { role: stage, prompt: Go. } }\n  stage: { ok: { role: $END } }\n"
		}
		wfs[n] = benchPut(b, e, text)
	}
	var took [2]time.Duration
	for b.Loop() {
		for i, n := range []int{1, 8} {
			t0 := time.Now()
			if _, _, err := e.Run(ctx, wfs[n], "task", b.TempDir(), opts); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(t0)
		}
	}
	one, eight := took[0].Seconds()/float64(b.N), took[1].Seconds()/float64(b.N)
	b.ReportMetric(one, "s/stage-1")
	b.ReportMetric(eight, "s/stage-8")
	b.ReportMetric(eight/one, "ratio")
}

// BenchmarkParentStep times a parent's step (a call of a one-role child
// workflow, the child's step and the join) after 10 and after 1,000
// earlier calls, side by side, and reports each and ratio = cost(1000) /
// cost(10); the target is a flat cost (ratio near 1).
func BenchmarkParentStep(b *testing.B) {
	ctx, _, e := benchEnv(b)
	benchPut(b, e, "name: inner\nroles:\n  a: "+okRole+"\ngraph:\n  $START: { new: { role: a, prompt: Go. } }\n  a: { ok: { role: $END } }\n")
	wf := benchPut(b, e, "name: outer\nmaxSteps: 100000\nroles:\n  work: { workflow: inner, frontmatter: { properties: { status: { enum: [ok, stop] } } } }\n"+
		"graph:\n  $START: { new: { role: work, prompt: Again. } }\n  work: { ok: { role: work, prompt: Again. }, stop: { role: $END } }\n")
	opts := &thread.RunOptions{Agent: "synth"}
	ids := map[int]string{}
	for _, n := range []int{10, 1000} {
		id, _, err := e.Start(ctx, wf, "task", b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.StepN(ctx, id, n, opts); err != nil {
			b.Fatal(err)
		}
		ids[n] = id
	}
	var took [2]time.Duration
	for b.Loop() {
		for i, n := range []int{10, 1000} {
			t0 := time.Now()
			if _, err := e.Step(ctx, ids[n], opts); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(t0)
		}
	}
	few, many := float64(took[0].Microseconds())/float64(b.N), float64(took[1].Microseconds())/float64(b.N)
	b.ReportMetric(few, "us/step-10")
	b.ReportMetric(many, "us/step-1000")
	b.ReportMetric(many/few, "ratio")
}

func benchScript(b *testing.B, body string) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "fake.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		b.Fatal(err)
	}
	return p
}

func parseConfigB(b *testing.B, text string) *config.Config {
	b.Helper()
	c, err := config.Parse("config.yaml", []byte(text), agent.Builtins())
	if err != nil {
		b.Fatal(err)
	}
	return c
}
