package cas_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// treeSchema accepts any JSON value and finds edges at any depth: a string
// that is a canonical hash, inside arrays and objects nested as deep as the
// payload goes.
const treeSchema = `{"$ref":"#/$defs/t","$defs":{"t":{"anyOf":[
 {"type":"string","format":"cas_ref"},
 {"type":"array","items":{"$ref":"#/$defs/t"}},
 {"type":"object","additionalProperties":{"$ref":"#/$defs/t"}},
 {"type":["null","boolean","number"]},
 {"type":"string","not":{"pattern":"^[0-9A-Z]{13}$"}}]}}}`

// numberForms are doubles whose canonical forms cover every branch of the
// ECMAScript number formatting: integers, fractions, exponents both ways,
// -0, subnormals and the extremes.
var numberForms = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e21, 1e20, 123456789012345680000, 1e-7, 1e-6, 0.000001234,
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 9007199254740993, 1 / 3.0, -1e-300, 4.35, 1e308}

// randomPayload returns a random value that Put must accept, nested
// exactly depth levels deep: on the way down each container holds a few
// random leaves besides the one that goes deeper; leaves are every number
// form, long strings, wide arrays and objects, and edges to refs.
func randomPayload(r *rand.Rand, depth int, refs []cas.Hash) any {
	if depth == 0 {
		return randomLeaf(r, refs)
	}
	deeper := randomPayload(r, depth-1, refs)
	if r.IntN(2) == 0 {
		xs := []any{deeper}
		for range r.IntN(3) {
			xs = append(xs, randomLeaf(r, refs))
		}
		r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		return xs
	}
	m := map[string]any{randomKey(r): deeper}
	for range r.IntN(3) {
		if k := randomKey(r); m[k] == nil {
			m[k] = randomLeaf(r, refs)
		}
	}
	return m
}

func randomLeaf(r *rand.Rand, refs []cas.Hash) any {
	switch r.IntN(40) {
	case 0:
		return strings.Repeat(randomKey(r), r.IntN(5000))
	case 1:
		xs := make([]any, r.IntN(2000))
		for i := range xs {
			xs[i] = numberForms[r.IntN(len(numberForms))]
		}
		return xs
	case 2:
		m := map[string]any{}
		for range r.IntN(500) {
			m[randomKey(r)] = randomKey(r)
		}
		return m
	}
	switch r.IntN(7) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return numberForms[r.IntN(len(numberForms))]
	case 3:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(600)-300))
	case 4:
		if len(refs) > 0 {
			return refs[r.IntN(len(refs))].String()
		}
	case 5:
		return float64(r.Int64N(1<<53)) * float64(1-2*r.IntN(2))
	}
	return randomKey(r)
}

