package cas_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/cas/castest"
)

// clock is a test clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	clock *clock
	mem   *cas.MemStore
	repo  *cas.Repo
}

// newFixture opens a Repo over a fresh memory store with a fixed clock, and
// re-hashes every object when the test ends.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	mem := cas.NewMemStore(&cas.MemOptions{Now: c.Now})
	repo, err := cas.Open(t.Context(), mem, mem.Refs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: t.Context(), clock: c, mem: mem, repo: repo}
	return f
}

func (f *fixture) verifyOnCleanup() {
	f.t.Cleanup(func() { castest.Verify(f.t, f.mem) })
}

func (f *fixture) schema(name string, doc any) cas.Hash {
	f.t.Helper()
	h, err := f.repo.PutSchema(f.ctx, name, doc)
	if err != nil {
		f.t.Fatalf("PutSchema(%s): %v", name, err)
	}
	return h
}

func (f *fixture) put(typ cas.Hash, payload any) cas.Hash {
	f.t.Helper()
	h, err := f.repo.Put(f.ctx, typ, payload)
	if err != nil {
		f.t.Fatalf("Put(%s, %v): %v", typ, payload, err)
	}
	return h
}

func (f *fixture) text(s string) cas.Hash { return f.put(cas.ContentSchema, s) }

func (f *fixture) has(h cas.Hash) bool {
	f.t.Helper()
	ok, err := f.mem.Has(f.ctx, h)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

func (f *fixture) setRef(name string, h cas.Hash) {
	f.t.Helper()
	cur, err := f.repo.Refs().Get(f.ctx, name)
	if err != nil && !errors.Is(err, cas.ErrNotFound) {
		f.t.Fatal(err)
	}
	if err := f.repo.Refs().CompareAndSwap(f.ctx, name, cur, h, "test"); err != nil {
		f.t.Fatal(err)
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := cas.ParseJSON([]byte(s))
	if err != nil {
		t.Fatalf("ParseJSON(%s): %v", s, err)
	}
	return v
}

// noteSchema: a title, a body (a content node) and links to other notes.
const noteSchema = `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string","format":"cas_ref"},
 "links":{"type":"array","items":{"type":"string","format":"cas_ref"}}},"required":["title","body"],"additionalProperties":false}`

func TestOpenStoresBuiltins(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	for _, b := range cas.BuiltinsAt(cas.FormatV1) {
		data, err := f.mem.Get(f.ctx, b.Hash)
		if err != nil || string(data) != string(b.Node) {
			t.Errorf("built-in %s: Get = %q, %v", b.Name, data, err)
		}
		h, err := f.mem.Refs().Get(f.ctx, "schemas/"+b.Name)
		if err != nil || h != b.Hash {
			t.Errorf("ref schemas/%s = %v, %v; want %v", b.Name, h, err, b.Hash)
		}
	}
	// A second Open changes nothing: no new log entries.
	before, _ := f.mem.Refs().Log(f.ctx, "schemas/content")
	if _, err := cas.Open(f.ctx, f.mem, f.mem.Refs(), nil); err != nil {
		t.Fatal(err)
	}
	after, _ := f.mem.Refs().Log(f.ctx, "schemas/content")
	if len(before) != 1 || len(after) != 1 {
		t.Errorf("log of schemas/content: %d entries before the second Open, %d after; want 1 and 1", len(before), len(after))
	}
	// Open of a damaged store writes nothing: a corrupt built-in stays
	// corrupt and a moved built-in ref stays moved (fsck reports them; see
	// TestDamagedBuiltins).
	f.mem.Corrupt(cas.StepSchema, []byte("garbage"))
	x := f.text("x")
	if err := f.mem.Refs().CompareAndSwap(f.ctx, "schemas/step", cas.StepSchema, x, "vandal"); err != nil {
		t.Fatal(err)
	}
	if _, err := cas.Open(f.ctx, f.mem, f.mem.Refs(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mem.Get(f.ctx, cas.StepSchema); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("step schema after re-Open: %v, want it still corrupt", err)
	}
	if h, _ := f.mem.Refs().Get(f.ctx, "schemas/step"); h != x {
		t.Errorf("schemas/step after re-Open = %v, want it still at %v", h, x)
	}
	if _, err := f.repo.RepairBuiltins(f.ctx); err != nil { // for verifyOnCleanup
		t.Fatal(err)
	}
}

func TestMetaSchemaNode(t *testing.T) {
	f := newFixture(t)
	meta := cas.MetaSchemaNode()
	if cas.Sum(meta) != cas.MetaSchema {
		t.Fatalf("Sum(meta node) = %v, want %v", cas.Sum(meta), cas.MetaSchema)
	}
	n, err := cas.DecodeNode(meta)
	if err != nil || !n.Type.IsZero() {
		t.Fatalf("DecodeNode(meta) = %+v, %v", n, err)
	}
	// Re-putting it through the typed layer works and has no edges.
	h, err := f.repo.PutNode(f.ctx, n)
	if err != nil || h != cas.MetaSchema {
		t.Errorf("PutNode(meta) = %v, %v", h, err)
	}
	if edges, err := f.repo.Edges(f.ctx, n); err != nil || len(edges) != 0 {
		t.Errorf("Edges(meta) = %v, %v; want none", edges, err)
	}
	// No other node may have the zero type.
	_, err = f.repo.Put(f.ctx, 0, map[string]any{"type": "object"})
	if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "zero type") {
		t.Errorf("Put(zero type, other payload) = %v, want ErrInvalid about the zero type", err)
	}
	// A schema node's only edge is the meta-schema.
	edges, err := f.repo.Edges(f.ctx, cas.Node{Type: cas.MetaSchema, Payload: mustJSON(t, noteSchema)})
	if err != nil || !slices.Equal(edges, []cas.Edge{{Hash: cas.MetaSchema, Path: "type"}}) {
		t.Errorf("Edges(schema node) = %v, %v", edges, err)
	}
}

func TestCompileSchemaRejects(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}`, "only draft 2020-12"},
		{"nested draft-04", `{"properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#"}}}`, "at /properties/a"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "remote and file loading are off"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "remote and file loading are off"},
		{"relative file ref", `{"$ref":"other.json"}`, "remote and file loading are off"},
		{"not a schema", `{"type":12}`, "not a valid JSON Schema"},
		{"a string", `"hello"`, "a JSON object or a boolean"},
		{"bad pattern", `{"pattern":"("}`, "not a valid JSON Schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cas.CompileSchema(mustJSON(t, tc.schema))
			if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CompileSchema(%s) = %v, want ErrInvalid containing %q", tc.schema, err, tc.want)
			}
		})
	}
	if _, err := cas.CompileSchema(mustJSON(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"string"}`)); err != nil {
		t.Errorf("CompileSchema(draft 2020-12) = %v", err)
	}
}

