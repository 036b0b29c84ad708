package cas

// SetMemHash replaces the address function of s, so tests can force hash
// collisions. Call it before s is used.
func SetMemHash(s *MemStore, sum func([]byte) Hash) { s.sum = sum }

// DropMemRef removes ref name from r without logging it, as a ref file
// deleted behind the disk store's back would be: its log then says it
// exists while it does not.
func DropMemRef(r *MemRefs, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(name)
}

// AddTestKind registers a built-in schema of format version 2 named name
// with the given JSON Schema payload, as an issue adding a kind appends to
// versionTwo, until the test ends. It returns the schema's hash. Tests
// that call it must not run in parallel with others.
func AddTestKind(t interface {
	Helper()
	Fatal(...any)
	Cleanup(func())
}, name, payload string) Hash {
	t.Helper()
	v, err := ParseJSON([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	data, err := (Node{Type: MetaSchema, Payload: v}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	b := Builtin{Name: name, Hash: Sum(data), Node: data, Version: FormatV2}
	n := len(builtinList())
	builtins = append(builtins[:n:n], b)
	t.Cleanup(func() { builtins = builtins[:n:n] })
	return b.Hash
}
