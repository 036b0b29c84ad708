package cas_test

import (
	"bytes"
	"testing"

	"github.com/uncaged/uwf/cas"
)

// FuzzDecodeNode feeds stored bytes to the node decoder: it never panics,
// and a node it accepts re-encodes to bytes that decode to the same node.
func FuzzDecodeNode(f *testing.F) {
	for _, b := range cas.Builtins() {
		f.Add(b.Node)
	}
	f.Add([]byte(`{"payload":"hello","type":"54YMEB1H6FVZG"}`))
	f.Add([]byte(`{"type":"54YMEB1H6FVZG","payload":"x"}`))
	f.Add([]byte(`{"payload":null,"type":"0000000000000"}`))
	f.Add([]byte(`{"payload":1,"type":"54ymeb1h6fvzg"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := cas.DecodeNode(data)
		if err != nil {
			return
		}
		b, err := n.Encode()
		if err != nil {
			t.Fatalf("Encode(DecodeNode(%q)): %v", data, err)
		}
		n2, err := cas.DecodeNode(b)
		if err != nil || n2.Type != n.Type {
			t.Fatalf("DecodeNode(Encode(...)) = %v, %v", n2, err)
		}
		b2, _ := n2.Encode()
		if !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding differs: %q vs %q", b, b2)
		}
		if cas.IsCanonicalNode(data, n) != bytes.Equal(data, b) {
			t.Fatalf("IsCanonicalNode disagrees with the encoder on %q", data)
		}
	})
}

// FuzzPutGet: any text put as a content node comes back byte for byte, and
// its stored bytes are canonical.
func FuzzPutGet(f *testing.F) {
	f.Add("hello")
	f.Add("")
	f.Add("\u2028\x00\"\\")
	f.Add("\xff")
	f.Fuzz(func(t *testing.T, s string) {
		mem := cas.NewMemStore(nil)
		repo, err := cas.Open(t.Context(), mem, mem.Refs(), nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := repo.Put(t.Context(), cas.ContentSchema, s)
		if err != nil {
			return // invalid UTF-8 is refused
		}
		n, err := repo.Get(t.Context(), h)
		if err != nil || n.Payload != s || n.Type != cas.ContentSchema {
			t.Fatalf("Get(Put(%q)) = %v, %v", s, n, err)
		}
		data, _ := mem.Get(t.Context(), h)
		if !cas.IsCanonicalNode(data, n) {
			t.Fatalf("stored bytes %q are not canonical", data)
		}
	})
}
