package registry_test

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/uncaged/uwf/examples"
	"github.com/uncaged/uwf/moderator"
	"github.com/uncaged/uwf/registry"
)

// Parse a workflow file, register it, and route its first step.
func ExampleRegistry_Put() {
	ctx := context.Background()
	data, err := fs.ReadFile(examples.FS, "review-loop.yaml")
	if err != nil {
		panic(err)
	}
	w, err := registry.Parse("review-loop.yaml", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	repo, err := openMemRepo() // a cas.Repo over any backend
	if err != nil {
		panic(err)
	}
	reg := registry.New(repo)
	res, err := reg.Put(ctx, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("put", res.Name, "changed:", res.Changed)
	res, _ = reg.Put(ctx, w) // the same content again
	fmt.Println("put", res.Name, "changed:", res.Changed)

	got, _ := reg.Resolve(ctx, "review-loop")
	fmt.Println("roles:", got.Workflow.RoleNames())
	fmt.Println("reviewer statuses:", got.Workflow.Statuses("reviewer"))
	d, _ := moderator.RouteStart(got.Workflow.Graph)
	fmt.Printf("first: %s, %q\n", d.Role, d.Prompt)
	// Output:
	// put review-loop changed: true
	// put review-loop changed: false
	// roles: [developer planner reviewer]
	// reviewer statuses: [approved rejected]
	// first: planner, "Plan this task."
}

// Validation reports every problem at once, with file, line and column.
func ExampleParse_invalid() {
	_, err := registry.Parse("review.yaml", []byte(`name: review
roles:
  reviewer:
    frontmatter:
      properties:
        status: { enum: [approved, rejected] }
graph:
  $START: { new: { role: reviewer, prompt: Review. } }
  reviewer:
    approved: { role: $END, prompt: "Approved: {{ comments }}" }
    maybe: { role: reviewer, prompt: Again. }
`))
	fmt.Println(err)
	// Output:
	// review.yaml:9:3: graph.reviewer: missing status "rejected"
	// review.yaml:10:37: graph.reviewer.approved.prompt: field "comments" is not in the reviewer schema (its properties: status)
	// review.yaml:11:5: graph.reviewer.maybe: status "maybe" is not in the reviewer schema (approved, rejected)
}
