//go:build !unix

package thread_test

import "time"

// cpuTime is not measured here: the CPU ratios read NaN.
func cpuTime() time.Duration { return 0 }
