package cas_test

import (
	"strconv"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// BenchmarkDeepRecursive validates, and walks for edges, a payload nested
// through a recursive schema (treeSchema: every level is an anyOf whose
// branches $ref the tree again), with the one edge at the bottom. The
// deepest case is what Put accepts: the edge walk of GC, fsck and walk
// runs it on every such node, so it must not blow up with the depth.
func BenchmarkDeepRecursive(b *testing.B) {
	doc, err := cas.ParseJSON([]byte(treeSchema))
	if err != nil {
		b.Fatal(err)
	}
	s, err := cas.CompileSchema(doc)
	if err != nil {
		b.Fatal(err)
	}
	leaf := cas.ContentSchema.String()
	for _, depth := range []int{50, 100, 200, cas.MaxDepth - 1} {
		payload := nest([]any{leaf, 1e21}, depth) // depth+1 levels in all
		b.Run("validate/depth="+strconv.Itoa(depth+1), func(b *testing.B) {
			for b.Loop() {
				if err := s.Validate(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("edges/depth="+strconv.Itoa(depth+1), func(b *testing.B) {
			for b.Loop() {
				if e := s.Edges(payload); len(e) != 1 || e[0].Hash != cas.ContentSchema {
					b.Fatalf("edges = %v, want the one at the bottom", e)
				}
			}
		})
	}
}
