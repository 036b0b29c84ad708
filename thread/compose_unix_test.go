//go:build unix

package thread_test

import (
	"time"

	"github.com/uncaged/uwf/internal/proctest"
)

// processAlive reports whether process pid, or on Linux any process of the
// process group it leads, still runs 3 s after the call (ending takes a
// moment: a SIGTERM, then a SIGKILL after the grace).
func processAlive(pid int) bool { return !proctest.GroupGone(pid, 3*time.Second) }
