package analysis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Store is a Source that lists its campaigns (*store.DB): what a history
// reads.
type Store interface {
	Source
	Lister
}

// HistoryQuery says whose history to compute.
type HistoryQuery struct {
	Name string // the experiment's name (its file's name:)
	// Until is a campaign ID (or unique prefix): the history up to and
	// including it; "" for every campaign.
	Until string
	// Last, when above 0, keeps the most recent Last runs (up to Until):
	// the ones before are counted (History.Earlier), not loaded.
	Last int
	// Alpha is the probability, over the whole history, of showing a
	// changepoint in a history where nothing changed (0.05 by default):
	// shared by its series (Bonferroni), each series' split tested at its
	// share (stats.Changepoints).
	Alpha float64
}

// History is an experiment's campaigns in run order: each headline
// metric of each cell as a series of means with their intervals, and the
// changepoints found in it.
type History struct {
	Name      string
	Alpha     float64 // the family's
	PerSeries float64 // Alpha's share each series is tested at
	Runs      []HistoryRun
	Series    []HistorySeries
	// Skipped are the experiment's campaigns left out (not done), with why.
	Skipped []string
	// Earlier is how many finished runs before the first of Runs were
	// left out (HistoryQuery.Last).
	Earlier int
}

// HistoryRun is one campaign of the history.
type HistoryRun struct {
	Campaign result.Campaign
	Source   int    // which of the sources it was read from
	SpecHash string // the first 12 hex digits of SHA-256 of the file as run (after --set)
	// Changes are what changed since the run before: the experiment file
	// (its hash) and each fingerprint key that differs.
	Changes []EnvDifference
}

// HistorySeries is one metric of one cell over the runs that ran the cell.
type HistorySeries struct {
	Workload, WorkloadType string
	Cell                   map[string]string
	Metric                 string
	ID                     result.MetricID
	Unit                   string
	Better                 result.Better
	Points                 []HistoryPoint
	Changepoints           []HistoryChange
}

// HistoryPoint is a series' value in one run.
type HistoryPoint struct {
	Run    int // index into History.Runs
	CellID int // the cell's ID in that campaign
	N      int
	Mean   float64
	CI95   [2]float64
	// Median is the median of the run's trials: the point the changepoint
	// search judges (findChanges), so that one stalled trial of a run (a
	// mean far off, its interval wide) is not taken for a change of the
	// run.
	Median float64
}

// HistoryChange is a changepoint: the series' mean shifted at Point (an
// index into Points; its run is the first after the change).
type HistoryChange struct {
	Point int
	Run   int
	stats.Changepoint
	// Verdict is Regressed or Improved by the metric's direction.
	Verdict string
}

// SpecKey is the key of Changes that stands for the experiment file.
const SpecKey = "experiment file"

// LoadHistory reads every campaign named q.Name from the sources (done
// campaigns of the experiment, not calibrations), orders them by start
// time and computes the history.
func LoadHistory(ctx context.Context, srcs []Store, q HistoryQuery) (History, error) {
	h := History{Name: q.Name, Alpha: q.Alpha}
	if h.Alpha <= 0 || h.Alpha >= 1 {
		h.Alpha = 0.05
	}
	runs, err := historyRuns(ctx, srcs, q, &h)
	if err != nil {
		return History{}, err
	}
	if len(runs) == 0 {
		return History{}, fmt.Errorf("no finished campaign of the experiment %q", q.Name)
	}
	type key struct {
		workload, cell string
		metric         result.MetricID
	}
	index := map[key]int{}
	for i, r := range runs {
		l, err := Load(ctx, srcs[r.Source], Query{Campaign: r.Campaign.ID})
		if err != nil {
			return History{}, err
		}
		headline := headlineMetrics(l.Series)
		for _, row := range Rows(l.Series) {
			if row.ID.Kind == result.KindTelemetry || metricKey(row.ID) != headline[row.Workload] {
				continue
			}
			k := key{row.Workload, result.FactorString(row.Cell), metricKey(row.ID)}
			j, ok := index[k]
			if !ok {
				j = len(h.Series)
				index[k] = j
				h.Series = append(h.Series, HistorySeries{Workload: row.Workload, WorkloadType: row.WorkloadType, Cell: row.Cell,
					Metric: row.Metric, ID: row.ID, Unit: row.Unit, Better: row.Better})
			}
			h.Series[j].Points = append(h.Series[j].Points, HistoryPoint{Run: i, CellID: row.CellID, N: row.N, Mean: row.Mean, CI95: row.CI95, Median: median(row.Values)})
		}
	}
	h.Runs = runs
	h.PerSeries = h.Alpha / float64(max(1, len(h.Series)))
	for i := range h.Series {
		h.Series[i].findChanges(h.PerSeries)
	}
	return h, nil
}

