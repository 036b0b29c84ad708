// Package roleschema reads a role's output schema (a JSON Schema held as
// plain JSON values: nil, bool, float64, string, []any, map[string]any) the
// way the agent and extract packages both need it (and cas reads JSON
// pointers with [Lookup]): following local "$ref"s,
// folding "allOf" into one view, and finding the statuses a role may output
// (SPEC §6: a role schema pins "status" to a const or an enum, or to a oneOf
// of such variants).
//
// It is a reader, not a validator: what it cannot fold it leaves in place,
// and callers validate for real with cas. Every function is pure and safe
// for concurrent use; none modifies its arguments.
package roleschema
