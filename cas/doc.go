// Package cas is uwf's content-addressed Merkle store: hashes, canonical
// JSON, typed nodes validated by JSON Schemas that are themselves nodes, the
// [Store] and [Refs] contracts every backend implements, and the typed layer
// ([Repo]) with walk, GC and fsck on top of any backend.
//
// # Vocabulary
//
//   - A [Hash] is XXH64 of an object's canonical bytes, written as 13
//     Crockford Base32 characters.
//   - A node is {"type": <schema hash>, "payload": <JSON>}, stored as its
//     RFC 8785 canonical encoding.
//   - An edge is the node's type (unless zero) and every payload string
//     whose schema says "format": "cas_ref".
//   - A ref is a mutable name pointing at a hash, changed only by
//     compare-and-swap; every change is logged.
//   - The built-in schemas ([Builtins]) are constants of the format: code
//     uses their pinned hashes and known bytes, never the store's copy.
//   - A store's format version is 1 or 2 ([FormatV1], [FormatV2]); a store
//     moves to 2 only by [Repo.RequireVersion], at the first node of a kind
//     that version 2 added. [Open] writes nothing to an existing store.
//
// # Concurrency
//
// Store and Refs implementations are safe for concurrent use. Writers hold
// the store-wide lock shared around "check edges, put, move the ref"; GC
// holds it exclusively for each short sweep batch.
package cas
