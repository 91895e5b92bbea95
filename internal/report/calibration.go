package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Calibration writes a calibration's noise floor: per workload and metric,
// the variation of one trial, the A/A difference, the false-positive rate
// and the minimum detectable effect at the calibration's n and at the
// experiment's (expN, 0 to leave out).
func Calibration(w io.Writer, cal analysis.Calibration, expN int, format string) error {
	if format == "json" {
		return calibrationJSON(w, cal, expN)
	}
	fmt.Fprintf(w, "noise floor of this machine — calibration %s (%s), %s\n\n", cal.Campaign.ID, cal.Campaign.SpecPath, cal.Campaign.Started.Format("2006-01-02 15:04:05 MST"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	block := max(expN, 2)
	cols := []string{"workload", "cell", "metric", "n", "rsd%", "A/A difference [95% CI]", "false positives (blocks of " + strconv.Itoa(block) + ") [95% CI]", "MDE at n"}
	if expN > 0 {
		cols = append(cols, "MDE at "+strconv.Itoa(expN))
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	sig, hits, tried := 0, 0, 0
	for _, f := range cal.Floors {
		aa := signed(f.AAPct) + "% " + interval(f.AACI95, signed)
		if f.AASignificant {
			aa += " *"
			sig++
		}
		fp := f.FalsePositives(block)
		hits, tried = hits+fp.Significant, tried+fp.Comparisons
		line := []string{f.Workload, result.FactorString(f.Cell), f.Metric, strconv.Itoa(f.N), sig3(f.RSDPct), aa,
			falsePositives(fp), "±" + sig3(f.MDEPct) + "%"}
		if expN > 0 {
			line = append(line, "±"+sig3(stats.MDE(f.RSDPct, expN, expN))+"%")
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	n := len(cal.Floors)
	if n == 0 {
		_, err := fmt.Fprintln(w, "(no metric had two trials on each side)")
		return err
	}
	all := analysis.FalsePositives{Block: block, Comparisons: tried, Significant: hits, CI95: stats.BinomialCI(hits, tried)}
	if tried > 0 {
		all.Rate = float64(hits) / float64(tried)
	}
	_, err := fmt.Fprintf(w, "\n%d of %d A/A differences significant (expected about 5%%).\n"+
		"false positives: consecutive blocks of %d trials in run order compared as a report compares two cells (the first block against the second, the third against the fourth…); every trial is of the same cell, so each significant difference is a false positive, and drift during the run counts. All metrics: %s. Expected 5%% if trials vary as the test assumes; the interval is exact (Clopper–Pearson) for the number of comparisons, so more --repetitions narrow it.\n"+
		"MDE: the smallest increase a comparison of two cells of n trials detects with 80%% power at p < 0.05 (Welch's test on the log ratio, simulated); reports of this experiment on this machine mark differences smaller than it, which this machine cannot be trusted to show.\n",
		sig, n, block, falsePositives(all))
	return err
}

// falsePositives renders "1/6 (17%) [0.4, 64]".
func falsePositives(fp analysis.FalsePositives) string {
	if fp.Comparisons == 0 {
		return "- (too few trials for two blocks)"
	}
	return fmt.Sprintf("%d/%d (%s) [%s, %s]", fp.Significant, fp.Comparisons, pct(fp.Rate), pctNum(fp.CI95[0]), pctNum(fp.CI95[1]))
}

func pctNum(v float64) string {
	if !finite(v) {
		return "-"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64)
}

func pct(v float64) string {
	if !finite(v) {
		return "-"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
}

func sig3(v float64) string {
	if !finite(v) {
		return "-"
	}
	return Sig(v)
}

// calibrationJSON writes the floors as JSON, NaN as null.
func calibrationJSON(w io.Writer, cal analysis.Calibration, expN int) error {
	type floor struct {
		Workload      string            `json:"workload"`
		Cell          map[string]string `json:"cell"`
		Metric        string            `json:"metric"`
		Unit          string            `json:"unit"`
		N             int               `json:"n"`
		RSDPct        *float64          `json:"rsd_pct"`
		AAPct         *float64          `json:"aa_pct"`
		AACI95        [2]*float64       `json:"aa_ci95"`
		AASignificant bool              `json:"aa_significant"`
		FPR           *float64          `json:"false_positive_rate"`
		FPRCI95       [2]*float64       `json:"false_positive_ci95"`
		FPBlock       int               `json:"false_positive_block"`
		FPCompared    int               `json:"false_positive_comparisons"`
		FPSignificant int               `json:"false_positive_significant"`
		MDEPct        *float64          `json:"mde_pct"`
		MDEPctAtExp   *float64          `json:"mde_pct_at_experiment_n,omitempty"`
	}
	out := struct {
		Campaign string  `json:"campaign"`
		Floors   []floor `json:"floors"`
	}{Campaign: cal.Campaign.ID, Floors: []floor{}}
	for _, f := range cal.Floors {
		fp := f.FalsePositives(expN)
		x := floor{Workload: f.Workload, Cell: f.Cell, Metric: f.Metric, Unit: f.Unit, N: f.N, RSDPct: finitePtr(f.RSDPct), AAPct: finitePtr(f.AAPct),
			AACI95: [2]*float64{finitePtr(f.AACI95[0]), finitePtr(f.AACI95[1])}, AASignificant: f.AASignificant, MDEPct: finitePtr(f.MDEPct),
			FPR: finitePtr(fp.Rate), FPRCI95: [2]*float64{finitePtr(fp.CI95[0]), finitePtr(fp.CI95[1])}, FPBlock: fp.Block,
			FPCompared: fp.Comparisons, FPSignificant: fp.Significant}
		if expN > 0 {
			x.MDEPctAtExp = finitePtr(stats.MDE(f.RSDPct, expN, expN))
		}
		out.Floors = append(out.Floors, x)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
