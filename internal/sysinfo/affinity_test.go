package sysinfo

import (
	"runtime"
	"testing"
)

func TestCPUList(t *testing.T) {
	for want, in := range map[string][]int{"": nil, "0": {0}, "0,1": {0, 1}, "0-3,6": {0, 1, 2, 3, 6}, "1,3,5-7": {1, 3, 5, 6, 7}} {
		if got := CPUList(in); got != want {
			t.Errorf("CPUList(%v) = %q, want %q", in, got, want)
		}
	}
	// Unpinned, this test may run on every CPU of the machine.
	if a := Affinity(); a == "" || (runtime.NumCPU() == 1 && a != "0") {
		t.Errorf("Affinity() = %q with %d CPUs", a, runtime.NumCPU())
	}
}
