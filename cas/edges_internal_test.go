package cas

import (
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/uncaged/uwf/internal/jsonpointer"
	"github.com/uncaged/uwf/internal/jsonschema"
)

// referenceEdges is the edge walk without its shortcuts: every branch of
// anyOf, oneOf and if that holds an edge is validated with the schema's own
// Validate, at every level. Schema.Edges must find exactly its edges.
func referenceEdges(s *Schema, payload any) []Edge {
	if s.meta || !s.hasRefs {
		return nil
	}
	var out []Edge
	seen := map[edgeVisit]bool{}
	var collect func(sc *jsonschema.Schema, v any, path string)
	collect = func(sc *jsonschema.Schema, v any, path string) {
		if sc == nil || seen[edgeVisit{sc, path}] {
			return
		}
		seen[edgeVisit{sc, path}] = true
		if str, ok := v.(string); ok && isRef(sc) {
			if h, err := ParseCanonicalHash(str); err == nil {
				out = append(out, Edge{Hash: h, Path: path})
			}
		}
		collect(sc.Ref, v, path)
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				cp := path + "/" + jsonpointer.Escape(k)
				matched := false
				if ps, ok := sc.Properties[k]; ok {
					matched = true
					collect(ps, x[k], cp)
				}
				for re, ps := range sc.PatternProperties {
					if re.MatchString(k) {
						matched = true
						collect(ps, x[k], cp)
					}
				}
				if ap, ok := sc.AdditionalProperties.(*jsonschema.Schema); ok && !matched {
					collect(ap, x[k], cp)
				}
			}
		case []any:
			for i, child := range x {
				cp := path + "/" + strconv.Itoa(i)
				if i < len(sc.PrefixItems) {
					collect(sc.PrefixItems[i], child, cp)
				} else {
					collect(sc.Items2020, child, cp)
				}
			}
		}
		for _, b := range sc.AllOf {
			collect(b, v, path)
		}
		for _, b := range slices2(sc.AnyOf, sc.OneOf) {
			if b.Validate(v) == nil {
				collect(b, v, path)
			}
		}
		if sc.If != nil {
			if sc.If.Validate(v) == nil {
				collect(sc.If, v, path)
				collect(sc.Then, v, path)
			} else {
				collect(sc.Else, v, path)
			}
		}
	}
	collect(s.s, payload, "")
	sort.SliceStable(out, func(i, j int) bool { return comparePointers(out[i].Path, out[j].Path) < 0 })
	var kept []Edge
	hashes := map[Hash]bool{}
	for _, e := range out {
		if !hashes[e.Hash] {
			hashes[e.Hash] = true
			kept = append(kept, e)
		}
	}
	return kept
}

func slices2(a, b []*jsonschema.Schema) []*jsonschema.Schema {
	return append(append([]*jsonschema.Schema(nil), a...), b...)
}

