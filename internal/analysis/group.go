package analysis

import "github.com/ctrbench/ctrbench/internal/result"

// cellMetric names one series: a cell and a metric key.
type cellMetric struct {
	cell   int
	metric result.MetricID
}

// groups are a campaign's trials sorted into series: the values of ok,
// non-warm-up trials per cell and metric, and what else a series carries.
type groups struct {
	values map[cellMetric][]float64
	seqs   map[cellMetric][]int // the trial of each value
	reps   map[cellMetric][]int // its trial's repetition
	// flaggedValues and flaggedSeqs are the values of ok trials whose
	// conditions were not as planned: set apart from the statistics.
	flaggedValues map[cellMetric][]float64
	flaggedSeqs   map[cellMetric][]int
	// ids holds each series' identity as its first observation had it
	// (metricKey forgets the pairs' aggregate).
	ids map[cellMetric]result.MetricID
	// seen lists each cell's metric keys in first-seen order.
	seen map[int][]result.MetricID
	// meta is the last observation of each series: its unit and
	// direction (two workloads may name a metric alike in different
	// units).
	meta            map[cellMetric]result.Observation
	failed, flagged map[int]int // per cell
	// perInstance holds, per trial, the mean over a trial's instances of
	// the measured role's metric (its own value with one instance): what
	// S1's slowdown compares.
	perInstance     map[cellMetric][]float64
	perInstanceReps map[cellMetric][]int
}

// group sorts trials into series. Warm-ups count for nothing; a failed or
// timed-out trial only in its cell's failed count; an ok trial with flags
// (its conditions were not as planned: pairs that did not run together,
// neighbours that stopped early) in the flagged count and its values set
// apart, never in the statistics.
func group(trials []result.Trial) groups {
	g := groups{
		values: map[cellMetric][]float64{}, seqs: map[cellMetric][]int{}, reps: map[cellMetric][]int{},
		flaggedValues: map[cellMetric][]float64{}, flaggedSeqs: map[cellMetric][]int{},
		ids:  map[cellMetric]result.MetricID{},
		seen: map[int][]result.MetricID{}, meta: map[cellMetric]result.Observation{},
		failed: map[int]int{}, flagged: map[int]int{},
		perInstance: map[cellMetric][]float64{}, perInstanceReps: map[cellMetric][]int{},
	}
	for _, t := range trials {
		if t.Warmup {
			continue
		}
		if t.Status != result.OK {
			g.failed[t.CellID]++
			continue
		}
		flagged := t.Flags != ""
		if flagged {
			g.flagged[t.CellID]++
		}
		for _, ob := range t.Observations {
			id := ob.ID()
			k := cellMetric{t.CellID, metricKey(id)}
			if _, ok := g.ids[k]; !ok {
				g.seen[t.CellID] = append(g.seen[t.CellID], k.metric)
				g.ids[k] = id
			}
			g.meta[k] = ob
			if flagged {
				g.flaggedValues[k] = append(g.flaggedValues[k], ob.Value)
				g.flaggedSeqs[k] = append(g.flaggedSeqs[k], t.Seq)
				continue
			}
			g.values[k] = append(g.values[k], ob.Value)
			g.seqs[k] = append(g.seqs[k], t.Seq)
			g.reps[k] = append(g.reps[k], t.Repetition)
		}
		if flagged {
			continue
		}
		for k, v := range instanceMeans(t.Observations) {
			ck := cellMetric{t.CellID, k}
			g.perInstance[ck] = append(g.perInstance[ck], v)
			g.perInstanceReps[ck] = append(g.perInstanceReps[ck], t.Repetition)
		}
	}
	return g
}

// instanceMeans is, per measured metric of one trial, the mean over its
// instances' own values, or the trial's value when it ran one.
func instanceMeans(obs []result.Observation) map[result.MetricID]float64 {
	sum, n, own := map[result.MetricID]float64{}, map[result.MetricID]int{}, map[result.MetricID]float64{}
	for _, ob := range obs {
		id := ob.ID()
		if id.Kind != result.KindMeasure || id.Role != "" {
			continue
		}
		switch id.Scope {
		case result.ScopeInstance:
			id.Scope, id.Index = result.ScopeTrial, 0
			sum[id] += ob.Value
			n[id]++
		case result.ScopeTrial:
			own[id] = ob.Value
		}
	}
	out := make(map[result.MetricID]float64, len(sum)+len(own))
	for id, v := range own {
		out[id] = v
	}
	for id, s := range sum {
		out[id] = s / float64(n[id])
	}
	return out
}
