package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// otherStartStop is an instance's start and stop for a platform that
// declares none (platform.Capabilities.StartStop).
const otherStartStop = 2 * time.Second

// estimate adds up what a campaign's trials take, roughly: each trial's
// run (its workload's duration parameter, or the work its parameters ask
// at rates the workload states) and each instance's start and stop.
type estimate struct {
	trials   int
	measured time.Duration
	each     time.Duration // a trial's measured time when all trials have the same; else -1
	untimed  map[string]int
	// worked are the trials, by workload type, whose time is estimated
	// from their work; basis says at which rates.
	worked    map[string]int
	basis     map[string]string
	instances map[string]int           // started and stopped, by platform
	startStop map[string]time.Duration // what each platform's instance is counted at
	overhead  time.Duration
}

// estimateOf adds up the trials of the cells, runs[cell ID] of each, a
// workload that sizes itself by its instance's CPUs counted at cpus[cell
// ID].
func estimateOf(cells []*Cell, runs, cpus map[int]int) estimate {
	es := estimate{each: 0, untimed: map[string]int{}, worked: map[string]int{}, basis: map[string]string{},
		instances: map[string]int{}, startStop: map[string]time.Duration{}}
	for _, c := range cells {
		n := runs[c.ID]
		if n == 0 {
			continue
		}
		es.trials += n
		rt, ok := runTime(c.WorkloadType, c.Cell.Params, cpus[c.ID])
		switch {
		case !ok:
			es.untimed[c.WorkloadType] += n
			es.each = -1
		case es.each == 0 || es.each == rt.Time:
			es.each = rt.Time
		default:
			es.each = -1
		}
		if rt.Basis != "" {
			es.worked[c.WorkloadType] += n
			es.basis[c.WorkloadType] = rt.Basis
		}
		es.measured += time.Duration(n) * rt.Time
		for platform, k := range instancesOf(c) {
			es.instances[platform.name] += n * k
			es.startStop[platform.name] = platform.startStop
			es.overhead += time.Duration(n*k) * platform.startStop
		}
	}
	return es
}

// runTime is how long one trial of a workload runs
// (workload.Spec.RunTime); false for an unknown type.
func runTime(typ string, params map[string]string, cpus int) (workload.RunTime, bool) {
	ws, ok := workload.Lookup(typ)
	if !ok {
		return workload.RunTime{}, false
	}
	return ws.RunTime(params, cpus)
}

// boundCPUs is how many CPUs the file bounds the measured role's instance
// to — its cpuset or CPU quota rounded up, one core under pinning, the
// emulated machine's quota or cpuset — for the estimate of a workload
// that sizes itself by them (threads: auto or 0); one where the file
// bounds none: the estimate counts no CPUs of this machine, so that it
// says the same on every machine.
func boundCPUs(e *spec.Experiment, c *Cell) int {
	r := c.Driver()
	n := 0
	fewer := func(k int) {
		if k > 0 && (n == 0 || k < n) {
			n = k
		}
	}
	fewer(c.Levels.Placement(r.Name).CpusetSize)
	fewer(int(math.Ceil(r.Limits.CPUs)))
	if c.Pinning != vocab.PinNone {
		fewer(1)
	}
	fewer(int(math.Ceil(c.MachineCPUs)))
	if e.Envelope.Cpuset != "" {
		fewer(len(c.CPUs))
	}
	return max(n, 1)
}

// instancesOf is how many instances one trial of the cell starts, by
// platform: every role of every copy of the chain, and the neighbours
// that run in instances of their own.
func instancesOf(c *Cell) map[platformCost]int {
	out := map[platformCost]int{}
	for _, r := range c.Chain {
		out[costOf(r)] += max(c.Pairs, 1)
	}
	if c.Neighbours.Separate {
		out[costOf(c.Neighbours.Role)] += len(c.Neighbours.Specs)
		for _, ends := range c.Neighbours.Ends {
			if ends != nil { // a client/server neighbour: its server too
				out[costOf(c.Neighbours.Role)]++
			}
		}
	}
	return out
}