func TestCasRefPlacement(t *testing.T) {
	const ref = `{"type":"string","format":"cas_ref"}`
	rejected := map[string]string{
		"not":                   `{"not":` + ref + `}`,
		"contains":              `{"contains":` + ref + `}`,
		"propertyNames":         `{"propertyNames":` + ref + `}`,
		"dependentSchemas":      `{"dependentSchemas":{"a":{"properties":{"b":` + ref + `}}}}`,
		"unevaluatedProperties": `{"unevaluatedProperties":` + ref + `}`,
		"unevaluatedItems":      `{"unevaluatedItems":` + ref + `}`,
		"contentSchema":         `{"contentMediaType":"application/json","contentSchema":` + ref + `}`,
		"not via ref":           `{"not":{"$ref":"#/$defs/r"},"$defs":{"r":` + ref + `}}`,
		"dynamicRef":            `{"properties":{"a":{"$dynamicRef":"#/$defs/d"}},"$defs":{"d":` + ref + `}}`,
		"unknown keyword":       `{"x-extra":{"deep":` + ref + `}}`,
		"deep under not":        `{"properties":{"a":{"items":{"not":{"anyOf":[` + ref + `]}}}}}`,
	}
	for name, s := range rejected {
		t.Run("reject "+name, func(t *testing.T) {
			_, err := cas.CompileSchema(mustJSON(t, s))
			if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "edges are not followed") {
				t.Errorf("CompileSchema(%s) = %v, want a rejection of cas_ref where edges are not followed", s, err)
			}
		})
	}
	accepted := map[string]string{
		"properties":            `{"properties":{"a":` + ref + `}}`,
		"patternProperties":     `{"patternProperties":{"^x":` + ref + `}}`,
		"additionalProperties":  `{"additionalProperties":` + ref + `}`,
		"items":                 `{"items":` + ref + `}`,
		"prefixItems":           `{"prefixItems":[` + ref + `]}`,
		"$ref/$defs":            `{"$ref":"#/$defs/r","$defs":{"r":` + ref + `}}`,
		"anyOf":                 `{"anyOf":[` + ref + `,{"type":"number"}]}`,
		"oneOf":                 `{"oneOf":[` + ref + `,{"type":"number"}]}`,
		"allOf":                 `{"allOf":[` + ref + `]}`,
		"if/then/else":          `{"if":{"type":"string"},"then":` + ref + `,"else":{"type":"number"}}`,
		"data keywords skipped": `{"const":{"format":"cas_ref"},"default":{"format":"cas_ref"},"properties":{"a":` + ref + `}}`,
	}
	for name, s := range accepted {
		t.Run("accept "+name, func(t *testing.T) {
			sc, err := cas.CompileSchema(mustJSON(t, s))
			if err != nil || !sc.HasEdges() {
				t.Errorf("CompileSchema(%s) = %v (HasEdges %v), want accepted with edges", s, err, sc != nil && sc.HasEdges())
			}
		})
	}
}

