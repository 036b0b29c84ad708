// Package examples holds the bundled example workflows (see
// docs/WORKFLOWS.md): review-loop.yaml, the reference workflow of the
// specification; develop.yaml, a plan/code/review/test/commit loop; and two
// that compose: solve-issue.yaml (a role that runs develop as a child
// thread) and parallel-review.yaml (a race of planners, reviewers in
// parallel). They are embedded so the demo and tests can use them without
// reading files by path.
package examples

import "embed"

// FS holds every example workflow file (*.yaml) at its top level. It is
// read-only and safe for concurrent use.
//
//go:embed *.yaml
var FS embed.FS
