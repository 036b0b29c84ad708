// Package memstat measures memory for benchmarks: the Go heap's peak,
// sampled while code runs, and the process's peak resident set.
package memstat

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// HeapObjects returns the bytes of heap objects (live and not yet swept).
func HeapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// SamplePeak records the peak of HeapObjects into *peak every millisecond
// until stop is called; *peak may be read only after stop returns.
func SamplePeak(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			*peak = max(*peak, HeapObjects())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		*peak = max(*peak, HeapObjects())
	}
}

// ResetPeakRSS resets the process's peak resident set (VmHWM; Linux:
// writing 5 to /proc/self/clear_refs); elsewhere it does nothing.
func ResetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// PeakRSS returns VmHWM from /proc/self/status in bytes, 0 if unknown.
func PeakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
