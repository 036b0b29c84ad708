package extract_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/uncaged/uwf/extract"
)

// crlfRun is what Split turns into a plain newline.
var crlfRun = regexp.MustCompile("\r+\n")

var splitSeeds = []string{
	"", "---", "---\n---", "---\n---\n", "---\na: 1\n---\nbody\n", "\uFEFF---\r\na: 1\r\n---\r\n",
	"\n\n  ---\na: 1\n---", "---\na: 1\n", "text\n---\na: 1\n---\n", "---\n---\n---\n", "--- \n---\t\n",
	"----\n", "\r\n", "---\r\n\r\n---", "\uFEFF\uFEFF---\n---\n", "---\na: |\n  ---\n---\nx",
}

// FuzzSplit checks that Split never panics, fails only with
// ErrNoFrontmatter, and that what it returns came from the input: the
// front and the body are parts of it (after the BOM and CRLF are dropped),
// and a well-formed block splits back into the same parts.
func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		front, body, err := extract.Split(raw)
		if err != nil {
			if !errors.Is(err, extract.ErrNoFrontmatter) || front != "" || body != "" {
				t.Fatalf("Split(%q) = %q, %q, %v", raw, front, body, err)
			}
			return
		}
		norm := crlfRun.ReplaceAllString(strings.TrimPrefix(raw, "\uFEFF"), "\n")
		if !strings.Contains(norm, front) || !strings.HasSuffix(norm, body) {
			t.Fatalf("Split(%q) = %q, %q: not parts of the input", raw, front, body)
		}
		if strings.Contains(front, "\r\n") || strings.Contains(body, "\r\n") {
			t.Fatalf("Split(%q) kept a CRLF: %q, %q", raw, front, body)
		}
		// Splitting the same parts, put back together, gives them again.
		again := "---\n" + front + "---\n" + body
		f2, b2, err := extract.Split(again)
		if err != nil || f2 != front || b2 != body {
			t.Fatalf("Split(%q) = %q, %q, %v; want %q, %q", again, f2, b2, err, front, body)
		}
	})
}

// FuzzExtract checks that Extract never panics, that what it accepts is
// valid against the schema (or a $SUSPEND with a reason), that what it
// rejects is an extraction error with a usable correction prompt, and
// that the LLM fallback keeps those promises too.
func FuzzExtract(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s, false)
	}
	for _, s := range []string{
		"---\nstatus: approved\ncomments: ok\n---\n", "---\nstatus: rejected\ncomments: x\nseverity: 2\n---\n",
		"---\nstatus: $SUSPEND\nreason: help\n---\n", "---\nstatus: $SUSPEND\n---\n", "---\nstatus: [\n---\n",
		"---\n- a\n---\n", "---\nstatus: maybe\n---\n", "---\n? [a]\n: b\n---\n", "---\na: &x 1\nb: *x\n---\n",
		"---\nstatus: 2024-01-01\n---\n", "---\nstatus: .inf\n---\n", "---\n{a: 1, a: 2}\n---\n", "---\n!!binary aGk=\n---\n",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	reviewer := compile(f, reviewerYAML)
	oneOf := compile(f, oneOfYAML)
	f.Fuzz(func(t *testing.T, raw string, useLLM bool) {
		for _, s := range []string{"reviewer", "oneOf"} {
			sc := reviewer
			if s == "oneOf" {
				sc = oneOf
			}
			var llm extract.JSONExtractor
			if useLLM {
				// Answers with the raw output itself: sometimes JSON, mostly not.
				llm = echoLLM{}
			}
			out, err := extract.Extract(context.Background(), raw, sc, llm)
			if err != nil {
				if !errors.Is(err, extract.ErrExtract) || out != nil {
					t.Fatalf("Extract(%q) = %+v, %v; want an extraction error", raw, out, err)
				}
				if p := extract.CorrectionPrompt(err); !strings.Contains(p, "Answer again") || (utf8.ValidString(raw) && !utf8.ValidString(p)) {
					t.Fatalf("CorrectionPrompt(%v) = %q", err, p)
				}
				continue
			}
			switch {
			case out.Suspend:
				if strings.TrimSpace(out.Reason) == "" || out.Value != nil {
					t.Fatalf("Extract(%q) = %+v: a $SUSPEND needs a reason and no value", raw, out)
				}
			case sc.Validate(out.Value) != nil:
				t.Fatalf("Extract(%q) = %+v: invalid against the %s schema: %v", raw, out, s, sc.Validate(out.Value))
			case out.Via != extract.ViaFrontmatter && out.Via != extract.ViaLLM:
				t.Fatalf("Extract(%q).Via = %q", raw, out.Via)
			}
		}
	})
}

// echoLLM answers the raw output as the JSON.
type echoLLM struct{}

func (echoLLM) ExtractJSON(_ context.Context, _ any, raw string) (string, error) { return raw, nil }
