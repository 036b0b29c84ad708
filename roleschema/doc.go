// Package roleschema is the one reader of a role's output schema (a JSON
// Schema held as plain JSON values: nil, bool, float64, string, []any,
// map[string]any). The registry validates workflows with it, the agents
// build prompts and synthetic outputs with it, and extract explains bad
// outputs with it, so all of them agree on what a role may output.
//
// It follows local "$ref"s, folds "allOf" into one view ([Merge]), splits a
// top-level "oneOf"/"anyOf" into variants ([Variants]) and finds the
// statuses a role may output ([Read], [Statuses]; SPEC §6: a role schema
// pins "status" to a const or an enum, or to a oneOf/anyOf of such
// variants).
//
// It is a reader, not a validator: what it cannot fold it leaves in place,
// and callers validate for real with cas. Every function is pure and safe
// for concurrent use; none modifies its arguments.
package roleschema