// randomKey returns a short string mixing ASCII, control characters,
// escapes, astral and BMP characters, U+2028 and noncharacters.
func randomKey(r *rand.Rand) string {
	alphabet := []string{"a", "Z", "0", "\x00", "\x1f", "\"", "\\", "/", "\u2028", "\u00e9", "\U0001F600", "\uffff", "\u007f", " ", "\n"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// nest wraps v in depth alternating arrays and objects.
func nest(v any, depth int) any {
	for i := range depth {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

// readBack checks that the node at h is read by every reader of the store:
// Get (equal to the payload put), Edges, Walk, Export then Import into a
// fresh store, and Fsck and GC of both.
func readBack(t *testing.T, f *fixture, typ, h cas.Hash, payload any) {
	t.Helper()
	n, err := f.repo.Get(f.ctx, h)
	if err != nil {
		t.Fatalf("Get(%s): %v", h, err)
	}
	want, err := cas.ToValue(payload)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := cas.Canonical(want)
	gotBytes, err := cas.Canonical(n.Payload)
	if err != nil || !bytes.Equal(gotBytes, wantBytes) || n.Type != typ {
		t.Fatalf("Get(%s) returned another payload or type (%v)", h, err)
	}
	if _, err := f.repo.Edges(f.ctx, n); err != nil {
		t.Fatalf("Edges(%s): %v", h, err)
	}
	walked := 0
	if err := f.repo.Walk(f.ctx, []cas.Hash{h}, func(cas.Hash, cas.Node, []cas.Hash) error { walked++; return nil }); err != nil {
		t.Fatalf("Walk(%s): %v", h, err)
	}
	if walked < 2 {
		t.Fatalf("Walk(%s) visited %d nodes, want at least the node and its type", h, walked)
	}
	var tarBuf bytes.Buffer
	if _, err := cas.Export(f.ctx, f.repo, &tarBuf, nil); err != nil {
		t.Fatalf("Export: %v", err)
	}
	g := newFixture(t)
	if _, err := cas.Import(g.ctx, g.repo, bytes.NewReader(tarBuf.Bytes()), nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if n2, err := g.repo.Get(g.ctx, h); err != nil || !reflect.DeepEqual(n2, n) {
		t.Fatalf("Get(%s) after import: %v", h, err)
	}
	for _, x := range []*fixture{f, g} {
		rep, err := x.repo.Fsck(x.ctx, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("Fsck: %v, %v", rep, err)
		}
		if _, err := x.repo.GC(x.ctx, &cas.GCOptions{DryRun: true}); err != nil {
			t.Fatalf("GC: %v", err)
		}
	}
}

// TestPutAcceptedIsRead: whatever Put accepts, every reader reads; in
// particular a payload nested MaxDepth deep, whose node is one level
// deeper, and one level more is refused by Put with a clear error; also
// under a recursive schema, whose edge walk follows an anyOf branch at
// every level (BenchmarkDeepRecursive measures its cost).
func TestPutAcceptedIsRead(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	tree := f.schema("tree", mustJSON(t, treeSchema))
	anyv := f.schema("any", mustJSON(t, `{}`))
	pair := f.schema("pair", mustJSON(t, `{"type":"object","properties":{"ref":{"type":"string","format":"cas_ref"}},"required":["ref"]}`))
	leaf := f.text("leaf")
	f.setRef("keep/leaf", leaf)

	tests := []struct {
		name    string
		typ     cas.Hash
		payload any
	}{
		{"deepest arrays", anyv, nest("x", cas.MaxDepth)},
		{"deepest mixed", anyv, nest(map[string]any{}, cas.MaxDepth-1)},
		{"deepest with an edge", pair, map[string]any{"ref": leaf.String(), "deep": nest([]any{1e21, -0.0}, cas.MaxDepth-2)}},
		{"recursive schema, edge at the bottom", tree, nest([]any{leaf.String(), 1e21, -0.0}, cas.MaxDepth-1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := f.repo.Put(f.ctx, tc.typ, tc.payload)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			f.setRef("keep/"+strconv.Itoa(int(h%1000)), h)
			readBack(t, f, tc.typ, h, tc.payload)
		})
	}
	t.Run("one level more is refused", func(t *testing.T) {
		_, err := f.repo.Put(f.ctx, anyv, nest("x", cas.MaxDepth+1))
		if err == nil || !strings.Contains(err.Error(), "nesting deeper than 1000 levels") {
			t.Fatalf("Put of a payload %d deep: %v, want a nesting error", cas.MaxDepth+1, err)
		}
	})
}

// TestPutRandomIsRead puts random accepted payloads (deep, wide, long
// strings, every number form, edges) and reads each back through every
// reader.
func TestPutRandomIsRead(t *testing.T) {
	f := newFixture(t)
	tree := f.schema("tree", mustJSON(t, treeSchema))
	anyv := f.schema("any", mustJSON(t, `{}`))
	refs := []cas.Hash{f.text("a"), f.text("b")}
	runs := 6
	if testing.Short() {
		runs = 2
	}
	for i := range runs {
		r := rand.New(rand.NewPCG(uint64(i), 11))
		// Even runs go as deep as allowed, odd ones follow edges at
		// every level through a recursive schema, less deep: every
		// reader validates them, and v6 copies the payload path for
		// each leaf that fails an anyOf branch, so their wide leaves
		// cost the depth times the width (TestPutAcceptedIsRead has
		// the full depth).
		typ, depth := anyv, cas.MaxDepth-r.IntN(50)
		if i%2 == 1 {
			typ, depth = tree, 100+r.IntN(100)
		}
		payload := randomPayload(r, depth, refs)
		h, err := f.repo.Put(f.ctx, typ, payload)
		if err != nil {
			t.Fatalf("seed %d: Put: %v", i, err)
		}
		refs = append(refs, h)
		f.setRef("keep/"+strconv.Itoa(i), h)
		readBack(t, f, typ, h, payload)
	}
}

// FuzzPutReadBack: a JSON text that parses and that Put accepts under the
// tree schema is read back by Get, Walk, Export/Import and Fsck.
func FuzzPutReadBack(f *testing.F) {
	f.Add(`"x"`)
	f.Add(strings.Repeat("[", cas.MaxDepth) + strings.Repeat("]", cas.MaxDepth))
	f.Add(strings.Repeat(`{"a":`, cas.MaxDepth) + "1e21" + strings.Repeat("}", cas.MaxDepth))
	f.Add(`[5e-324,-0,1.7976931348623157e308,"\u2028\ud83d\ude00\u0000"]`)
	f.Fuzz(func(t *testing.T, text string) {
		v, err := cas.ParseJSON([]byte(text))
		if err != nil {
			return
		}
		x := newFixture(t)
		tree := x.schema("tree", mustJSON(t, treeSchema))
		if strings.Count(text, "[")+strings.Count(text, "{") > 20 {
			// Deep: see TestPutAcceptedIsRead.
			tree = x.schema("any", mustJSON(t, `{}`))
		}
		h, err := x.repo.Put(x.ctx, tree, v)
		var ve *cas.ValidationError
		if errors.As(err, &ve) || errors.Is(err, cas.ErrNotFound) {
			return // 13 characters that are not a hash, or an edge to nothing
		}
		if err != nil {
			t.Fatalf("Put of a parsed value: %v", err)
		}
		readBack(t, x, tree, h, v)
	})
}

// TestEdgesSkipBranchesWithoutRefs: a payload nested as deep as allowed
// under a recursive branch that cannot hold edges still has its edges
// found beside it (the walker does not validate that branch).
func TestEdgesSkipBranchesWithoutRefs(t *testing.T) {
	f := newFixture(t)
	s, err := cas.CompileSchema(mustJSON(t, `{"type":"object","properties":{
	 "r":{"type":"string","format":"cas_ref"},
	 "v":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/list"},{"type":"string","format":"cas_ref"}]}},
	 "$defs":{"list":{"type":"array","items":{"$ref":"#/$defs/list"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	leaf, other := f.text("leaf"), f.text("other")
	for _, tc := range []struct {
		name    string
		payload any
		want    []string
	}{
		{"deep branch without refs", map[string]any{"r": leaf.String(), "v": nest([]any{}, cas.MaxDepth-2)}, []string{"/r"}},
		{"the branch with a ref", map[string]any{"r": leaf.String(), "v": other.String()}, []string{"/r", "/v"}},
	} {
		var got []string
		for _, e := range s.Edges(tc.payload) {
			got = append(got, e.Path)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: edges at %q, want %q", tc.name, got, tc.want)
		}
	}
}

// BenchmarkEdgesDeep measures finding the edges of a payload nested as
// deep as allowed beside a recursive branch that cannot hold edges.
func BenchmarkEdgesDeep(b *testing.B) {
	doc, err := cas.ParseJSON([]byte(`{"type":"object","properties":{"r":{"type":"string","format":"cas_ref"},
	 "v":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/list"}]}},"$defs":{"list":{"type":"array","items":{"$ref":"#/$defs/list"}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	s, err := cas.CompileSchema(doc)
	if err != nil {
		b.Fatal(err)
	}
	payload := map[string]any{"r": cas.ContentSchema.String(), "v": nest([]any{}, cas.MaxDepth-2)}
	b.ReportAllocs()
	for b.Loop() {
		if len(s.Edges(payload)) != 1 {
			b.Fatal("edges lost")
		}
	}
}
