package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/thread"
)

// TestLiveLineBranches: the live line shows every running role at once,
// the thread's and each running branch's by key, and drops a branch when
// it moves on, and what does not fit the terminal as "+N more".
func TestLiveLineBranches(t *testing.T) {
	p := &progressPrinter{w: &strings.Builder{}, errw: &strings.Builder{}}
	p.event(thread.Event{Type: thread.EventRunning, Thread: "B1", Branch: "security", Depth: 1, Role: "security", Agent: "fake"})
	p.event(thread.Event{Type: thread.EventRunning, Thread: "B2", Branch: "style", Depth: 1, Role: "style", Agent: "fake"})
	p.event(thread.Event{Type: thread.EventRunning, Thread: "B3", Branch: "style/inner", Depth: 2, Role: "lint", Agent: "fake"})
	now := time.Now().Add(1500 * time.Millisecond)
	line := p.liveLine(now, 0)
	for _, want := range []string{"[security] 1 security (fake) 1.5s", "[style] 1 style (fake) 1.5s", "[style/inner] 2 lint (fake) 1.5s"} {
		if !strings.Contains(line, want) {
			t.Errorf("live line %q lacks %q", line, want)
		}
	}
	if narrow := p.liveLine(now, 50); !strings.Contains(narrow, "[security]") || !strings.HasSuffix(narrow, " · +2 more") {
		t.Errorf("live line at 50 columns = %q", narrow)
	}
	// The style branch steps: it and its own branches leave the line.
	p.event(thread.Event{Type: thread.EventStep, Thread: "B2", Branch: "style", Depth: 1, Role: "style", Agent: "fake", Status: "ok"})
	if line := p.liveLine(now, 0); !strings.Contains(line, "[security]") || strings.Contains(line, "style") {
		t.Errorf("after style's step the live line is %q", line)
	}
	// The thread's own event ends every branch's entry.
	p.event(thread.Event{Type: thread.EventStep, Thread: "P", Depth: 2, Role: "review", Agent: "parallel", Status: "ok"})
	if len(p.running) != 0 {
		t.Errorf("after the join, running = %v", p.running)
	}
}

// TestThreadWatchBranches: `uwf thread watch` of a thread in a parallel
// stage prints the call, each branch's steps under its key as they land
// (from the process that runs them), and the join.
func TestThreadWatchBranches(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\ncat >/dev/null\nsleep 0.5\nprintf -- '---\\nstatus: ok\\n---\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(dir, "fan.yaml")
	if err := os.WriteFile(wf, []byte(`name: fan
roles:
  both: { parallel: [left, right] }
  left: { frontmatter: { properties: { status: { const: ok } }, required: [status] } }
  right: { frontmatter: { properties: { status: { const: ok } }, required: [status] } }
graph:
  $START: { new: { role: both, prompt: Go. } }
  both: { ok: { role: $END } }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	uwfOut(t, home, nil, "workflow", "put", wf)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("agents:\n  sh: {command: "+agent+"}\ndefaultAgent: sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(uwfOut(t, home, nil, "thread", "start", "fan", "-p", "task"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	watch := exec.CommandContext(ctx, os.Args[0], "thread", "watch", id)
	watch.Env = append(os.Environ(), "UWF_TEST_MAIN=1", "UWF_HOME="+home, "UWF_STORE=", "UWF_DURABILITY=", "UWF_LOG_LEVEL=")
	var out, stderr strings.Builder
	watch.Stdout, watch.Stderr = &out, &stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	step := uwfOut(t, home, nil, "thread", "step", id, "-n", "0")
	if err := watch.Wait(); err != nil {
		t.Fatalf("uwf thread watch: %v\n%s", err, stderr.String())
	}
	got := out.String()
	for _, want := range []string{"1 both: call (parallel) -> ", "  [left] 1 left (sh) ok -> ", "  [right] 1 right (sh) ok -> ", "  [left] 2 done: ", "  [right] 2 done: ", "2 both (parallel) ok -> ", "3 done: "} {
		if !strings.Contains(got, want) {
			t.Errorf("thread watch lacks %q:\n%s\n(the stepping process printed:\n%s)", want, got, step)
		}
	}
}
