package atomicfile

import "syscall"

const (
	sysRenameat2 = syscall.SYS_RENAMEAT2
	sysSyncfs    = syscall.SYS_SYNCFS
)
