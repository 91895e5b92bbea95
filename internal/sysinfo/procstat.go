package sysinfo

import (
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture ctrbench builds for).
const userHZ = 100

// procStat is a /proc/PID/stat line read apart: the command name (field
// 2, in parentheses, which may hold spaces and parentheses) and the
// fields after it (fields[0] is field 3, the state).
type procStat struct {
	name   string
	fields []string
}

// parseStat reads a /proc/PID/stat line; false when it is malformed.
func parseStat(b []byte) (procStat, bool) {
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	return procStat{name: s[open+1 : end], fields: strings.Fields(s[end+1:])}, true
}

// field is stat field n (1-based, as proc(5) numbers them; n ≥ 3), "" when
// the line is shorter.
func (p procStat) field(n int) string {
	if n-3 < 0 || n-3 >= len(p.fields) {
		return ""
	}
	return p.fields[n-3]
}

// ticks is utime + stime (fields 14 and 15), in clock ticks.
func (p procStat) ticks() (uint64, bool) {
	u, err1 := strconv.ParseUint(p.field(14), 10, 64)
	s, err2 := strconv.ParseUint(p.field(15), 10, 64)
	return u + s, err1 == nil && err2 == nil
}

// ProcCPUSeconds is the CPU time (user and system) process pid of this
// machine has used; false once it is gone.
func ProcCPUSeconds(pid int) (float64, bool) {
	return statCPUSeconds("/proc/" + strconv.Itoa(pid) + "/stat")
}

// ThreadCPUSeconds is the user and system CPU time, in seconds, of thread
// tid of this process; false when the thread is gone.
func ThreadCPUSeconds(tid int) (float64, bool) {
	return statCPUSeconds("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
}

func statCPUSeconds(path string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	st, ok := parseStat(b)
	if !ok {
		return 0, false
	}
	t, ok := st.ticks()
	return float64(t) / userHZ, ok
}
