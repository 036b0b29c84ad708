package extract_test

import (
	"context"
	"fmt"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/extract"
)

// ExampleExtract reads a reviewer's answer, then an answer that breaks the
// schema, and prints the correction a retry's prompt would carry.
func ExampleExtract() {
	schema, err := cas.CompileSchema(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status":   map[string]any{"enum": []any{"approved", "rejected"}},
			"comments": map[string]any{"type": "string"},
		},
		"required": []any{"status", "comments"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	out, err := extract.Extract(ctx, "---\nstatus: rejected\ncomments: Add a test.\n---\nThe parser misses empty input.\n", schema, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v via %s; body %q\n", out.Value, out.Via, out.Body)

	out, _ = extract.Extract(ctx, "---\nstatus: $SUSPEND\nreason: Which license?\n---\n", schema, nil)
	fmt.Printf("suspend: %v, reason: %s\n", out.Suspend, out.Reason)

	_, err = extract.Extract(ctx, "---\nstatus: lgtm\n---\n", schema, nil)
	fmt.Println(err)
	fmt.Print(extract.CorrectionPrompt(err))
	// Output:
	// map[comments:Add a test. status:rejected] via frontmatter; body "The parser misses empty input.\n"
	// suspend: true, reason: Which license?
	// extract: the frontmatter does not match the role schema: at /status: unknown status "lgtm": the allowed statuses are "approved", "rejected" (value "lgtm"; schema /properties/status); at /: missing property 'comments' (value {"status":"lgtm"}; schema /required)
	// Your previous answer could not be used: the frontmatter does not match the role schema.
	//
	// Problems:
	// - `status`: unknown status "lgtm": the allowed statuses are "approved", "rejected" (you wrote "lgtm")
	// - the frontmatter: missing property 'comments'
	//
	// Answer again, starting with a frontmatter block: a line `---`, the fields as YAML (see the output format above), a line `---`, then your notes in markdown. Begin with the `---` line itself, not with a code fence.
}

// ExampleSplit cuts an answer with CRLF line endings into its parts.
func ExampleSplit() {
	front, body, err := extract.Split("\r\n---\r\nstatus: done\r\n---\r\nNotes.\r\n")
	fmt.Printf("%q %q %v\n", front, body, err)
	// Output:
	// "status: done\n" "Notes.\n" <nil>
}
