//go:build !linux

package disk

import (
	"io/fs"
	"time"
)

// changeTime returns a file's modification time: a portable stand-in for the
// inode change time used on Linux.
func changeTime(fi fs.FileInfo) time.Time { return fi.ModTime() }
