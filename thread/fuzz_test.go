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

// FuzzDecodeRun decodes arbitrary stored nodes as run and slot records:
// it never panics, accepts only run (slot) nodes, and a record that
// decodes cleanly re-encodes to a payload that decodes to the same record.
func FuzzDecodeRun(f *testing.F) {
	f.Add([]byte(`{"payload":{"thread":"01JGJFGR4E0000000000000001","workflow":"w","state":"running","worker":"w1","expiry":5,"attempt":1,"failures":0,"agent":"","cwd":"/","whyNotClaimed":"","error":"","at":1},"type":"C4K2R9MFVZ2ZE"}`))
	f.Add([]byte(`{"payload":{"workflow":"w","index":0,"thread":"","worker":"","expiry":0,"at":1},"type":"E8ZCATNQ4EQ7K"}`))
	f.Add([]byte(`{"payload":{"state":7,"attempt":"x"},"type":"C4K2R9MFVZ2ZE"}`))
	f.Add([]byte(`{"payload":"hello","type":"54YMEB1H6FVZG"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cn, err := cas.DecodeNode(data)
		if err != nil {
			return
		}
		h := cas.Sum(data)
		if r, err := thread.DecodeRun(h, cn); err == nil {
			if cn.Type != cas.RunSchema {
				t.Fatalf("decoded a run from a node of type %s", cn.Type)
			}
			r2, err := thread.DecodeRun(h, cas.Node{Type: cn.Type, Payload: r.Payload()})
			if err != nil || *r2 != *r {
				t.Fatalf("round trip: %+v, %v; want %+v", r2, err, r)
			}
		}
		if s, err := thread.DecodeSlot(h, cn); err == nil {
			if cn.Type != cas.SlotSchema {
				t.Fatalf("decoded a slot from a node of type %s", cn.Type)
			}
			s2, err := thread.DecodeSlot(h, cas.Node{Type: cn.Type, Payload: s.Payload()})
			if err != nil || *s2 != *s {
				t.Fatalf("round trip: %+v, %v; want %+v", s2, err, s)
			}
		}
	})
}
