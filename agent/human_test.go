package agent_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uncaged/uwf/agent"
)

func TestHuman(t *testing.T) {
	t.Parallel()
	in := strings.NewReader("---\r\nstatus: done\r\nsummary: by hand\r\n---\r\n.\nsecond answer\nno end marker")
	var out strings.Builder
	h := agent.NewHuman(in, &out)
	req := request()
	req.Prompt = "Do the thing."

	res, err := h.Run(t.Context(), req)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if want := "---\nstatus: done\nsummary: by hand\n---\n"; res.Raw != want {
		t.Errorf("first answer = %q, want %q", res.Raw, want)
	}
	wantOut := "===== uwf: role developer, workflow review-loop, thread 01JCQ5S7Q7T7Y3V0Z3K5W8M9AB =====\n" +
		"Do the thing.\n===== Your answer; end it with a line holding only \".\" (or end of input) =====\n"
	if out.String() != wantOut {
		t.Errorf("printed %q, want %q", out.String(), wantOut)
	}

	res, err = h.Run(t.Context(), req)
	if err != nil || res.Raw != "second answer\nno end marker\n" {
		t.Errorf("second Run() = %+v, %v; want the rest up to EOF", res, err)
	}

	_, err = h.Run(t.Context(), req)
	if re := runErr(t, err); !errors.Is(err, io.EOF) || re.Reason != "no answer: the input ended" {
		t.Errorf("Run() at EOF error = %v", err)
	}
}

func TestHumanInterrupted(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	h := agent.NewHuman(pr, io.Discard)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := h.Run(ctx, request())
	if !errors.Is(err, context.Canceled) || agent.ExitCode(err) != agent.ExitInterrupted {
		t.Fatalf("Run() error = %v, want an interruption", err)
	}
	// The reader still serves the next run.
	go func() { _, _ = io.WriteString(pw, "late answer\n.\n") }()
	res, err := h.Run(t.Context(), request())
	if err != nil || res.Raw != "late answer\n" {
		t.Errorf("Run() after an interruption = %+v, %v", res, err)
	}
}

func TestHumanInput(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "answer.md")
	answer := "---\nstatus: approved\ncomments: fine\n---\n.\nThe dot line is content here.\n"
	if err := os.WriteFile(path, []byte(answer), 0o644); err != nil {
		t.Fatal(err)
	}
	h := agent.NewHumanInput(path)
	for range 2 {
		res, err := h.Run(t.Context(), request())
		if err != nil || res.Raw != answer {
			t.Errorf("Run() = %+v, %v; want the whole file", res, err)
		}
	}
	_, err := agent.NewHumanInput(filepath.Join(t.TempDir(), "missing")).Run(t.Context(), request())
	if !errors.Is(err, os.ErrNotExist) || agent.ExitCode(err) != agent.ExitFailure {
		t.Errorf("Run() with a missing file: error = %v", err)
	}
}
