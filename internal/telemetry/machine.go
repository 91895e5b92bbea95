package telemetry

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The machine-wide counters: softirqs and interrupts, read from
// /proc/softirqs and /proc/interrupts CPU by CPU. They are the whole
// machine's the agent runs on — every CPU, process, container and network
// namespace; the host's for a container or a native agent, the guest's
// inside a VM — never the instance's own, so they explain a result (S4:
// more pairs per core, more interrupts and context switches) and are never
// judged. Read keeps each CPU's count of a series under its own key of the
// sample; Diff reports a series only when both readings list the same CPUs
// and no CPU's count went backwards (the kernel's per-CPU counts are 32-bit
// and wrap): a total with a CPU missing would be a wrong number.

// Machine-wide series, by the metric they make.
const (
	softirqNetRX    = "softirq_net_rx"
	softirqNetTX    = "softirq_net_tx"
	interrupts      = "interrupts"
	interruptsLOC   = "interrupts_local_timer"
	softirqNet      = "softirq_net"            // NET_RX + NET_TX
	softirqNetRXMax = "softirq_net_rx_max_cpu" // NET_RX on the CPU that ran the most
)

// machineSeries are the per-CPU series Read records, by the metric each
// makes (its total over the CPUs).
var machineSeries = []string{softirqNetRX, softirqNetTX, interrupts, interruptsLOC}

// CPUTable is a per-CPU table of /proc (softirqs, interrupts): each row's
// count on each CPU, by row name ("NET_RX", "LOC", "24") and CPU number.
type CPUTable map[string]map[int]uint64

// ParseCPUTable reads /proc/softirqs or /proc/interrupts: a header naming
// the CPUs ("CPU0 CPU1 CPU3": /proc/interrupts lists the online ones only,
// so a column is the CPU its header names, not its position), then rows
// "NAME: count count … [description]". Rows with fewer counts than CPUs
// (ERR, MIS: one machine total) or a count that is not a number are left
// out; fields after the CPUs' counts (chip, device names) are ignored.
func ParseCPUTable(text string) (CPUTable, error) {
	lines := strings.Split(text, "\n")
	var cpus []int
	for len(lines) > 0 && cpus == nil {
		for _, f := range strings.Fields(lines[0]) {
			n, err := strconv.Atoi(strings.TrimPrefix(f, "CPU"))
			if !strings.HasPrefix(f, "CPU") || err != nil || n < 0 {
				return nil, fmt.Errorf("header %q: %q is not a CPU", lines[0], f)
			}
			cpus = append(cpus, n)
		}
		lines = lines[1:]
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("no header naming the CPUs")
	}
	t := CPUTable{}
	for _, line := range lines {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		fields := strings.Fields(rest)
		if !ok || name == "" || len(fields) < len(cpus) {
			continue
		}
		counts := make(map[int]uint64, len(cpus))
		for i, c := range cpus {
			v, err := strconv.ParseUint(fields[i], 10, 64)
			if err != nil {
				counts = nil
				break
			}
			counts[c] = v
		}
		if counts != nil {
			t[name] = counts
		}
	}
	return t, nil
}

// machineSample is what Read records of the two tables (either may be
// nil, unreadable): NET_RX and NET_TX; every row of /proc/interrupts but
// LOC summed (device interrupts and inter-processor ones: rescheduling,
// function calls, TLB shootdowns…), and LOC, the local timer, apart — on
// each CPU under cpuKey.
func machineSample(softirqs, irqs CPUTable, out Sample) {
	put := func(series string, counts map[int]uint64) {
		for c, v := range counts {
			out[cpuKey(series, c)] += float64(v)
		}
	}
	if softirqs != nil {
		put(softirqNetRX, softirqs["NET_RX"])
		put(softirqNetTX, softirqs["NET_TX"])
	}
	if irqs == nil {
		return
	}
	for row, counts := range irqs {
		switch row {
		case "LOC":
			put(interruptsLOC, counts)
		case "ERR", "MIS": // errors, not interrupts (and one total, on a 1-CPU machine one column)
		default:
			put(interrupts, counts)
		}
	}
}

// cpuKey is where a sample keeps a machine-wide series' count on one CPU,
// e.g. "softirq_net_rx/cpu3" (never a metric's name).
func cpuKey(series string, cpu int) string {
	return series + "/cpu" + strconv.Itoa(cpu)
}

// perCPU is a series' counts in a sample, by CPU.
func perCPU(s Sample, series string) map[int]float64 {
	out := map[int]float64{}
	prefix := series + "/cpu"
	for k, v := range s {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if c, err := strconv.Atoi(rest); err == nil {
				out[c] = v
			}
		}
	}
	return out
}

// CPUDeltas is what a machine-wide series did between two samples, CPU by
// CPU. ok is false when the series is missing, when the samples do not
// list the same CPUs (one was plugged in or out between them: its count
// over the window is unknown), or when a CPU's count went backwards (a
// 32-bit counter wrapped): then no total would be right.
func CPUDeltas(start, end Sample, series string) (map[int]float64, bool) {
	s, e := perCPU(start, series), perCPU(end, series)
	if len(s) == 0 || len(s) != len(e) {
		return nil, false
	}
	out := make(map[int]float64, len(s))
	for c, a := range s {
		b, ok := e[c]
		if !ok || b < a {
			return nil, false
		}
		out[c] = b - a
	}
	return out, true
}

// machineDiff adds the machine-wide metrics to Diff's values: each
// series' total over the CPUs, NET_RX on its busiest CPU, and NET_RX +
// NET_TX.
func machineDiff(start, end Sample, out map[string]float64) {
	for _, series := range machineSeries {
		d, ok := CPUDeltas(start, end, series)
		if !ok {
			continue
		}
		var sum, top float64
		for _, v := range d {
			sum, top = sum+v, max(top, v)
		}
		out[series] = sum
		if series == softirqNetRX {
			out[softirqNetRXMax] = top
		}
	}
	rx, okRX := out[softirqNetRX]
	tx, okTX := out[softirqNetTX]
	if okRX && okTX {
		out[softirqNet] = rx + tx
	}
}

// readMachine adds the machine-wide series to a sample; a file that
// cannot be read or parsed (no /proc, a sandbox without it) adds nothing.
func readMachine(out Sample) {
	table := func(path string) CPUTable {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		t, err := ParseCPUTable(string(b))
		if err != nil {
			return nil
		}
		return t
	}
	machineSample(table("/proc/softirqs"), table("/proc/interrupts"), out)
}
