// Package yamldoc reads the YAML files people write for uwf (workflow
// definitions, config.yaml; [ReadFile] bounds their size) as yaml.v3 node
// trees, keeping every line and
// column, and collects what is wrong with them as [Problem]s of one
// *[ValidationError]: [CheckTree] bounds a document (depth, alias
// expansion) and rejects key problems before anything reads it; [Resolve],
// [Pairs], [Describe] and the other helpers read nodes; [NameProblem] is
// the grammar of the names such files define.
//
// It is used by packages registry and config, so both report problems the
// same way. Its functions are safe for concurrent use; a [Problems] is not.
package yamldoc
