// Package telemetry reads the counters that explain a measurement — CPU
// time and throttling, memory peak, block I/O, context switches, TCP
// retransmissions, the machine's softirqs and interrupts — before and
// after a workload runs, and reports the differences. Rates are deltas of
// cumulative counters; the maths is in Diff, separate from the reading, so
// it can be tested on recorded samples.
package telemetry

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ctrbench/ctrbench/internal/cgroup"
)

// Scope says which counters belong to the measured instance alone.
type Scope struct {
	// Cgroup: the agent runs in a cgroup of its own (a container, or a
	// native agent under limits), so cgroup counters are its own.
	Cgroup bool
	// Netns: the agent has its own network namespace, so TCP counters are
	// its own (in the host's namespace they would be the whole machine's).
	Netns bool
	// Machine: read the machine-wide counters too (softirqs, interrupts),
	// which are no instance's own. A trial's target reads them; a
	// neighbour's instance does not (its readings would be the same
	// machine's, labelled as the neighbour's).
	Machine bool
}

// Sample is one reading of cumulative counters; absent ones are missing
// from the map.
type Sample map[string]float64

// Metric describes one telemetry value.
type Metric struct {
	Name, Unit, Doc string
	// Cumulative counters are reported as end minus start; levels (peaks)
	// as the value at the end.
	Cumulative bool
	// Machine: a counter of the whole machine (every CPU, process and
	// namespace), read only when Scope.Machine; several pairs' readings of
	// it are the same machine's, so a trial's value is their mean, not
	// their sum.
	Machine bool
}

// Metrics lists every value telemetry may report, in report order.
var Metrics = []Metric{
	{"cpu_seconds", "s", "user+system CPU time of the agent and the tools it ran", true, false},
	{"ctx_switches_voluntary", "count", "voluntary context switches (blocking), agent and tools", true, false},
	{"ctx_switches_involuntary", "count", "involuntary context switches (preempted), agent and tools", true, false},
	{softirqNetRX, "count", "NET_RX softirqs (packet receive processing, loopback and veth hops too) on all CPUs of the machine, not the instance's own", true, true},
	{softirqNetTX, "count", "NET_TX softirqs (deferred packet transmission) on all CPUs of the machine, not the instance's own", true, true},
	{softirqNet, "count", "NET_RX + NET_TX softirqs of the machine", true, true},
	{softirqNetRXMax, "count", "NET_RX softirqs on the machine's CPU that ran the most of them", true, true},
	{interrupts, "count", "hardware and inter-processor interrupts on all CPUs of the machine (/proc/interrupts but LOC), not the instance's own", true, true},
	{interruptsLOC, "count", "local timer interrupts (LOC) on all CPUs of the machine", true, true},
	{"cpu_throttled_periods", "count", "CFS periods in which the cgroup was throttled (its cpus limit)", true, false},
	{"cpu_throttled_seconds", "s", "time the cgroup spent throttled", true, false},
	{"memory_peak_bytes", "bytes", "peak memory use of the cgroup", false, false},
	{"blkio_read_bytes", "bytes", "bytes read from block devices by the cgroup", true, false},
	{"blkio_write_bytes", "bytes", "bytes written to block devices by the cgroup", true, false},
	{"tcp_retrans_segs", "count", "TCP segments retransmitted in the network namespace", true, false},
	{"tcp_out_segs", "count", "TCP segments sent in the network namespace", true, false},
}

// Read takes a sample of every counter the scope allows.
func Read(s Scope) Sample {
	out := Sample{}
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil && syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		sec := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
		out["cpu_seconds"] = sec(self.Utime) + sec(self.Stime) + sec(children.Utime) + sec(children.Stime)
		out["ctx_switches_voluntary"] = float64(self.Nvcsw + children.Nvcsw)
		out["ctx_switches_involuntary"] = float64(self.Nivcsw + children.Nivcsw)
	}
	if s.Cgroup {
		for k, v := range cgroup.Counters() {
			out[k] = v
		}
	}
	if s.Netns {
		if tcp := snmpTCP("/proc/net/snmp"); tcp != nil {
			out["tcp_retrans_segs"], out["tcp_out_segs"] = tcp["RetransSegs"], tcp["OutSegs"]
		}
	}
	if s.Machine {
		readMachine(out)
	}
	return out
}

// Diff turns two samples into telemetry values: deltas of cumulative
// counters, end values of levels. A counter missing from either sample is
// left out; a counter that went backwards (reset) is left out too. The
// machine-wide counters are made CPU by CPU (machineDiff).
func Diff(start, end Sample) map[string]float64 {
	out := map[string]float64{}
	machineDiff(start, end, out)
	for _, m := range Metrics {
		e, ok := end[m.Name]
		if !ok || m.Machine {
			continue
		}
		if !m.Cumulative {
			out[m.Name] = e
			continue
		}
		s, ok := start[m.Name]
		if !ok || e < s {
			continue
		}
		out[m.Name] = e - s
	}
	return out
}

// snmpTCP parses the Tcp: header and value lines of /proc/net/snmp.
func snmpTCP(path string) map[string]float64 {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil
	}
	defer f.Close()
	var header []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "Tcp:" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		out := map[string]float64{}
		for i := 1; i < len(fields) && i < len(header); i++ {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err == nil {
				out[header[i]] = v
			}
		}
		return out
	}
	return nil
}
