package sysinfo

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// procTime is a process's name and the CPU time it used, in clock ticks.
type procTime struct {
	name  string
	ticks uint64
}

// procTimes reads every process's utime+stime from /proc/PID/stat.
func procTimes() map[int]procTime {
	out := map[int]procTime{}
	for _, p := range globHost("proc/[0-9]*/stat") {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(hostPath(p))
		if err != nil {
			continue // it ended
		}
		st, ok := parseStat(b)
		if !ok {
			continue
		}
		t, ok := st.ticks()
		if !ok {
			continue
		}
		// Commas separate the list load.busiest is written as.
		name := strings.ReplaceAll(strings.TrimSpace(st.name), ",", "_")
		out[pid] = procTime{name: name, ticks: t}
	}
	return out
}

// busiestNow samples the processes' CPU times twice, pause apart, and
// names the busiest (busiest's format).
func busiestNow() string {
	before := procTimes()
	if len(before) == 0 {
		return ""
	}
	elapsed := pause()
	return busiest(before, procTimes(), elapsed, os.Getpid())
}

// busiest names the 3 processes but self that used the most CPU between
// two samples, elapsed apart, and at least 1% of a CPU: "name pid cpu%,
// …" in % of one CPU, busiest first; "none" when no process did.
func busiest(before, after map[int]procTime, elapsed time.Duration, self int) string {
	type use struct {
		pid  int
		name string
		pct  float64
	}
	var uses []use
	for pid, a := range after {
		b, ok := before[pid]
		if pid == self || !ok || a.ticks < b.ticks || elapsed <= 0 {
			continue
		}
		pct := float64(a.ticks-b.ticks) / userHZ / elapsed.Seconds() * 100
		if pct >= 1 {
			uses = append(uses, use{pid, a.name, pct})
		}
	}
	if len(uses) == 0 {
		return "none"
	}
	slices.SortFunc(uses, func(x, y use) int {
		return cmp.Or(cmp.Compare(y.pct, x.pct), cmp.Compare(x.pid, y.pid))
	})
	var parts []string
	for _, u := range uses[:min(3, len(uses))] {
		parts = append(parts, fmt.Sprintf("%s %d %.0f%%", u.name, u.pid, u.pct))
	}
	return strings.Join(parts, ", ")
}

// busyProcess is one entry of load.busiest.
type busyProcess struct {
	name string
	pid  int
	pct  float64
}

// parseBusiest reads load.busiest back; entries it cannot read are
// skipped.
func parseBusiest(s string) []busyProcess {
	var out []busyProcess
	for _, entry := range strings.Split(s, ", ") {
		f := strings.Fields(entry)
		if len(f) < 3 {
			continue
		}
		pid, err1 := strconv.Atoi(f[len(f)-2])
		pct, err2 := strconv.ParseFloat(strings.TrimSuffix(f[len(f)-1], "%"), 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, busyProcess{strings.Join(f[:len(f)-2], " "), pid, pct})
	}
	return out
}