// platformCost is a platform and how long it takes to start and stop an
// instance, as its driver declares.
type platformCost struct {
	name      string
	startStop time.Duration
}

func costOf(r Role) platformCost {
	d := r.Driver.Caps.StartStop
	if d <= 0 {
		d = otherStartStop
	}
	return platformCost{r.Platform, d}
}

func (es estimate) total() time.Duration { return es.measured + es.overhead }

// estimateLine is the dry run's one line on how long the campaign takes:
// lo for the fewest trials it can run, hi for the most (the same unless
// the repetition is adaptive).
func estimateLine(lo, hi estimate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "estimated duration on this machine: ~%s (", span(human(lo.total()), human(hi.total())))
	trials := span(fmt.Sprint(lo.trials), fmt.Sprint(hi.trials))
	switch {
	case lo.each > 0 && hi.each == lo.each:
		fmt.Fprintf(&b, "%s of measurement × %s trials + ", human(lo.each), trials)
	case hi.measured > 0:
		fmt.Fprintf(&b, "%s of measurement over %s trials + ", span(human(lo.measured), human(hi.measured)), trials)
	default:
		fmt.Fprintf(&b, "%s trials: ", trials)
	}
	fmt.Fprintf(&b, "about %s to start and stop %s instances, %s", span(human(lo.overhead), human(hi.overhead)),
		span(fmt.Sprint(count(lo.instances)), fmt.Sprint(count(hi.instances))), rates(hi))
	if len(hi.untimed) > 0 {
		fmt.Fprintf(&b, "; not counted: the measurement of trials whose time nothing gives (%s)", byType(lo.untimed, hi.untimed, nil))
	}
	b.WriteString("; a rough estimate)")
	if len(hi.worked) > 0 {
		fmt.Fprintf(&b, "\ntimed by the work their parameters ask, at the rates each workload states: %s", byType(lo.worked, hi.worked, hi.basis))
	}
	return b.String()
}

// byType lists trials by workload type, "403 cpu.linpack" (a range with
// adaptive repetition), each with its basis when there is one: "403
// cpu.linpack: repeat × …".
func byType(lo, hi map[string]int, basis map[string]string) string {
	var parts []string
	for _, typ := range sortedKeys(hi) {
		part := fmt.Sprintf("%s %s", span(fmt.Sprint(lo[typ]), fmt.Sprint(hi[typ])), typ)
		if basis[typ] != "" {
			part += ": " + basis[typ]
		}
		parts = append(parts, part)
	}
	sep := ", "
	if basis != nil {
		sep = "; "
	}
	return strings.Join(parts, sep)
}

// span is "a" when a and b are the same, else "a to b".
func span(a, b string) string {
	if a == b {
		return a
	}
	return a + " to " + b
}

// rates says what one instance is counted at, for the platforms started.
func rates(es estimate) string {
	var parts []string
	for _, p := range sortedKeys(es.instances) {
		parts = append(parts, fmt.Sprintf("%s for %s", human(es.startStop[p]), p))
	}
	return "counted at " + strings.Join(parts, ", ")
}

func count(m map[string]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}

// sortedKeys are the keys of m, the default platform first, then by name.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == vocab.DefaultPlatform:
			return -1
		case b == vocab.DefaultPlatform:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// human writes a duration as a person estimates one: 0.7 s, 18 s, 1.5 min,
// 12 min, 3.2 h, 2.2 days.
func human(d time.Duration) string {
	s := d.Seconds()
	one := func(v float64, unit string) string {
		if v >= 10 {
			return fmt.Sprintf("%.0f %s", math.Round(v), unit)
		}
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + unit
	}
	switch {
	case s < 90:
		return one(s, "s")
	case s < 90*60:
		return one(s/60, "min")
	case s < 48*3600:
		return one(s/3600, "h")
	}
	return one(s/86400, "days")
}
