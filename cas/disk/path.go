package disk

import "github.com/uncaged/uwf/cas"

// isDigit reports which bytes are canonical hash characters.
var isDigit = func() (t [256]bool) {
	for i := 0; i < len(cas.Alphabet); i++ {
		t[cas.Alphabet[i]] = true
	}
	return t
}()

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
	b = h.AppendText(b)
	b[n-3], b[n-2] = b[n+cas.HashLen-2], b[n+cas.HashLen-1]
	return string(b)
}

// shardDir returns the folder of an object path.
func shardDir(objPath string) string { return objPath[:len(objPath)-cas.HashLen-1] }
