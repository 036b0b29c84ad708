package extract_test

import (
	"errors"
	"testing"

	"github.com/uncaged/uwf/extract"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		raw       string
		front     string
		body      string
		wantErr   bool
		errReason string
	}{
		{name: "plain", raw: "---\nstatus: done\n---\nbody\n", front: "status: done\n", body: "body\n"},
		{name: "BOM", raw: "\uFEFF---\na: 1\n---\nb", front: "a: 1\n", body: "b"},
		{name: "CRLF", raw: "---\r\na: 1\r\nb: 2\r\n---\r\nbody\r\nmore\r\n", front: "a: 1\nb: 2\n", body: "body\nmore\n"},
		{name: "leading blank lines and whitespace", raw: "\n\n  \t\n---\na: 1\n---\n", front: "a: 1\n", body: ""},
		{name: "indented opening fence", raw: "   ---\na: 1\n---\nx", front: "a: 1\n", body: "x"},
		{name: "BOM, CRLF and blank lines together", raw: "\uFEFF\r\n\r\n---\r\na: 1\r\n---\r\n# Title\r\n", front: "a: 1\n", body: "# Title\n"},
		{name: "empty frontmatter", raw: "---\n---\nbody", front: "", body: "body"},
		{name: "empty frontmatter at EOF", raw: "---\n---", front: "", body: ""},
		{name: "closing fence at EOF without newline", raw: "---\na: 1\n---", front: "a: 1\n", body: ""},
		{name: "spaces after the fences", raw: "--- \na: 1\n---  \nx", front: "a: 1\n", body: "x"},
		{name: "--- inside the body", raw: "---\na: 1\n---\nintro\n---\nmore\n", front: "a: 1\n", body: "intro\n---\nmore\n"},
		{name: "body keeps its blank lines", raw: "---\na: 1\n---\n\n\nbody\n\n", front: "a: 1\n", body: "\n\nbody\n\n"},
		{name: "indented --- in the YAML is not a fence", raw: "---\na: |\n  ---\n---\nx", front: "a: |\n  ---\n", body: "x"},
		{name: "no closing fence", raw: "---\na: 1\nbody\n", wantErr: true, errReason: "the frontmatter has no closing --- line"},
		{name: "only an opening fence", raw: "---", wantErr: true, errReason: "the frontmatter has no closing --- line"},
		{name: "no frontmatter", raw: "Hello!\n---\na: 1\n---\n", wantErr: true, errReason: "the output does not start with a frontmatter block (a line ---)"},
		{name: "four dashes", raw: "----\na: 1\n----\n", wantErr: true, errReason: "the output does not start with a frontmatter block (a line ---)"},
		{name: "text after the fence", raw: "--- a: 1\n---\n", wantErr: true, errReason: "the output does not start with a frontmatter block (a line ---)"},
		{name: "code fence first", raw: "```markdown\n---\na: 1\n---\n```\n", wantErr: true, errReason: "the output does not start with a frontmatter block (a line ---)"},
		{name: "empty", raw: "", wantErr: true, errReason: "the output is empty"},
		{name: "blank", raw: "\uFEFF \n\t\r\n", wantErr: true, errReason: "the output is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			front, body, err := extract.Split(tc.raw)
			if tc.wantErr {
				var e *extract.Error
				if !errors.As(err, &e) || !errors.Is(err, extract.ErrNoFrontmatter) || !errors.Is(err, extract.ErrExtract) {
					t.Fatalf("Split(%q) error = %v, want an *Error wrapping ErrNoFrontmatter", tc.raw, err)
				}
				if e.Reason != tc.errReason {
					t.Errorf("Split(%q) reason = %q, want %q", tc.raw, e.Reason, tc.errReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Split(%q) error = %v", tc.raw, err)
			}
			if front != tc.front || body != tc.body {
				t.Errorf("Split(%q) = %q, %q; want %q, %q", tc.raw, front, body, tc.front, tc.body)
			}
		})
	}
}
