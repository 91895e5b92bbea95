// Package physics declares which network paths do strictly more work than
// others, once, as data (Orderings), and checks a campaign's report rows
// against it: a path that does everything another does and more must not
// measure significantly faster.
//
// The check is one-sided and takes each cell's spread into account, so a
// busy machine widens the intervals instead of producing violations: a
// comparison is a violation only when the heavier path's mean is better
// than the lighter one's by more than Options.Margin with a one-sided
// Welch test on the log of the ratio of means, after Holm's adjustment
// over every comparison the check made. Its error rate: when no heavier
// path is truly better (by more than the margin), the chance that a check
// reports any violation at all is at most Options.Alpha (5% unless set),
// whatever the dependence between the comparisons — provided a cell's
// trials are independent and their mean roughly normal, which ctrbench's
// interleaved repetitions aim at. A disturbance that follows a cell
// rather than the clock (one path measured while something else always
// runs) is not noise: it is what the check exists to surface.
//
// Like the rest of the statistics, it only computes.
package physics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// Path picks the cells that take one network path: factor → level, every
// one of which a cell must have ({"platform": "swarm", "network":
// "overlay"}).
type Path map[string]string

// Ordering declares that Heavier does strictly more work than Lighter for
// every byte and every request: the same path plus Extra. Two cells are
// compared when one is on Heavier, the other on Lighter, and they agree on
// every other factor (a factor whose level alone decides the path, such as
// a bundle naming layers, is not another factor: see Check).
type Ordering struct {
	Name    string
	Heavier Path
	Lighter Path
	// Extra is the work Heavier adds to Lighter.
	Extra string
}

// Orderings is the declared order of the paths ctrbench builds, as
// docs/networks.md describes them ("A path with strictly more work is not
// faster"). Each entry was measured to hold on the development machine.
var Orderings = []Ordering{
	{
		Name:    "swarm overlay ⊃ swarm host network",
		Heavier: Path{vocab.FPlatform: "swarm", vocab.FNetwork: "overlay"},
		Lighter: Path{vocab.FPlatform: "swarm", vocab.FNetwork: "host"},
		Extra: "each task's own namespace and veth, the overlay's namespace and bridge, VXLAN encapsulation and decapsulation " +
			"and two more conntrack passes, on top of the nodes' host-network path (node veth, the underlay bridge, node veth)",
	},
	{
		Name:    "swarm encrypted overlay ⊃ swarm overlay",
		Heavier: Path{vocab.FPlatform: "swarm", vocab.FNetwork: "overlay-encrypted"},
		Lighter: Path{vocab.FPlatform: "swarm", vocab.FNetwork: "overlay"},
		Extra:   "IPsec ESP encryption and decryption of every VXLAN packet",
	},
	{
		Name:    "overlay ⊃ routed bridge",
		Heavier: Path{vocab.FNetwork: "overlay"},
		Lighter: Path{vocab.FNetwork: "bridge"},
		Extra:   "VXLAN encapsulation and decapsulation over the same underlay and the same per-host bridges",
	},
	{
		Name:    "encrypted overlay ⊃ overlay",
		Heavier: Path{vocab.FNetwork: "overlay-encrypted"},
		Lighter: Path{vocab.FNetwork: "overlay"},
		Extra:   "WireGuard encryption and a tunnel device on both ends of every VXLAN packet",
	},
	{
		Name:    "container bridge ⊃ host network",
		Heavier: Path{vocab.FNetwork: "bridge"},
		Lighter: Path{vocab.FNetwork: "host"},
		Extra:   "a veth pair, a Linux bridge and its netfilter hooks (or a routed hop) between the ends that the host network joins directly",
	},
	{
		Name:    "Docker's default bridge ⊃ host network",
		Heavier: Path{vocab.FNetwork: "bridge-default"},
		Lighter: Path{vocab.FNetwork: "host"},
		Extra:   "a veth pair, docker0 and its netfilter hooks",
	},
	{
		Name:    "Kubernetes ClusterIP Service ⊃ pod network",
		Heavier: Path{vocab.FPlatform: "kubernetes", vocab.FNetwork: "service"},
		Lighter: Path{vocab.FPlatform: "kubernetes", vocab.FNetwork: "pod"},
		Extra:   "kube-proxy's DNAT of the ClusterIP to the pod's address (and its conntrack entry) on the client's node, around the same pod-to-pod path",
	},
	{
		Name:    "Kubernetes NodePort ⊃ pod network",
		Heavier: Path{vocab.FPlatform: "kubernetes", vocab.FNetwork: "nodeport"},
		Lighter: Path{vocab.FPlatform: "kubernetes", vocab.FNetwork: "pod"},
		Extra:   "kube-proxy's DNAT of the node's address and NodePort to the pod's address, and its masquerade, around the same pod-to-pod path",
	},
	{
		Name:    "Kubernetes pods on two nodes ⊃ pods on one node",
		Heavier: Path{vocab.FPlatform: "kubernetes", vocab.FNetwork: "pod", vocab.FHosts: "2"},
		Lighter: Path{vocab.FPlatform: "kubernetes", vocab.FNetwork: "pod", vocab.FHosts: "1"},
		Extra:   "the nodes' own links and the link between them (a bridge here) between the two nodes' CNI bridges, where pods on one node meet on one",
	},
	{
		Name:    "containers on routed bridges ⊃ processes on the hosts",
		Heavier: Path{vocab.FPlatform: "docker", vocab.FNetwork: "bridge"},
		Lighter: Path{vocab.FPlatform: "native", vocab.FNetwork: "host"},
		Extra:   "a veth pair and a bridge per end (and a container's cgroup) around the same host-to-host path",
	},
}