// historyRuns are the experiment's done campaigns in start order, each
// with what changed since the one before.
func historyRuns(ctx context.Context, srcs []Store, q HistoryQuery, h *History) ([]HistoryRun, error) {
	var runs []HistoryRun
	for i, src := range srcs {
		cs, err := src.Campaigns(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Name != q.Name || c.Kind != "" {
				continue
			}
			if c.Status != result.CampaignDone {
				h.Skipped = append(h.Skipped, c.ID+" ("+c.Status+")")
				continue
			}
			full, err := src.Campaign(ctx, c.ID)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256([]byte(full.SpecText))
			runs = append(runs, HistoryRun{Campaign: full, Source: i, SpecHash: hex.EncodeToString(sum[:])[:12]})
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Campaign.Started.Before(runs[j].Campaign.Started) })
	if q.Until != "" {
		end, err := untilRun(runs, q)
		if err != nil {
			return nil, err
		}
		runs = runs[:end+1]
	}
	for i := 1; i < len(runs); i++ {
		prev, cur := runs[i-1], &runs[i]
		if prev.SpecHash != cur.SpecHash {
			cur.Changes = append(cur.Changes, EnvDifference{Key: SpecKey, A: prev.SpecHash, B: cur.SpecHash, Strict: true})
		}
		cur.Changes = append(cur.Changes, envDiffs(prev.Campaign.Env, cur.Campaign.Env)...)
	}
	if q.Last > 0 && len(runs) > q.Last {
		h.Earlier = len(runs) - q.Last
		runs = runs[h.Earlier:]
	}
	return runs, nil
}

// untilRun is the index of the run q.Until names: its whole ID, or a
// prefix of exactly one run's ID (a prefix of several is refused, naming
// them, as compare refuses one).
func untilRun(runs []HistoryRun, q HistoryQuery) (int, error) {
	var matches []int
	for i, r := range runs {
		if r.Campaign.ID == q.Until {
			return i, nil
		}
		if strings.HasPrefix(r.Campaign.ID, q.Until) {
			matches = append(matches, i)
		}
	}
	switch len(matches) {
	case 0:
		return 0, fmt.Errorf("no finished campaign %q of the experiment %q", q.Until, q.Name)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, len(matches))
	for k, i := range matches {
		ids[k] = runs[i].Campaign.ID
	}
	return 0, fmt.Errorf("--until %q: ambiguous prefix: matches %s", q.Until, strings.Join(ids, ", "))
}

// findChanges runs the changepoint search over the series' runs'
// medians, on the log scale when they are all positive (rates and times,
// whose noise grows with their size: a change is a ratio), and gives the
// segments' means back in the metric's unit (geometric means of the
// medians, then).
func (s *HistorySeries) findChanges(alpha float64) {
	x := make([]float64, len(s.Points))
	logs := true
	for i, p := range s.Points {
		x[i] = p.Median
		logs = logs && p.Median > 0
	}
	if logs {
		for i := range x {
			x[i] = math.Log(x[i])
		}
	}
	for _, c := range stats.Changepoints(x, alpha) {
		if logs {
			c.Before, c.After = math.Exp(c.Before), math.Exp(c.After)
			c.Pct = 100 * (c.After/c.Before - 1)
		}
		v := Improved
		if (s.Better == result.Lower) == (c.After > c.Before) || math.IsNaN(c.After) {
			v = Regressed
		}
		s.Changepoints = append(s.Changepoints, HistoryChange{Point: c.Index, Run: s.Points[c.Index].Run, Changepoint: c, Verdict: v})
	}
}

// ChangedRuns are the runs at which some series changed, in run order.
func (h History) ChangedRuns() []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range h.Series {
		for _, c := range s.Changepoints {
			if !seen[c.Run] {
				seen[c.Run] = true
				out = append(out, c.Run)
			}
		}
	}
	sort.Ints(out)
	return out
}

// median of xs (NaN for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
