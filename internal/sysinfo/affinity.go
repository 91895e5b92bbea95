package sysinfo

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Affinity is the CPUs the calling process may run on (its scheduler
// affinity, which a cpuset cgroup narrows), as a CPU list: "0", "0-1",
// "0,2"; "" when it cannot be read.
func Affinity() string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return CPUList(cpus)
}

// CPUList writes sorted CPU numbers as the kernel writes a list: runs of
// three or more as ranges ("0-3,6"), others apart ("0,1").
func CPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		default:
			for k := i; k <= j; k++ {
				parts = append(parts, strconv.Itoa(cpus[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