// Options tune Check; the zero value checks Orderings at 5% with no
// margin.
type Options struct {
	// Alpha is the family-wise error rate: the largest chance of reporting
	// any violation when there is none (default 0.05).
	Alpha float64
	// Margin is how much better (relative: 0.02 = 2%) a heavier path must
	// be for it to count; 0 unless set.
	Margin float64
	// Orderings to check (default: Orderings).
	Orderings []Ordering
}

// Comparison is one ordering applied to one metric of two cells.
type Comparison struct {
	Ordering     Ordering
	Workload     string
	Metric, Unit string
	Better       result.Better
	Heavier      map[string]string // its cell
	Lighter      map[string]string
	MeanH, MeanL float64
	NH, NL       int
	// GainPct is how much better the heavier path measured than the
	// lighter, in percent of the lighter's mean (negative: worse, as
	// expected): 100·(mean_h/mean_l − 1) for a higher-is-better metric,
	// 100·(mean_l/mean_h − 1) for a lower-is-better one.
	GainPct float64
	// LowPct is the one-sided lower (1 − Alpha) confidence bound of
	// GainPct, before the adjustment for the number of comparisons.
	LowPct float64
	// P is the one-sided p-value of "the heavier path is better by more
	// than the margin", PAdj the same after Holm's adjustment over every
	// comparison of the check.
	P, PAdj float64
	// Violation: PAdj < Alpha.
	Violation bool
	// Alpha is the check's family-wise error rate.
	Alpha float64
}

// Skip is a comparison that could not be made, and why.
type Skip struct {
	Ordering         string
	Workload, Metric string
	Heavier, Lighter map[string]string
	Why              string
}

// Result is what Check found.
type Result struct {
	Alpha, Margin float64
	Comparisons   []Comparison
	Skipped       []Skip
}

// Violations are the comparisons where a heavier path measured
// significantly better.
func (r Result) Violations() []Comparison {
	var v []Comparison
	for _, c := range r.Comparisons {
		if c.Violation {
			v = append(v, c)
		}
	}
	return v
}

