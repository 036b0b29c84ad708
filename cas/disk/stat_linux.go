package disk

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime returns a file's inode change time (ctime), which only the
// kernel sets; it falls back to the modification time.
func changeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return fi.ModTime()
}
