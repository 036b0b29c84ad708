package cas

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxNodeSize is the default limit on one node's encoded size: 16 MiB.
const DefaultMaxNodeSize = 16 << 20

// Node is the unit of the store: a payload and the hash of the schema node
// it is valid against. Its stored bytes are the canonical JSON (RFC 8785) of
// {"payload": Payload, "type": Type}, and its address is their [Sum].
//
// Payload holds plain JSON values as [ParseJSON] returns them (nil, bool,
// float64, string, []any, map[string]any); [Node.Encode] also accepts the Go
// values [Canonical] does.
type Node struct {
	Type    Hash
	Payload any
}

// Encode returns the node's canonical bytes. The error wraps [ErrInvalid] if
// the payload cannot be encoded (a NaN, invalid UTF-8, an unsupported type).
func (n Node) Encode() ([]byte, error) {
	return n.AppendEncode(make([]byte, 0, 128))
}

// AppendEncode appends the node's canonical bytes to dst.
func (n Node) AppendEncode(dst []byte) ([]byte, error) {
	dst = append(dst, `{"payload":`...)
	dst, err := AppendCanonical(dst, n.Payload)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"type":"`...)
	dst = n.Type.AppendText(dst)
	return append(dst, `"}`...), nil
}

// Hash returns the node's address: the hash of its canonical bytes.
func (n Node) Hash() (Hash, error) {
	b, err := n.Encode()
	if err != nil {
		return 0, err
	}
	return Sum(b), nil
}

// AppendText appends the hash's 13-character text form to b.
func (h Hash) AppendText(b []byte) []byte {
	var t [HashLen]byte
	h.put(t[:])
	return append(b, t[:]...)
}

// DecodeNode parses a node's stored bytes. It checks the envelope (an object
// with exactly "payload" and "type", the type a canonical hash) but not that
// the bytes are canonical ([IsCanonicalNode]) or the payload valid. The
// payload may be nested [MaxDepth] levels deep, as [Repo.Put] accepts: the
// envelope is one level more, so the node may be MaxDepth+1. The error
// wraps [ErrInvalid].
func DecodeNode(data []byte) (Node, error) {
	v, err := parseJSON(data, MaxDepth+1)
	if err != nil {
		return Node{}, fmt.Errorf("decode node: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Node{}, fmt.Errorf("decode node: %w: not a JSON object", ErrInvalid)
	}
	payload, ok := m["payload"]
	if !ok {
		return Node{}, fmt.Errorf("decode node: %w: no \"payload\"", ErrInvalid)
	}
	ts, ok := m["type"].(string)
	if !ok {
		return Node{}, fmt.Errorf("decode node: %w: \"type\" is missing or not a string", ErrInvalid)
	}
	if len(m) != 2 {
		for k := range m {
			if k != "payload" && k != "type" {
				return Node{}, fmt.Errorf("decode node: %w: unexpected field %q", ErrInvalid, k)
			}
		}
	}
	t, err := ParseCanonicalHash(ts)
	if err != nil {
		return Node{}, fmt.Errorf("decode node: type: %w", err)
	}
	return Node{Type: t, Payload: payload}, nil
}

// IsCanonicalNode reports whether data is exactly the canonical encoding of
// the node it decodes to.
func IsCanonicalNode(data []byte, n Node) bool {
	b, err := n.Encode()
	return err == nil && bytes.Equal(b, data)
}

// Edge is one edge of the Merkle graph: a hash a node refers to, and where
// it stands. For [Schema.Edges] Path is a JSON pointer below the payload
// ("" for the payload itself, "/links/0"); for [Repo.Edges] it is "type" for
// the node's type and "payload" followed by that pointer for the rest
// ("payload/links/0").
type Edge struct {
	Hash Hash   `json:"hash"` // as `uwf cas refs --json` and the HTTP API print it
	Path string `json:"path"`
}

// EdgeError reports an edge whose target is not in the store, found when
// putting a node that refers to it. It wraps [ErrNotFound].
type EdgeError struct {
	Edge Hash   // the missing target
	Path string // where the node refers to it, as in [Repo.Edges]
}

func (e *EdgeError) Error() string {
	return fmt.Sprintf("edge %s -> %s is not in the store", e.Path, e.Edge)
}

// Unwrap returns [ErrNotFound].
func (e *EdgeError) Unwrap() error { return ErrNotFound }

// ReadLimited reads r to its end, refusing more than limit bytes: as soon as
// more arrive it stops reading and returns an error wrapping [ErrTooLarge].
func ReadLimited(r io.Reader, limit int64) ([]byte, error) {
	var b bytes.Buffer
	n, err := b.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: more than the limit of %d bytes", ErrTooLarge, limit)
	}
	return b.Bytes(), nil
}

// errorsIsAny reports whether err matches any of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