// Check compares every pair of rows that an ordering applies to: rows of
// the same network workload (one whose roles talk across the path: a
// client and its server) and metric —
// a measured rate (a unit per second) or a latency or completion time, of
// the trial or of all its pairs together, not telemetry, not one pair's —
// whose cells take the heavier and the lighter path and agree on every
// other factor. A factor whose level decides the path's factors across the
// workload's cells (a bundle such as kratzke2015's layer) does not count
// as another factor. A row that compares with nothing (NotComparable) is
// left out. A row's spread comes from its Values when it has them, else
// from its SD and N (as the JSON report carries them).
func Check(rows []analysis.Row, opt Options) Result {
	if opt.Alpha <= 0 || opt.Alpha >= 1 {
		opt.Alpha = 0.05
	}
	if opt.Orderings == nil {
		opt.Orderings = Orderings
	}
	res := Result{Alpha: opt.Alpha, Margin: opt.Margin}
	byWM := map[[2]string][]analysis.Row{}
	var keys [][2]string
	cellsOf := map[string][]map[string]string{} // per workload, its distinct cells
	seenCell := map[string]map[string]bool{}
	for _, r := range rows {
		if !networkWorkload(r) || !eligible(r) || r.NotComparable != "" {
			continue
		}
		k := [2]string{r.Workload, r.Metric}
		if _, ok := byWM[k]; !ok {
			keys = append(keys, k)
		}
		byWM[k] = append(byWM[k], r)
		if seenCell[r.Workload] == nil {
			seenCell[r.Workload] = map[string]bool{}
		}
		if ck := cellKey(r.Cell, nil); !seenCell[r.Workload][ck] {
			seenCell[r.Workload][ck] = true
			cellsOf[r.Workload] = append(cellsOf[r.Workload], r.Cell)
		}
	}
	for _, o := range opt.Orderings {
		pathKeys := map[string]bool{}
		for k := range o.Heavier {
			pathKeys[k] = true
		}
		for k := range o.Lighter {
			pathKeys[k] = true
		}
		for _, wm := range keys {
			ignore := aliases(cellsOf[wm[0]], pathKeys)
			for pk := range pathKeys {
				ignore[pk] = true
			}
			var hs, ls []analysis.Row
			for _, r := range byWM[wm] {
				switch {
				case matches(r.Cell, o.Heavier):
					hs = append(hs, r)
				case matches(r.Cell, o.Lighter):
					ls = append(ls, r)
				}
			}
			for _, h := range hs {
				for _, l := range ls {
					if cellKey(h.Cell, ignore) != cellKey(l.Cell, ignore) {
						continue
					}
					c, why := compare(o, h, l, opt)
					if why != "" {
						res.Skipped = append(res.Skipped, Skip{Ordering: o.Name, Workload: h.Workload, Metric: h.Metric, Heavier: h.Cell, Lighter: l.Cell, Why: why})
						continue
					}
					res.Comparisons = append(res.Comparisons, c)
				}
			}
		}
	}
	ps := make([]float64, len(res.Comparisons))
	for i, c := range res.Comparisons {
		ps[i] = c.P
	}
	for i, p := range stats.Holm(ps) {
		res.Comparisons[i].PAdj = p
		res.Comparisons[i].Violation = p < opt.Alpha
	}
	return res
}

// networkWorkload: the orderings are of network paths, so only workloads
// whose roles talk across one — a client and its server (ping and pong) —
// are held to them (a CPU workload in a file that varies the network is
// not).
func networkWorkload(r analysis.Row) bool {
	ws, ok := workload.Lookup(r.WorkloadType)
	return ok && len(ws.RoleList()) > 1
}

// eligible: a measured rate, or a latency or completion time, of the
// trial or its pairs' aggregate; never telemetry, a pair's own value, a
// role's, a count (errors, retransmissions) or a share (loss).
func eligible(r analysis.Row) bool {
	id := r.ID
	if id.Metric == "" {
		id = result.ParseMetricName(r.Metric, false)
	}
	if id.Kind != result.KindMeasure || id.Role != "" || (id.Scope != result.ScopeTrial && id.Scope != result.ScopeAggregate) {
		return false
	}
	if !r.Better.Valid() {
		return false
	}
	if strings.HasSuffix(r.Unit, "/s") {
		return true
	}
	timeUnit := map[string]bool{"s": true, "ms": true, "µs": true, "us": true, "ns": true}[r.Unit]
	return timeUnit && (strings.HasPrefix(id.Metric, "latency") || strings.HasPrefix(id.Metric, "fct"))
}

func matches(cell map[string]string, p Path) bool {
	for k, v := range p {
		if cell[k] != v {
			return false
		}
	}
	return true
}

