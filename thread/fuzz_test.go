package thread_test

import (
	"testing"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/thread"
)

// FuzzDecodeNode decodes arbitrary stored nodes as chain nodes: it never
// panics, accepts only chain nodes (start, step, mark; call, join, child
// start, cancelled), and a decoded node
// re-encodes to a payload that decodes to the same chain fields.
func FuzzDecodeNode(f *testing.F) {
	f.Add([]byte(`{"payload":{"workflow":"54YMEB1H6FVZG","prompt":"p","cwd":"/"},"type":"E42MDMFVS6YQF"}`))
	f.Add([]byte(`{"payload":{"start":"54YMEB1H6FVZG","prev":null,"skip":[],"depth":1,"role":"r","output":"54YMEB1H6FVZG","detail":"54YMEB1H6FVZG","agent":"a","startedAt":1,"completedAt":2},"type":"5BF853BQR40GW"}`))
	f.Add([]byte(`{"payload":{"start":"54YMEB1H6FVZG","prev":"54YMEB1H6FVZG","skip":["54YMEB1H6FVZG"],"depth":3,"mark":"done","reason":"x","at":5},"type":"0AHM73AYPZ7WP"}`))
	f.Add([]byte(`{"payload":{"depth":-1,"skip":"x"},"type":"5BF853BQR40GW"}`))
	// Format version 2: call, join, child start, cancelled.
	f.Add([]byte(`{"payload":{"start":"54YMEB1H6FVZG","prev":null,"skip":[],"depth":1,"role":"s","mode":"parallel","branches":[{"key":"a","role":"a","prompt":"p"},{"key":"b","role":"b","prompt":"p"}],"concurrency":2,"timeoutMs":5,"at":3},"type":"6FRQX3SMNB1MX"}`))
	f.Add([]byte(`{"payload":{"start":"54YMEB1H6FVZG","prev":"54YMEB1H6FVZG","skip":[],"depth":2,"call":"54YMEB1H6FVZG","role":"s","output":"54YMEB1H6FVZG","branches":[{"key":"a","head":"54YMEB1H6FVZG","status":"done"}],"at":4},"type":"01C30PS7QVB8E"}`))
	f.Add([]byte(`{"payload":{"call":"54YMEB1H6FVZG","key":"a","workflow":"54YMEB1H6FVZG","role":"a","prompt":"p","cwd":"/"},"type":"4C4M99ZATX46X"}`))
	f.Add([]byte(`{"payload":{"start":"54YMEB1H6FVZG","prev":"54YMEB1H6FVZG","skip":[],"depth":2,"reason":"lost","at":4},"type":"4CE70PDA9J9J2"}`))
	f.Add([]byte(`{"payload":{"start":"54YMEB1H6FVZG","prev":null,"skip":[],"depth":1,"role":"s","mode":"race","branches":["x"],"at":3},"type":"6FRQX3SMNB1MX"}`))
	f.Add([]byte(`{"payload":"hello","type":"54YMEB1H6FVZG"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cn, err := cas.DecodeNode(data)
		if err != nil {
			return
		}
		n, err := thread.DecodeNode(cas.Sum(data), cn)
		if err != nil {
			return
		}
		var payload map[string]any
		switch n.Kind {
		case thread.KindStart:
			payload = n.Start.Payload()
		case thread.KindStep:
			payload = n.Step.Payload()
		case thread.KindMark:
			payload = n.Mark.Payload()
		case thread.KindCall:
			payload = n.Call.Payload()
		case thread.KindJoin:
			payload = n.Join.Payload()
		default:
			t.Fatalf("decoded kind %q", n.Kind)
		}
		n2, err := thread.DecodeNode(n.Hash, cas.Node{Type: cn.Type, Payload: payload})
		if err != nil || n2.Depth() != n.Depth() || n2.StartHash() != n.StartHash() || n2.Status() != n.Status() {
			t.Fatalf("re-decoding %+v: %+v, %v", n, n2, err)
		}
	})
}
