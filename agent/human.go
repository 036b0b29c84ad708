package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Human is an agent that asks a person: it prints the prompt and reads the
// answer, which ends at a line holding only "." or at the end of the input.
// It is safe for concurrent use: runs take turns.
//
// A Human made by [NewHuman] reads its input in a background goroutine,
// started by the first run and ending at the end of the input, so that an
// interrupted run returns at once even though a read from a terminal cannot
// be interrupted; the line being read when a run is interrupted goes to the
// next run.
type Human struct {
	mu    sync.Mutex // one run at a time
	out   io.Writer
	path  string // NewHumanInput: the file holding the answer
	in    io.Reader
	once  sync.Once
	lines chan string // the input, line by line; closed at its end
	err   error       // the read error that closed lines, if not EOF
}

var _ Agent = (*Human)(nil)

// NewHuman returns a Human that prints prompts to out and reads answers
// from in (a terminal, usually).
func NewHuman(in io.Reader, out io.Writer) *Human {
	return &Human{in: in, out: out}
}

// NewHumanInput returns a Human for scripts (the --input flag): every run's
// answer is the whole content of the file at path, read when the run
// starts. It prints nothing.
func NewHumanInput(path string) *Human {
	return &Human{path: path, out: io.Discard}
}

// Name returns "human".
func (h *Human) Name() string { return "human" }

// answerEnd is the line that ends an answer.
const answerEnd = "."

// Run prints req's prompt, framed by a header naming the role and thread,
// and returns the answer read, lines ending "\n" (a "\r" before it
// dropped), without the closing ".". Errors are *[RunError]s: an input that
// ends before any answer ([ExitFailure]), an unreadable input file, an
// interruption ([ExitInterrupted], wrapping [context.Canceled]).
func (h *Human) Run(ctx context.Context, req *Request) (*Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := time.Now()
	res := &Result{}
	fail := func(code int, reason string, err error) (*Result, error) {
		res.ExitCode = code
		res.Duration = time.Since(start)
		return nil, &RunError{Agent: h.Name(), Reason: reason, Result: res, Err: err}
	}
	if h.path != "" {
		b, err := os.ReadFile(h.path)
		if err != nil {
			return fail(ExitFailure, "read the answer: "+err.Error(), err)
		}
		res.Raw = string(b)
		res.Duration = time.Since(start)
		return res, nil
	}

	fmt.Fprintf(h.out, "===== uwf: role %s, workflow %s, thread %s =====\n", req.Role, req.Workflow, req.Thread)
	fmt.Fprint(h.out, req.Prompt)
	if !strings.HasSuffix(req.Prompt, "\n") {
		fmt.Fprintln(h.out)
	}
	fmt.Fprintf(h.out, "===== Your answer; end it with a line holding only %q (or end of input) =====\n", answerEnd)

	h.once.Do(h.startReader)
	var b strings.Builder
	got := false
	for {
		select {
		case <-ctx.Done():
			res.Raw = b.String()
			return fail(ExitInterrupted, "interrupted", ctx.Err())
		case line, ok := <-h.lines:
			if !ok {
				res.Raw = b.String()
				if h.err != nil {
					return fail(ExitFailure, "read the answer: "+h.err.Error(), h.err)
				}
				if !got {
					return fail(ExitFailure, "no answer: the input ended", io.EOF)
				}
				res.Duration = time.Since(start)
				return res, nil
			}
			got = true
			if line == answerEnd {
				res.Raw = b.String()
				res.Duration = time.Since(start)
				return res, nil
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
}

// startReader starts the goroutine that feeds h.lines.
func (h *Human) startReader() {
	h.lines = make(chan string)
	go func() {
		defer close(h.lines)
		r := bufio.NewReader(h.in)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				h.lines <- strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					h.err = err
				}
				return
			}
		}
	}()
}