// TestEdgesMatchReference compares Edges with the reference walk on random
// payloads, valid and invalid, under schemas whose branches share a type
// (so only validation tells them apart), hold integers, false, oneOf with
// overlapping branches, if/then/else, prefixItems and patternProperties.
func TestEdgesMatchReference(t *testing.T) {
	schemas := map[string]string{
		"tree": `{"$ref":"#/$defs/t","$defs":{"t":{"anyOf":[
			{"type":"string","format":"cas_ref"},
			{"type":"array","items":{"$ref":"#/$defs/t"}},
			{"type":"object","additionalProperties":{"$ref":"#/$defs/t"}},
			{"type":["null","boolean","number"],"maximum":1},
			{"type":"string","not":{"pattern":"^[0-9A-Z]{13}$"}}]}}}`,
		"same type, told apart deeper": `{"$ref":"#/$defs/t","$defs":{"t":{"anyOf":[
			{"type":"array","prefixItems":[{"const":1}],"items":{"$ref":"#/$defs/t"}},
			{"type":"array","prefixItems":[{"const":2}],"items":{"type":"string"}},
			{"type":"object","required":["k"],"properties":{"k":{"$ref":"#/$defs/t"}},"additionalProperties":false},
			{"type":"integer"},
			false,
			{"type":"string","format":"cas_ref"}]}}}`,
		"oneOf overlapping": `{"$ref":"#/$defs/t","$defs":{"t":{"oneOf":[
			{"type":"array","items":{"$ref":"#/$defs/t"}},
			{"type":"array","maxItems":1,"items":{"type":"string","format":"cas_ref"}},
			{"type":"object","patternProperties":{"^a":{"$ref":"#/$defs/t"}},"additionalProperties":{"type":"string","format":"cas_ref"}},
			{"type":["string","number","null","boolean"]}]}}}`,
		"if then else": `{"$ref":"#/$defs/t","$defs":{"t":{
			"if":{"type":"array","minItems":2},
			"then":{"items":{"$ref":"#/$defs/t"}},
			"else":{"anyOf":[{"type":"array","items":{"type":"string","format":"cas_ref"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/t"}},{"type":["string","number","null","boolean"]}]}}}}`,
		"embedded $id and $anchor": `{"$ref":"node.json","$defs":{"n":{"$id":"node.json","$anchor":"top","anyOf":[
			{"type":"array","prefixItems":[{"const":1}],"items":{"$ref":"#top"}},
			{"type":"array","items":{"type":"string"}},
			{"type":"object","additionalProperties":{"$ref":"#top"}},
			{"type":"string","format":"cas_ref"},
			{"type":["number","null"]}]}}}`,
		"$dynamicRef": `{"$defs":{"x":{"$dynamicAnchor":"x","type":["number","boolean"]}},"anyOf":[
			{"type":"array","items":{"$ref":"#"}},
			{"type":"array","items":{"type":"string"}},
			{"type":"string","format":"cas_ref"},
			{"type":"object","additionalProperties":{"$dynamicRef":"#x"}}]}`,
		"allOf and numbers": `{"type":"object","allOf":[
			{"properties":{"n":{"type":"integer"}}},
			{"additionalProperties":{"anyOf":[{"type":"number","minimum":0},{"type":"string","format":"cas_ref"},{"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"string","format":"cas_ref"}]}}]}}]}`,
	}
	hashes := []string{ContentSchema.String(), Hash(0x0123456789abcdef).String()}
	for name, doc := range schemas {
		t.Run(name, func(t *testing.T) {
			pdoc, err := ParseJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			s, err := CompileSchema(pdoc)
			if err != nil {
				t.Fatal(err)
			}
			if s.dynamic != strings.Contains(doc, "$dynamicRef") {
				t.Fatalf("dynamic = %v: the walker infers branches where it must validate them, or the reverse", s.dynamic)
			}
			r := rand.New(rand.NewPCG(7, uint64(len(name))))
			valid, withEdges := 0, 0
			for i := range 3000 {
				payload := randomValue(r, 1+r.IntN(6), hashes)
				got, want := s.Edges(payload), referenceEdges(s, payload)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("payload %d %s: Edges = %v, the reference walk finds %v", i, short(payload), got, want)
				}
				if s.Validate(payload) == nil {
					valid++
				}
				if len(want) > 0 {
					withEdges++
				}
			}
			// The comparison means something only if both kinds of
			// payload, and edges, came up.
			if valid < 100 || valid > 2900 || withEdges < 100 {
				t.Fatalf("%d of 3000 payloads valid, %d with edges: the generator misses the schema", valid, withEdges)
			}
		})
	}
}

func randomValue(r *rand.Rand, depth int, hashes []string) any {
	if depth == 0 || r.IntN(4) == 0 {
		switch r.IntN(8) {
		case 0, 1, 2:
			return hashes[r.IntN(len(hashes))]
		case 3:
			return float64(r.IntN(3))
		case 4:
			return -0.5
		case 5:
			return nil
		case 6:
			return true
		}
		return "text"
	}
	n := r.IntN(4)
	if r.IntN(2) == 0 {
		a := make([]any, n)
		for i := range a {
			a[i] = randomValue(r, depth-1, hashes)
		}
		return a
	}
	m := map[string]any{}
	for range n {
		m[[]string{"k", "a1", "b", "ab"}[r.IntN(4)]] = randomValue(r, depth-1, hashes)
	}
	return m
}
