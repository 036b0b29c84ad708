package cas

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Hash is the address of an object: XXH64 (seed 0) of its canonical bytes.
// Hashes are comparable and may be used as map keys. The zero Hash means
// "none": no parent, a create-only compare-and-swap, a deleted ref.
//
// Its text form is exactly 13 characters of Crockford Base32, big-endian,
// read as a 65-bit number with one leading zero bit, so the first character
// is always 0-F.
type Hash uint64

// HashLen is the length of a hash's text form.
const HashLen = 13

// Alphabet is the Crockford Base32 alphabet of a hash's canonical text form.
const Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

const crockford = Alphabet

// decodeTable maps an input byte to its 5-bit value, or 0xFF if the byte is
// not a Crockford digit. Lower case is accepted, and O->0, I/L->1 as
// Crockford specifies. canonTable accepts only the canonical upper-case form.
var decodeTable, canonTable [256]byte

func init() {
	for i := range decodeTable {
		decodeTable[i] = 0xFF
		canonTable[i] = 0xFF
	}
	for i := 0; i < len(crockford); i++ {
		c := crockford[i]
		decodeTable[c] = byte(i)
		canonTable[c] = byte(i)
		if c >= 'A' && c <= 'Z' {
			decodeTable[c+'a'-'A'] = byte(i)
		}
	}
	decodeTable['O'], decodeTable['o'] = 0, 0
	decodeTable['I'], decodeTable['i'] = 1, 1
	decodeTable['L'], decodeTable['l'] = 1, 1
}

// Sum returns the hash of data: XXH64 with seed 0.
func Sum(data []byte) Hash { return Hash(xxhash.Sum64(data)) }

// String returns the 13-character upper-case text form.
func (h Hash) String() string {
	var b [HashLen]byte
	h.put(b[:])
	return string(b[:])
}

func (h Hash) put(b []byte) {
	v := uint64(h)
	for i := HashLen - 1; i >= 0; i-- {
		b[i] = crockford[v&31]
		v >>= 5
	}
}

// IsZero reports whether h is the zero hash ("none").
func (h Hash) IsZero() bool { return h == 0 }

// MarshalText implements [encoding.TextMarshaler]; JSON and YAML use it.
func (h Hash) MarshalText() ([]byte, error) {
	b := make([]byte, HashLen)
	h.put(b)
	return b, nil
}

// UnmarshalText implements [encoding.TextUnmarshaler] with the tolerant
// rules of [ParseHash].
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := parse(b, &decodeTable)
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// ParseHash parses user input (a CLI argument, an API string): exactly 13
// characters, case-insensitive, with Crockford's O->0 and I/L->1. Any other
// input is an error wrapping [ErrInvalidHash] that names it. A parsed hash
// is a number, so it can never form a path outside the store.
func ParseHash(s string) (Hash, error) { return parse([]byte(s), &decodeTable) }

// ParseCanonicalHash parses a hash as it must appear inside stored nodes and
// files: exactly the 13 upper-case characters [Hash.String] produces.
func ParseCanonicalHash(s string) (Hash, error) { return parse([]byte(s), &canonTable) }

// IsCanonicalHash reports whether s is a hash in canonical text form.
func IsCanonicalHash(s string) bool {
	_, err := ParseCanonicalHash(s)
	return err == nil
}

func parse(b []byte, table *[256]byte) (Hash, error) {
	if len(b) != HashLen {
		return 0, &HashError{Input: string(b), Reason: fmt.Sprintf("has %d characters, want %d", len(b), HashLen)}
	}
	var v uint64
	for i, c := range b {
		d := table[c]
		if d == 0xFF {
			reason := fmt.Sprintf("invalid character %q at position %d", c, i+1)
			if table == &canonTable && decodeTable[c] != 0xFF {
				reason = fmt.Sprintf("non-canonical character %q at position %d (stored hashes are upper case)", c, i+1)
			}
			return 0, &HashError{Input: string(b), Reason: reason}
		}
		if i == 0 && d > 15 {
			return 0, &HashError{Input: string(b), Reason: fmt.Sprintf("first character %q is above F (value exceeds 64 bits)", c)}
		}
		v = v<<5 | uint64(d)
	}
	return Hash(v), nil
}
