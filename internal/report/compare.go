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

// Compare writes campaign B against campaign A, metric by metric, as a
// table, JSON or JUnit XML.
func Compare(w io.Writer, c analysis.Comparison, format string) error {
	switch format {
	case "json":
		return compareJSON(w, c)
	case "junit":
		return compareJUnit(w, c)
	}
	fmt.Fprintf(w, "B %s against A %s, noise threshold ±%g%%\n", c.B.ID, c.A.ID, c.Threshold)
	fmt.Fprintf(w, "judged: %s, %d change(s); verdicts and exit status controlled by %s over them (any false verdict at most 5%%), q by %s (false discovery rate)\n",
		familyName(c.Family), c.Judged, analysis.CorrectionVerdict, analysis.CorrectionListing)
	if err := writeEnvDiffs(w, c.EnvDiffs); err != nil {
		return err
	}
	if err := writeSettings(w, c.Settings); err != nil {
		return err
	}
	if cause, ok := analysis.EngineCause(c.EnvDiffs); ok {
		fmt.Fprintf(w, "likely cause of any change: the engine changed (%s)\n", EngineChange(cause))
	}
	if err := writeStartConditions(w, c.A.Env, c.B.Env); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tcell\tmetric\tA mean (n)\tB mean (n)\tchange [95% CI]\tp\tp Holm\tq BH\tverdict")
	for _, ch := range c.Changes {
		change := changeText(ch)
		verdict := ch.Verdict
		if ch.Note != "" {
			verdict += " (" + ch.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s [%s]\t%s (%d)\t%s (%d)\t%s\t%s\t%s\t%s\t%s\n", ch.Workload, result.FactorString(ch.Cell), ch.Metric, ch.Unit,
			Sig(ch.A.Mean), ch.A.N, Sig(ch.B.Mean), ch.B.N, change, pValue(ch.PValue), pValue(ch.PHolm), pValue(ch.QBH), verdict)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	for _, k := range c.OnlyA {
		fmt.Fprintf(w, "only in A: %s\n", k)
	}
	for _, k := range c.OnlyB {
		fmt.Fprintf(w, "only in B: %s\n", k)
	}
	_, err := fmt.Fprintf(w, "\n%d metric(s) regressed beyond ±%g%%; %d of %d judged changed at a 5%% false discovery rate (q < 0.05).\n"+
		"change: B relative to A's mean, with its 95%% interval; p: that comparison's; p Holm: adjusted over the %d judged (%s); q BH: the false discovery rate at which it is listed. "+
		"verdict: regressed/improved when p Holm < 0.05 and the whole interval is beyond the threshold, within threshold when p Holm < 0.05 but it is not, no change when p Holm ≥ 0.05, "+
		"undetermined when nothing can be said (no variance, fewer than 2 trials, a mean of 0 in A), not judged: shown to explain (--all).\n",
		c.Regressed, c.Threshold, c.Discoveries, c.Judged, c.Judged, familyName(c.Family))
	return err
}

func familyName(f string) string {
	if f == analysis.FamilyAllMetrics {
		return "every measured metric (--all-metrics)"
	}
	return "each workload's headline metric"
}

// EngineChange says how the engine changed: "docker.version 20.10.24 →
// 28.2.2, containerd.version …".
func EngineChange(diffs []analysis.EnvDifference) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = fmt.Sprintf("%s %s → %s", d.Key, orNone(d.A), orNone(d.B))
	}
	return strings.Join(parts, ", ")
}

// writeEnvDiffs lists the fingerprint keys whose values differ.
func writeEnvDiffs(w io.Writer, diffs []analysis.EnvDifference) error {
	if len(diffs) == 0 {
		_, err := fmt.Fprintln(w, "environment: same kernel, CPU and its tuning, memory, OS and engine")
		return err
	}
	fmt.Fprintln(w, "environment differs (a change may come from it; --strict-env refuses the machine's and engine's):")
	for _, d := range diffs {
		mark := ""
		if !d.Strict {
			mark = " (shown, not refused)"
		}
		if _, err := fmt.Fprintf(w, "  %s: A %q, B %q%s\n", d.Key, d.A, d.B, mark); err != nil {
			return err
		}
	}
	return nil
}