// cellKey is a cell's levels other than those in ignore, as one string.
func cellKey(cell map[string]string, ignore map[string]bool) string {
	ks := make([]string, 0, len(cell))
	for k := range cell {
		if !ignore[k] {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		b.WriteString(k + "=" + cell[k] + "\x00")
	}
	return b.String()
}

// known are the factors ctrbench defines itself: never a name for a path.
var known = map[string]bool{
	vocab.FPlatform: true, vocab.FNetwork: true, vocab.FCPUs: true, vocab.FCpuset: true, vocab.FMemory: true, vocab.FStorage: true,
	vocab.FBlkioWeight: true, vocab.FReadBps: true, vocab.FWriteBps: true, vocab.FPids: true, vocab.FNeighbour: true, vocab.FPackaging: true,
	vocab.FHosts: true, vocab.FHost: true, vocab.FUnderlay: true, vocab.FNode: true, vocab.FPairs: true, vocab.FInstances: true,
	vocab.FPinning: true,
}

// aliases are the factors of these cells that name a path: not one of
// ctrbench's own factors, not qualified (a role's, a parameter), and each
// of whose levels goes with one level of every path factor (a bundle
// whose levels set platform and network, like kratzke2015's layer).
func aliases(cells []map[string]string, pathKeys map[string]bool) map[string]bool {
	out := map[string]bool{}
	cand := map[string]bool{}
	for _, c := range cells {
		for k := range c {
			if !pathKeys[k] && !known[k] && !strings.Contains(k, ".") {
				cand[k] = true
			}
		}
	}
	for k := range cand {
		decides := map[string]string{}
		ok := true
		for _, c := range cells {
			var b strings.Builder
			for pk := range pathKeys {
				b.WriteString(pk + "=" + c[pk] + "\x00")
			}
			tuple := sortedTuple(b.String())
			if prev, seen := decides[c[k]]; seen && prev != tuple {
				ok = false
				break
			}
			decides[c[k]] = tuple
		}
		if ok {
			out[k] = true
		}
	}
	return out
}

func sortedTuple(s string) string {
	parts := strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
	sort.Strings(parts)
	return strings.Join(parts, "\x00")
}

// sample is a row's mean, standard deviation and number of values: of its
// Values when it has them, else as the row (a JSON report's) gives them.
func sample(r analysis.Row) (mean, sd float64, n int) {
	if len(r.Values) >= 2 {
		s := stats.Summarize(r.Values)
		return s.Mean, s.SD, s.N
	}
	return r.Mean, r.SD, r.N
}

// compare tests "heavier better than lighter by more than the margin" on
// the log of the ratio of means (stats.WelchLogRatio: the statistic of a
// report's differences from a baseline, one-sided here); why says why it
// could not.
func compare(o Ordering, h, l analysis.Row, opt Options) (Comparison, string) {
	mh, sdh, nh := sample(h)
	ml, sdl, nl := sample(l)
	c := Comparison{Ordering: o, Workload: h.Workload, Metric: h.Metric, Unit: h.Unit, Better: h.Better,
		Heavier: h.Cell, Lighter: l.Cell, MeanH: mh, MeanL: ml, NH: nh, NL: nl, Alpha: opt.Alpha}
	switch {
	case h.Better != l.Better:
		return c, "the two rows disagree on the metric's direction"
	case nh < 2 || nl < 2:
		return c, "fewer than two trials in a cell"
	case !(mh > 0) || !(ml > 0) || math.IsInf(mh, 0) || math.IsInf(ml, 0) || math.IsNaN(sdh) || math.IsNaN(sdl):
		return c, "a mean that is not positive and finite"
	}
	lr, se, df, ok := stats.WelchLogRatio(mh, sdh, nh, ml, sdl, nl)
	if !ok {
		return c, "no variance in either cell: no interval"
	}
	// gain: the log of how much better the heavier path measured.
	gain := lr
	if h.Better == result.Lower {
		gain = -gain
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	c.GainPct = 100 * math.Expm1(gain)
	c.LowPct = 100 * math.Expm1(gain-t.Quantile(1-opt.Alpha)*se)
	c.P = t.Survival((gain - math.Log1p(opt.Margin)) / se)
	return c, ""
}

// WriteText writes the check as a report section: what was compared, and
// every violation with its numbers; nothing when no ordering applied to
// the campaign.
func (r Result) WriteText(w io.Writer) error {
	if len(r.Comparisons) == 0 {
		return nil
	}
	v := r.Violations()
	margin := ""
	if r.Margin > 0 {
		margin = fmt.Sprintf(" by more than %.3g%%", 100*r.Margin)
	}
	_, err := fmt.Fprintf(w, "invariant — a path with strictly more work is not faster: %d comparisons, %d violations (one-sided%s, Holm over all, family-wise error %.3g)\n",
		len(r.Comparisons), len(v), margin, r.Alpha)
	if err != nil {
		return err
	}
	for _, c := range v {
		if _, err := fmt.Fprintln(w, "  "+c.String()); err != nil {
			return err
		}
	}
	return nil
}

// String is one line: which ordering, where, and by how much.
func (c Comparison) String() string {
	verdict := "holds"
	if c.Violation {
		verdict = "VIOLATED"
	}
	return fmt.Sprintf("%s %s: %s %s: %s %.4g vs %s %.4g %s (heavier better by %+.1f%%, one-sided %.0f%% bound %+.1f%%, p %.2g, Holm %.2g)",
		verdict, c.Ordering.Name, c.Workload, c.Metric, cellString(c.Heavier), c.MeanH, cellString(c.Lighter), c.MeanL, c.Unit,
		c.GainPct, 100*(1-c.Alpha), c.LowPct, c.P, c.PAdj)
}

func cellString(cell map[string]string) string {
	ks := make([]string, 0, len(cell))
	for k := range cell {
		ks = append(ks, k)
	}
	analysis.SortFactors(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k + "=" + cell[k]
	}
	return "{" + strings.Join(parts, " ") + "}"
}
