// Package yamldoc reads the YAML files people write for uwf (workflow
// definitions, config.yaml; [ReadFile] bounds their size) as yaml.v3 node
// trees, keeping every line and
// column, and collects what is wrong with them as [Problem]s of one
// *[ValidationError]: [CheckTree] applies [cas.CheckYAML] (the one
// YAML safety check: depth, alias expansion, key problems; merge keys
// accepted) before anything reads a document; [Resolve], [Pairs] (merged
// keys included), [Describe] and the other helpers read nodes; [NameProblem] is
// the grammar of the names such files define.
//
// It is used by packages registry and config, so both report problems the
// same way. Its functions are safe for concurrent use; a [Problems] is not.
package yamldoc
