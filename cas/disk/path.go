package disk

import "github.com/uncaged/uwf/cas"

// crockford is the hash alphabet (SPEC §2); canonical hash text uses it in
// upper case.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// isDigit reports which bytes are canonical hash characters.
var isDigit = func() (t [256]bool) {
	for i := 0; i < len(crockford); i++ {
		t[crockford[i]] = true
	}
	return t
}()

// appendHash appends h's canonical text form, as [cas.Hash.String] writes it,
// without allocating.
func appendHash(b []byte, h cas.Hash) []byte {
	var t [cas.HashLen]byte
	v := uint64(h)
	for i := cas.HashLen - 1; i >= 0; i-- {
		t[i] = crockford[v&31]
		v >>= 5
	}
	return append(b, t[:]...)
}

// isShard reports whether name is an object folder: the last two characters
// of a hash.
func isShard(name string) bool {
	return len(name) == 2 && isDigit[name[0]] && isDigit[name[1]]
}

// objPath returns <dir>/objects/<last two>/<HASH> with one allocation.
func (s *Store) objPath(h cas.Hash) string {
	var buf [128]byte
	b := append(buf[:0], s.objDir...)
	b = append(b, '/', 0, 0, '/')
	n := len(b)
	b = appendHash(b, h)
	b[n-3], b[n-2] = b[n+cas.HashLen-2], b[n+cas.HashLen-1]
	return string(b)
}

// shardDir returns the folder of an object path.
func shardDir(objPath string) string { return objPath[:len(objPath)-cas.HashLen-1] }
