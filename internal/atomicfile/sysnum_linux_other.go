//go:build linux && !amd64 && !arm64

package atomicfile

// On other Linux architectures the store publishes with link(2) and syncs
// each file instead of the whole filesystem.
const (
	sysRenameat2 = -1
	sysSyncfs    = -1
)
