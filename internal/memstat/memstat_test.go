package memstat

import (
	"runtime"
	"testing"
)

var sink [][]byte

func TestSamplePeakSeesAllocations(t *testing.T) {
	runtime.GC()
	base := HeapObjects()
	var peak uint64
	stop := SamplePeak(&peak)
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	stop()
	sink = nil
	if peak < base+32<<20 {
		t.Errorf("peak %d, want at least %d above the base %d", peak, 32<<20, base)
	}
}

func TestPeakRSS(t *testing.T) {
	if rss := PeakRSS(); runtime.GOOS == "linux" && rss == 0 {
		t.Error("PeakRSS = 0 on Linux")
	}
}