func TestSchemaEdges(t *testing.T) {
	a, b, c := cas.Sum([]byte("a")).String(), cas.Sum([]byte("b")).String(), cas.Sum([]byte("c")).String()
	tests := []struct {
		name, schema, value string
		want                []string // "hash path"
	}{
		{"properties", `{"properties":{"x":{"format":"cas_ref"},"y":{"type":"string"}}}`,
			`{"x":"` + a + `","y":"` + b + `"}`, []string{a + " /x"}},
		{"nested items sorted by index", `{"properties":{"l":{"items":{"format":"cas_ref"}}}}`,
			`{"l":["` + a + `","` + b + `","` + a + `"]}`, []string{a + " /l/0", b + " /l/1"}},
		{"pattern and additional", `{"patternProperties":{"^r":{"format":"cas_ref"}},"additionalProperties":{"format":"cas_ref"},"properties":{"p":{"type":"string"}}}`,
			`{"r1":"` + a + `","z":"` + b + `","p":"` + c + `"}`, []string{a + " /r1", b + " /z"}},
		{"prefixItems then items", `{"prefixItems":[{"type":"string"}],"items":{"format":"cas_ref"}}`,
			`["` + a + `","` + b + `"]`, []string{b + " /1"}},
		{"anyOf only the matching branch", `{"anyOf":[{"type":"object","required":["k"],"properties":{"k":{"const":1},"v":{"format":"cas_ref"}}},{"type":"object","properties":{"k":{"const":2},"w":{"format":"cas_ref"}}}]}`,
			`{"k":2,"v":"` + a + `","w":"` + b + `"}`, []string{b + " /w"}},
		{"oneOf by status", `{"oneOf":[{"properties":{"s":{"const":"x"},"r":{"format":"cas_ref"}},"required":["s"]},{"properties":{"s":{"const":"y"}},"required":["s"]}]}`,
			`{"s":"y","r":"` + a + `"}`, nil},
		{"if then", `{"if":{"properties":{"t":{"const":"ref"}}},"then":{"properties":{"v":{"format":"cas_ref"}}},"else":{"properties":{"w":{"format":"cas_ref"}}}}`,
			`{"t":"ref","v":"` + a + `","w":"` + b + `"}`, []string{a + " /v"}},
		{"if else", `{"if":{"properties":{"t":{"const":"ref"}}},"then":{"properties":{"v":{"format":"cas_ref"}}},"else":{"properties":{"w":{"format":"cas_ref"}}}}`,
			`{"t":"no","v":"` + a + `","w":"` + b + `"}`, []string{b + " /w"}},
		{"ref and defs, recursive", `{"$ref":"#/$defs/n","$defs":{"n":{"properties":{"h":{"format":"cas_ref"},"kids":{"items":{"$ref":"#/$defs/n"}}}}}}`,
			`{"h":"` + a + `","kids":[{"h":"` + b + `","kids":[{"h":"` + c + `"}]}]}`, []string{a + " /h", b + " /kids/0/h", c + " /kids/0/kids/0/h"}},
		{"payload itself", `{"format":"cas_ref"}`, `"` + a + `"`, []string{a + " "}},
		{"escaped key", `{"additionalProperties":{"format":"cas_ref"}}`, `{"a/b~c":"` + a + `"}`, []string{a + " /a~1b~0c"}},
		{"allOf", `{"allOf":[{"properties":{"x":{"format":"cas_ref"}}},{"properties":{"y":{"format":"cas_ref"}}}]}`,
			`{"y":"` + b + `","x":"` + a + `"}`, []string{a + " /x", b + " /y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := cas.CompileSchema(mustJSON(t, tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range s.Edges(mustJSON(t, tc.value)) {
				got = append(got, e.Hash.String()+" "+e.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Edges(%s) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

func TestPutValidatesAndChecksEdges(t *testing.T) {
	f := newFixture(t)
	f.verifyOnCleanup()
	note := f.schema("note", mustJSON(t, noteSchema))
	hello := f.text("hello")

	// A schema violation names the path, the value and the schema path.
	_, err := f.repo.Put(f.ctx, note, map[string]any{"title": 5.0, "body": hello.String()})
	var ve *cas.ValidationError
	if !errors.As(err, &ve) || ve.Schema != note {
		t.Fatalf("Put(bad title) = %v, want a *ValidationError for schema %v", err, note)
	}
	for _, want := range []string{"at /title", "value 5", "schema /properties/title/type", note.String()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// A non-canonical hash in a cas_ref field is a format violation.
	_, err = f.repo.Put(f.ctx, note, map[string]any{"title": "t", "body": strings.ToLower(hello.String())})
	if !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "/body") {
		t.Errorf("Put(lower-case hash) = %v, want ErrInvalid at /body", err)
	}
	// An absent edge is an *EdgeError naming where it stands.
	absent := cas.Sum([]byte("absent"))
	_, err = f.repo.Put(f.ctx, note, map[string]any{"title": "t", "body": hello.String(), "links": []any{absent.String()}})
	var ee *cas.EdgeError
	if !errors.As(err, &ee) || ee.Edge != absent || ee.Path != "payload/links/0" || !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Put(absent link) = %v, want an EdgeError for payload/links/0", err)
	}
	// An absent type is not found.
	if _, err := f.repo.Put(f.ctx, absent, "x"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Put(absent type) = %v, want ErrNotFound", err)
	}
	// A type that is not a schema node.
	if _, err := f.repo.Put(f.ctx, hello, "x"); !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "not a schema node") {
		t.Errorf("Put(type = a content node) = %v, want ErrInvalid: not a schema node", err)
	}
	// The size limit.
	small, err := cas.Open(f.ctx, f.mem, f.mem.Refs(), &cas.Options{MaxNodeSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Put(f.ctx, cas.ContentSchema, strings.Repeat("x", 64)); !errors.Is(err, cas.ErrTooLarge) {
		t.Errorf("Put(oversized) = %v, want ErrTooLarge", err)
	}
	// Nothing of the failures was stored: only built-ins, note, hello.
	n := 0
	for range f.mem.All(f.ctx) {
		n++
	}
	if want := len(cas.BuiltinsAt(cas.FormatV1)) + 2; n != want {
		t.Errorf("store holds %d objects, want %d", n, want)
	}
	// A good one: edges in path order, type first.
	h := f.put(note, map[string]any{"title": "t", "body": hello.String(), "links": []any{hello.String()}})
	nd, err := f.repo.Get(f.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	edges, err := f.repo.Edges(f.ctx, nd)
	want := []cas.Edge{{Hash: note, Path: "type"}, {Hash: hello, Path: "payload/body"}}
	if err != nil || !slices.Equal(edges, want) {
		t.Errorf("Edges = %v, %v; want %v", edges, err, want)
	}
}

func TestPutRefreshesEdges(t *testing.T) {
	f := newFixture(t)
	note := f.schema("note", mustJSON(t, noteSchema))
	hello := f.text("hello")
	f.clock.Advance(2 * time.Hour)
	f.put(note, map[string]any{"title": "t", "body": hello.String()})
	ages := map[cas.Hash]time.Time{}
	for o, err := range f.mem.All(f.ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ages[o.Hash] = o.Time
	}
	if !ages[hello].Equal(f.clock.Now()) || !ages[note].Equal(f.clock.Now()) {
		t.Errorf("after a Put naming them, hello's age is %v and note's %v; want both %v", ages[hello], ages[note], f.clock.Now())
	}
}

func TestPutEach(t *testing.T) {
	f := newFixture(t)
	note := f.schema("note", mustJSON(t, noteSchema))
	body := cas.Node{Type: cas.ContentSchema, Payload: "body"}
	bh, _ := body.Hash()
	parent := cas.Node{Type: note, Payload: map[string]any{"title": "p", "body": bh.String()}}
	bad := cas.Node{Type: note, Payload: map[string]any{"title": 1.0}}
	later := cas.Node{Type: cas.ContentSchema, Payload: "later"}
	lh, _ := later.Hash()
	early := cas.Node{Type: note, Payload: map[string]any{"title": "e", "body": lh.String()}}

	hs, errs := f.repo.PutEach(f.ctx, []cas.Node{body, parent, bad, early, later, body})
	if errs[0] != nil || errs[1] != nil || errs[4] != nil || errs[5] != nil {
		t.Fatalf("PutEach errors = %v", errs)
	}
	if !errors.Is(errs[2], cas.ErrInvalid) {
		t.Errorf("bad node: %v, want ErrInvalid", errs[2])
	}
	var ee *cas.EdgeError
	if !errors.As(errs[3], &ee) || ee.Edge != lh {
		t.Errorf("a node naming a later node of the batch: %v, want an EdgeError for %v", errs[3], lh)
	}
	if hs[0] != bh || hs[5] != bh || !f.has(hs[1]) || !f.has(lh) {
		t.Errorf("PutEach hashes %v: stored nodes missing", hs)
	}
	if _, err := f.repo.PutNodes(f.ctx, []cas.Node{body, bad}); !errors.Is(err, cas.ErrInvalid) || !strings.Contains(err.Error(), "node 2 of 2") {
		t.Errorf("PutNodes with a bad node = %v", err)
	}
}

func TestResolveTypeAndPutSchema(t *testing.T) {
	f := newFixture(t)
	note := f.schema("note", mustJSON(t, noteSchema))
	hello := f.text("hello")
	tests := []struct {
		in   string
		want cas.Hash
		err  error
	}{
		{"note", note, nil},
		{"content", cas.ContentSchema, nil},
		{"meta", cas.MetaSchema, nil},
		{cas.MetaSchema.String(), cas.MetaSchema, nil},
		{strings.ToLower(note.String()), note, nil},
		{"nope", 0, cas.ErrNotFound},
		{cas.Sum([]byte("x")).String(), 0, cas.ErrNotFound},
		{hello.String(), 0, cas.ErrInvalid},
		{"../x", 0, cas.ErrInvalidHash},
		{"", 0, cas.ErrInvalidHash},
	}
	for _, tc := range tests {
		got, err := f.repo.ResolveType(f.ctx, tc.in)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("ResolveType(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	// Reserved, idempotent, clashing.
	if _, err := f.repo.PutSchema(f.ctx, "content", true); !errors.Is(err, cas.ErrInvalid) {
		t.Errorf("PutSchema(content) = %v, want ErrInvalid (reserved)", err)
	}
	log1, _ := f.mem.Refs().Log(f.ctx, "schemas/note")
	if h := f.schema("note", mustJSON(t, noteSchema)); h != note {
		t.Errorf("re-PutSchema = %v, want %v", h, note)
	}
	log2, _ := f.mem.Refs().Log(f.ctx, "schemas/note")
	if len(log1) != 1 || len(log2) != 1 || log2[0].Message != "schema put note" {
		t.Errorf("schemas/note log %v then %v; want one entry \"schema put note\"", log1, log2)
	}
	for _, name := range []string{"Note", "note/sub"} {
		if _, err := f.repo.PutSchema(f.ctx, name, true); !errors.Is(err, cas.ErrConflict) {
			t.Errorf("PutSchema(%s) = %v, want a conflict with note", name, err)
		}
	}
}

func TestRefsRequirePresentTarget(t *testing.T) {
	f := newFixture(t)
	absent := cas.Sum([]byte("absent"))
	if err := f.repo.Refs().CompareAndSwap(f.ctx, "x", 0, absent, "m"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("moving a ref to an absent node = %v, want ErrNotFound", err)
	}
	if _, err := f.mem.Refs().Get(f.ctx, "x"); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("the ref was created anyway: %v", err)
	}
	h := f.text("old")
	f.clock.Advance(3 * time.Hour)
	f.setRef("x", h)
	for o := range f.mem.All(f.ctx) {
		if o.Hash == h && !o.Time.Equal(f.clock.Now()) {
			t.Errorf("target age %v after a ref move at %v", o.Time, f.clock.Now())
		}
	}
}

func TestWalk(t *testing.T) {
	f := newFixture(t)
	note := f.schema("note", mustJSON(t, noteSchema))
	hello := f.text("hello")
	n1 := f.put(note, map[string]any{"title": "1", "body": hello.String()})
	n2 := f.put(note, map[string]any{"title": "2", "body": hello.String(), "links": []any{n1.String()}})
	var got []cas.Hash
	err := f.repo.Walk(f.ctx, []cas.Hash{n2}, func(h cas.Hash, n cas.Node, edges []cas.Hash) error {
		got = append(got, h)
		return nil
	})
	want := []cas.Hash{n2, note, hello, n1, cas.MetaSchema, cas.ContentSchema}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk = %v, %v; want %v", got, err, want)
	}
	f.mem.Corrupt(n1, []byte("x"))
	err = f.repo.Walk(f.ctx, []cas.Hash{n2}, func(cas.Hash, cas.Node, []cas.Hash) error { return nil })
	if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), n1.String()) || !strings.Contains(err.Error(), "reached from "+n2.String()) {
		t.Errorf("Walk over a corrupt node = %v", err)
	}
}

// TestDeepEdges: an edge far down a recursive schema (each payload level
// costing several schema levels) is still found: Put refuses it absent.
func TestDeepEdges(t *testing.T) {
	f := newFixture(t)
	doc := map[string]any{
		"$ref": "#/$defs/n",
		"$defs": map[string]any{
			"n": map[string]any{"allOf": []any{map[string]any{"$ref": "#/$defs/m"}}},
			"m": map[string]any{"type": "object", "properties": map[string]any{
				"next": map[string]any{"$ref": "#/$defs/n"},
				"ref":  map[string]any{"type": "string", "format": "cas_ref"},
			}},
		},
	}
	s := f.schema("deep", doc)
	absent := cas.Sum([]byte("never stored"))
	var v any = map[string]any{"ref": absent.String()}
	for range 900 {
		v = map[string]any{"next": v}
	}
	var ee *cas.EdgeError
	if _, err := f.repo.Put(f.ctx, s, v); !errors.As(err, &ee) || ee.Edge != absent {
		t.Errorf("Put of a node whose edge 900 levels down is absent = %v, want an EdgeError for %v", err, absent)
	}
	sc, err := f.repo.Schema(f.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if edges := sc.Edges(v); len(edges) != 1 || edges[0].Hash != absent {
		t.Errorf("Edges found %v", edges)
	}
}

// TestDollarSchemaAsData: "$schema" as a property name or inside a data
// keyword is not a dialect declaration.
func TestDollarSchemaAsData(t *testing.T) {
	for _, doc := range []string{
		`{"type":"object","properties":{"$schema":{"type":"string"}}}`,
		`{"const":{"$schema":"http://json-schema.org/draft-07/schema#"}}`,
		`{"default":{"$schema":"x"}}`,
		`{"$defs":{"$schema":{"type":"string"}}}`,
	} {
		if _, err := cas.CompileSchema(mustJSON(t, doc)); err != nil {
			t.Errorf("CompileSchema(%s) = %v", doc, err)
		}
	}
}
