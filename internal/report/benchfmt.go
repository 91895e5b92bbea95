package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// Benchfmt writes Go's benchmark format
// (golang.org/design/14313-benchmark-format), which benchstat and the
// tools around it read:
//
//   - a line naming the campaign before its results (`# campaign ID`: a
//     line the format ignores, since a configuration key that differs
//     would split benchstat's comparison of two campaigns into tables);
//   - a `Unit` line per unit, saying which direction is better;
//   - one result line per trial of a cell, named after the workload with
//     the cell's factors as name keys
//     (`BenchmarkTcp/network=bridge/platform=docker`), one iteration, and
//     the trial's value of every metric, each in a unit of its own that
//     names the metric (`throughput-Gbit/s`), so no two metrics of a line
//     share a unit.
//
// Two campaigns' exports given to benchstat compare cell by cell.
func Benchfmt(w io.Writer, rows []analysis.Row) error {
	units := map[string]string{}
	var unitOrder []string
	type group struct {
		campaign string
		name     string
		seqs     map[int][]string // trial seq -> "value unit" pairs
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range rows {
		unit := benchUnit(r.Metric, r.Unit)
		if _, ok := units[unit]; !ok {
			units[unit] = string(r.Better)
			unitOrder = append(unitOrder, unit)
		}
		key := r.Campaign + "\x00" + r.Workload + "\x00" + strconv.Itoa(r.CellID)
		g := byKey[key]
		if g == nil {
			g = &group{campaign: r.Campaign, name: benchName(r.Workload, r.Cell), seqs: map[int][]string{}}
			byKey[key] = g
			groups = append(groups, g)
		}
		for i, v := range r.Values {
			seq := i
			if i < len(r.Seqs) {
				seq = r.Seqs[i]
			}
			g.seqs[seq] = append(g.seqs[seq], strconv.FormatFloat(v, 'g', -1, 64)+" "+unit)
		}
	}
	var b strings.Builder
	for _, u := range unitOrder {
		if units[u] != "" {
			fmt.Fprintf(&b, "Unit %s better=%s\n", u, units[u])
		}
	}
	campaign := ""
	for _, g := range groups {
		if g.campaign != campaign {
			campaign = g.campaign
			fmt.Fprintf(&b, "\n# campaign %s\n", campaign)
		}
		seqs := make([]int, 0, len(g.seqs))
		for s := range g.seqs {
			seqs = append(seqs, s)
		}
		sort.Ints(seqs)
		for _, s := range seqs {
			fmt.Fprintf(&b, "%s 1 %s\n", g.name, strings.Join(g.seqs[s], " "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// benchName is a result's name: Benchmark, the workload's name with its
// first letter upper-cased (a lower-case one would not be read as a
// benchmark), then the cell's factors as name keys, sorted.
func benchName(workload string, cell map[string]string) string {
	r := []rune(benchToken(workload))
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	keys := make([]string, 0, len(cell))
	for k := range cell {
		keys = append(keys, k)
	}
	analysis.SortFactors(keys)
	parts := []string{"Benchmark" + string(r)}
	for _, k := range keys {
		parts = append(parts, benchToken(k)+"="+benchToken(cell[k]))
	}
	return strings.Join(parts, "/")
}

// benchUnit is a metric's unit as a word of its own: the metric's name
// and its unit ("throughput-Gbit/s"), "-count" when it has none.
func benchUnit(metric, unit string) string {
	if unit == "" {
		unit = "count"
	}
	return benchToken(metric) + "-" + strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, unit)
}

// benchToken keeps a name part within the format: no white space, and
// no "/" (which separates name keys) or "=" (which joins one).
func benchToken(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || slices.Contains([]rune{'/', '='}, r) {
			return '_'
		}
		return r
	}, s)
}
