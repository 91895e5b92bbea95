package report

import (
	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// measure is the identity of a workload's own metric.
func measure(name string) result.MetricID { return result.Observation{Metric: name}.ID() }

// fixture is a fixed campaign: two workloads, two metrics each, three
// cells each, cell 1 and 4 the baselines, cell 2 with a failed trial and
// cell 6 with a single surviving trial. It is deliberately out of order so
// the tests see Rows sort it.
func fixture() []analysis.Series {
	const camp = "c-0001"
	cpuEv := map[int][]float64{
		1: {1012.5, 1008.25, 1015.0, 1010.75, 1009.5},
		2: {1030.0, 1027.5, 1033.25, 1029.0},
		3: {702.0, 698.5, 705.25, 699.75, 701.0},
	}
	cpuDur := map[int][]float64{
		1: {9.876, 9.912, 9.854, 9.889, 9.901},
		2: {9.701, 9.688, 9.734, 9.712},
		3: {14.25, 14.31, 14.18, 14.27, 14.22},
	}
	netTp := map[int][]float64{
		4: {1.182e9, 1.179e9, 1.185e9, 1.181e9},
		5: {1.195e9, 1.188e9, 1.201e9, 1.192e9},
		6: {8.72e8},
	}
	netRTT := map[int][]float64{
		4: {0.000123, 0.000125, 0.000121, 0.000124},
		5: {0.000119, 0.000122, 0.000118, 0.000121},
		6: {0.000311},
	}
	cpuCell := map[int]map[string]string{
		1: {"runtime": "runc"}, 2: {"runtime": "crun"}, 3: {"runtime": "kata"},
	}
	netCell := map[int]map[string]string{
		4: {"runtime": "runc", "mtu": "1500"},
		5: {"runtime": "runc", "mtu": "9000"},
		6: {"runtime": "kata", "mtu": "1500"},
	}
	failed := map[int]int{2: 1, 6: 3}
	mk := func(wl, wt, metric, unit string, better result.Better, cells map[int]map[string]string,
		vals map[int][]float64, id, base int) analysis.Series {
		return analysis.Series{
			Identity: analysis.Identity{Campaign: camp, Workload: wl, WorkloadType: wt, ID: measure(metric), Unit: unit, Better: better,
				Cell: cells[id], CellID: id},
			Values: vals[id], Failed: failed[id],
			Baseline: vals[base], IsBaseline: id == base,
		}
	}
	cpu := func(metric, unit string, b result.Better, v map[int][]float64, id int) analysis.Series {
		return mk("cpu", "cpu.primes", metric, unit, b, cpuCell, v, id, 1)
	}
	net := func(metric, unit string, b result.Better, v map[int][]float64, id int) analysis.Series {
		return mk("net", "net.tcp_stream", metric, unit, b, netCell, v, id, 4)
	}
	return []analysis.Series{
		cpu("events_per_sec", "events/s", result.Higher, cpuEv, 3),
		cpu("events_per_sec", "events/s", result.Higher, cpuEv, 1),
		cpu("duration_s", "s", result.Lower, cpuDur, 2),
		net("throughput", "bit/s", result.Higher, netTp, 6),
		cpu("events_per_sec", "events/s", result.Higher, cpuEv, 2),
		net("rtt", "s", result.Lower, netRTT, 5),
		net("throughput", "bit/s", result.Higher, netTp, 4),
		cpu("duration_s", "s", result.Lower, cpuDur, 1),
		net("rtt", "s", result.Lower, netRTT, 4),
		cpu("duration_s", "s", result.Lower, cpuDur, 3),
		net("throughput", "bit/s", result.Higher, netTp, 5),
		net("rtt", "s", result.Lower, netRTT, 6),
	}
}