// writeStartConditions shows the load each campaign started under
// (result.Noise) side by side: it differs every run, so it is never a
// difference; nothing when neither campaign recorded it.
func writeStartConditions(w io.Writer, a, b map[string]string) error {
	var parts []string
	for _, k := range result.Noise {
		if a[k] != "" || b[k] != "" {
			parts = append(parts, fmt.Sprintf("%s A %s, B %s", k, recorded(a[k]), recorded(b[k])))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "at start (differs every run, not compared): %s\n", strings.Join(parts, "; "))
	return err
}

// recorded is an environment value quoted, or "not recorded".
func recorded(v string) string {
	if v == "" {
		return "not recorded"
	}
	return strconv.Quote(v)
}

func pValue(p float64) string {
	if !finite(p) {
		return "-"
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

// compareJSON writes the comparison as one JSON object, schema_version
// (SchemaVersion) first: docs/schema/compare-v1.schema.json.
func compareJSON(w io.Writer, c analysis.Comparison) error {
	type change struct {
		Workload string            `json:"workload"`
		Cell     map[string]string `json:"cell"`
		Metric   string            `json:"metric"`
		Unit     string            `json:"unit"`
		Better   result.Better     `json:"better"`
		AMean    *float64          `json:"a_mean"`
		AN       int               `json:"a_n"`
		BMean    *float64          `json:"b_mean"`
		BN       int               `json:"b_n"`
		Pct      *float64          `json:"change_pct"`
		CI95     [2]*float64       `json:"change_ci95"`
		PValue   *float64          `json:"p_value"`
		Judged   bool              `json:"judged"`
		PHolm    *float64          `json:"p_holm"`
		QBH      *float64          `json:"q_bh"`
		Verdict  string            `json:"verdict"`
		Note     string            `json:"note,omitempty"`
	}
	type envDiff struct {
		Key    string `json:"key"`
		A      string `json:"a"`
		B      string `json:"b"`
		Strict bool   `json:"strict"`
	}
	type settingDiff struct {
		Factor    string   `json:"factor"`
		A         string   `json:"a"`
		B         string   `json:"b"`
		Workloads []string `json:"workloads"`
	}
	out := struct {
		Version     int           `json:"schema_version"`
		A           string        `json:"a"`
		B           string        `json:"b"`
		Threshold   float64       `json:"threshold_pct"`
		Family      string        `json:"family"`
		Judged      int           `json:"judged"`
		Correction  string        `json:"correction"`
		Listing     string        `json:"listing_correction"`
		Alpha       float64       `json:"alpha"`
		Regressed   int           `json:"regressed"`
		Discoveries int           `json:"discoveries"`
		EnvDiffs    []envDiff     `json:"env_differences"`
		Settings    []settingDiff `json:"settings_differences,omitempty"`
		Changes     []change      `json:"changes"`
		OnlyA       []string      `json:"only_a,omitempty"`
		OnlyB       []string      `json:"only_b,omitempty"`
	}{Version: SchemaVersion, A: c.A.ID, B: c.B.ID, Threshold: c.Threshold, Family: c.Family, Judged: c.Judged, Correction: analysis.CorrectionVerdict,
		Listing: analysis.CorrectionListing, Alpha: stats.Alpha, Regressed: c.Regressed, Discoveries: c.Discoveries,
		EnvDiffs: []envDiff{}, Changes: []change{}, OnlyA: c.OnlyA, OnlyB: c.OnlyB}
	for _, d := range c.EnvDiffs {
		out.EnvDiffs = append(out.EnvDiffs, envDiff{d.Key, d.A, d.B, d.Strict})
	}
	for _, d := range c.Settings {
		out.Settings = append(out.Settings, settingDiff{d.Factor, d.A, d.B, d.Workloads})
	}
	for _, ch := range c.Changes {
		cell := ch.Cell
		if cell == nil {
			cell = map[string]string{} // {} as in a report, never null
		}
		out.Changes = append(out.Changes, change{Workload: ch.Workload, Cell: cell, Metric: ch.Metric, Unit: ch.Unit, Better: ch.Better,
			AMean: finitePtr(ch.A.Mean), AN: ch.A.N, BMean: finitePtr(ch.B.Mean), BN: ch.B.N, Pct: finitePtr(ch.Pct),
			CI95: [2]*float64{finitePtr(ch.CI95[0]), finitePtr(ch.CI95[1])}, PValue: finitePtr(ch.PValue), Judged: ch.Judged,
			PHolm: finitePtr(ch.PHolm), QBH: finitePtr(ch.QBH), Verdict: ch.Verdict, Note: ch.Note})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
