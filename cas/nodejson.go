package cas

import "encoding/json"

// NodeJSON is a node as `uwf cas get --json` prints it and the HTTP API's
// GET /api/v1/nodes/{hash} answers it (with its edges there): its hash,
// its type and its payload as canonical JSON.
type NodeJSON struct {
	Hash    Hash            `json:"hash"`
	Type    Hash            `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// JSON returns node n, whose hash is h, as [NodeJSON].
func (n Node) JSON(h Hash) (*NodeJSON, error) {
	payload, err := Canonical(n.Payload)
	if err != nil {
		return nil, err
	}
	return &NodeJSON{Hash: h, Type: n.Type, Payload: payload}, nil
}
