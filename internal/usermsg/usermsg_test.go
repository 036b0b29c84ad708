package usermsg

import (
	"strings"
	"testing"
)

// TestMessage pins the rewriting of internal words.
func TestMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"thread 01JGJFGR4E0000000000000001: cas: not found", "thread 01JGJFGR4E0000000000000001: not found"},
		{"config defaultModel is not set: cas: not found", "config defaultModel is not set"},
		{`agent "x": unknown agent: cas: not found: it is neither configured nor built in`, `agent "x": unknown agent: it is neither configured nor built in`},
		{"thread T: cas: not found: its ref threads/T is missing", "thread T: its ref threads/T is missing"},
		{"rollback w: H: not a version of this workflow: cas: not found (see: uwf workflow history w)", "rollback w: H: not a version of this workflow (see: uwf workflow history w)"},
		{"get H: cas: object corrupt: the bytes hash to G", "get H: corrupt: the bytes hash to G"},
		{"f.json: cas: too large: the file is 9 bytes", "f.json: too large: the file is 9 bytes"},
		{"cas: invalid ref name \"\": empty", "invalid ref name \"\": empty"},
		{"1 left out:\nthread T: head: get H: cas: not found\n(uwf cas fsck reports ...)", "1 left out:\nthread T: head: get H: not found\n(uwf cas fsck reports ...)"},
		{"role planner (agent a) failed: extract: the output does not start with a frontmatter block", "role planner (agent a) failed: the output does not start with a frontmatter block"},
		{"step: moderator: unknown status: \"x\"", "step: unknown status: \"x\""},
		{"walk: context canceled", "walk: interrupted"},
		{"ref x: cas: conflict", "ref x: conflict"},
		{"walk: get 0000000000001: cas: not found", "walk: object 0000000000001 was not found in the store"},
		{"log of ref a/b: cas: not found", "ref a/b has no log"},
		{"nothing internal here: agent coder", "nothing internal here: agent coder"},
	} {
		if got := Message(tc.in); got != tc.want {
			t.Errorf("Message(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
		}
	}
}

// FuzzMessage: rewriting any message leaves none of the sentinels'
// texts in it, and rewriting it again changes nothing.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		"thread X: cas: not found", "a: cas: not found: b", "cas: not found", ": cas: not found",
		"get 0000000000001: cas: not found", "x: extract: cas: invalid: y", "cas: cas: not found",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got := Message(msg)
		for _, w := range internalWords {
			if strings.Contains(got, w.text) {
				t.Fatalf("Message(%q) = %q: still holds %q", msg, got, w.text)
			}
		}
		if again := Message(got); again != got {
			t.Fatalf("Message(%q) = %q, and again %q", msg, got, again)
		}
	})
}
