//go:build unix

package disk

// errPlatform says why the disk store cannot run here: nil on Unix.
var errPlatform error
