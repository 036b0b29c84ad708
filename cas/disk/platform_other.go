//go:build !unix

package disk

import (
	"errors"
	"fmt"
	"runtime"
)

// errPlatform says why the disk store cannot run here. Outside Unix there is
// no flock(2), whose locks the kernel drops when a process dies, and the
// store's lock and ref files rely on that: Create and Open fail rather than
// run without a cross-process lock.
var errPlatform = fmt.Errorf("the disk store does not run on %s (it needs flock(2) and POSIX file semantics: Linux, macOS or another Unix); use a PostgreSQL store: %w",
	runtime.GOOS, errors.ErrUnsupported)
