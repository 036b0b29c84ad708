// Package registry keeps uwf's workflows by name (SPEC §6): it parses
// workflow YAML files keeping line and column, validates them (reporting
// every problem at once), stores them as workflow nodes with one schema
// node per role, and versions them through the ref workflows/<name> and its
// log. docs/WORKFLOWS.md is the user's guide. uwf's configuration
// (config.yaml, .env) is package config; the agents that run roles are
// package agent.
//
// # Vocabulary
//
//   - A [Workflow] has roles and a graph. A [Role] carries the instructions
//     handed to its agent and the JSON Schema ("frontmatter") of its
//     structured output.
//   - A status is the string a role's output puts in its "status" field.
//     Each role schema pins its statuses with a const or an enum on
//     properties.status, or with a oneOf (or anyOf) of variants that each
//     do; [Workflow.Statuses] lists them.
//   - The graph maps a role and a status to an edge: the next role (or
//     $END) and a prompt template ([moderator.Graph]). $START is the source
//     of a new thread, with the one status "new".
//   - A version is one workflow node. [Registry.Put] moves workflows/<name>
//     to it by compare-and-swap; the ref's log is the history that
//     [Registry.History] lists and [Registry.Rollback] moves back through.
//
// # Validation
//
// [Parse] checks the file as YAML (one document, string keys, no
// duplicates, merge keys resolved, aliases bounded: [cas.CheckYAML]) and
// as a workflow (the rules of docs/WORKFLOWS.md). The error is a *[ValidationError] whose Error
// prints one "file:line:col: message" per problem, sorted by position.
// [Workflow.Validate] applies the same rules to a workflow built in Go.
//
// # Composition
//
// A role may run a workflow as a child thread ([Role.Workflow], optionally
// pinned by [Role.Version]) or be a stage that runs several roles at once
// ([Role.Parallel], [Role.Race], with [Role.Timeout], [Role.Concurrency]
// and [Role.Join] rules; its schema derived by [Workflow.StageSchema]). A
// workflow that composes is stored as a workflow2 node, moving the store
// to format version 2; one that does not keeps its version-1 hash.
// [Registry.Put] refuses a child role whose workflow is not registered.
//
// # Concurrency
//
// A [Registry] is safe for concurrent use, from many goroutines and
// processes sharing a store: every ref move is a compare-and-swap, and the
// loser of a race gets a *[cas.ConflictError]. [Parse] and the other
// functions are safe for concurrent use. A [Workflow] may be
// read concurrently but not modified meanwhile.
//
// # Caveats
//
// Formatting never changes a workflow's hash: schemas are converted to
// plain JSON values and stored canonically, and empty optional fields are
// left out. Everything else does: a different prompt text, even in
// whitespace inside "{{ }}", is a different version.
package registry
