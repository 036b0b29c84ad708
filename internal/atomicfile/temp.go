package atomicfile

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
)

// tempSeq numbers temporary files within this process.
var tempSeq atomic.Uint64

var pidText = strconv.Itoa(os.Getpid())

// tempName returns a new name for a temporary file in dir,
// ".tmp-<pid>-<n>": unique among live processes; creating it with O_EXCL
// catches a leftover of a dead process that had the same pid.
func tempName(dir string) string {
	var buf [256]byte
	b := append(buf[:0], dir...)
	b = append(b, filepath.Separator)
	b = append(b, ".tmp-"...)
	b = append(b, pidText...)
	b = append(b, '-')
	b = strconv.AppendUint(b, tempSeq.Add(1), 10)
	return string(b)
}

// unnamedName labels an unnamed file created in dir, for errors and
// recorded operations: "<dir>/(unnamed <n>)", which no file is ever called.
func unnamedName(dir string) string {
	var buf [256]byte
	b := append(buf[:0], dir...)
	b = append(b, filepath.Separator)
	b = append(b, "(unnamed "...)
	b = strconv.AppendUint(b, tempSeq.Add(1), 10)
	b = append(b, ')')
	return string(b)
}
