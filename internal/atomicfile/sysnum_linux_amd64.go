package atomicfile

// System call numbers that package syscall does not define for linux/amd64
// (its table predates them); they are fixed by the kernel's ABI.
const (
	sysRenameat2 = 316
	sysSyncfs    = 306
)
