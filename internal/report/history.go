package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// HistoryMethod names the changepoint method, as every format says it.
const HistoryMethod = "E-divisive means (Matteson & James 2014) with Hunter's t-test (Fleming et al. 2023)"

// HistoryFormats are the formats History writes.
var HistoryFormats = []string{"table", "json", "markdown"}

// History writes an experiment's history: its runs with what changed
// between them, each series' means and intervals run by run, and the
// changepoints found.
func History(w io.Writer, h analysis.History, format string) error {
	switch format {
	case "json":
		return historyJSON(w, h)
	case "markdown":
		return historyMarkdown(w, h)
	}
	fmt.Fprintf(w, "history of %q: %d run(s), %d series (each workload's headline metric per cell)\n", h.Name, len(h.Runs), len(h.Series))
	fmt.Fprintf(w, "changepoints: %s over each run's median; a history without a change shows one with probability ≤ %g (%.3g per series)\n", HistoryMethod, h.Alpha, h.PerSeries)
	for _, s := range h.Skipped {
		fmt.Fprintf(w, "left out: %s\n", s)
	}
	if h.Earlier > 0 {
		fmt.Fprintf(w, "left out: the %d finished run(s) before run 1 (--last)\n", h.Earlier)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tcampaign\tstarted\tfile\tchanged since the run before")
	for i, r := range h.Runs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, r.Campaign.ID, r.Campaign.Started.Format("2006-01-02 15:04"), r.SpecHash, HistoryChanges(r.Changes))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	for _, s := range h.Series {
		fmt.Fprintf(w, "\n%s (%s) %s, cell %s [%s], %s is better\n", s.Workload, s.WorkloadType, s.Metric, result.FactorString(s.Cell), s.Unit, s.Better)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "run\tmean [95% CI]\tmedian\tn\tchangepoint")
		for i, p := range s.Points {
			fmt.Fprintf(tw, "%d\t%s %s\t%s\t%d\t%s\n", p.Run+1, Sig(p.Mean), interval(p.CI95, Sig), Sig(p.Median), p.N, changeAt(h, s, i))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
	}
	changed := h.ChangedRuns()
	runs := make([]string, len(changed))
	for i, r := range changed {
		runs[i] = fmt.Sprintf("%d (%s)", r+1, h.Runs[r].Campaign.ID)
	}
	if len(runs) == 0 {
		runs = []string{"none"}
	}
	_, err := fmt.Fprintf(w, "\nruns where a series changed: %s\n", strings.Join(runs, ", "))
	return err
}

// changeAt describes the changepoint at a series' point i, "" for none,
// with the engine's change at that run as its likely cause.
func changeAt(h analysis.History, s analysis.HistorySeries, i int) string {
	for _, c := range s.Changepoints {
		if c.Point == i {
			return fmt.Sprintf("◆ %s %s%% (median %s → %s, p %s, adjusted %s)%s", c.Verdict, signed(c.Pct), Sig(c.Before), Sig(c.After), pValue(c.PValue), pValue(c.Adjusted), likelyCause(h, c.Run))
		}
	}
	return ""
}

// likelyCause is "; likely cause: the engine changed (…)" when the
// engine changed at run r, "" otherwise.
func likelyCause(h analysis.History, r int) string {
	if cause, ok := analysis.EngineCause(h.Runs[r].Changes); ok {
		return "; likely cause: the engine changed (" + EngineChange(cause) + ")"
	}
	return ""
}

// HistoryChanges lists what changed since the run before.
func HistoryChanges(ch []analysis.EnvDifference) string {
	parts := make([]string, len(ch))
	for i, d := range ch {
		parts[i] = fmt.Sprintf("%s %s → %s", d.Key, orNone(d.A), orNone(d.B))
	}
	return strings.Join(parts, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// historyMarkdown is the history for a pull request or a CI summary: the
// changepoints, then the runs and what changed.
func historyMarkdown(w io.Writer, h analysis.History) error {
	fmt.Fprintf(w, "### History of `%s`: %d runs, %d series\n\n", mdEscape(h.Name), len(h.Runs), len(h.Series))
	fmt.Fprintf(w, "Changepoints by %s over each run's median; a history without a change shows one with probability ≤ %g.\n\n", HistoryMethod, h.Alpha)
	fmt.Fprintln(w, "| workload | cell | metric | run | campaign | change | median before → after | p adjusted | verdict |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---:|---|---:|---|")
	n := 0
	for _, s := range h.Series {
		for _, c := range s.Changepoints {
			n++
			fmt.Fprintf(w, "| %s | %s | %s [%s] | %d | %s | %s%% | %s → %s | %s | %s |\n", mdEscape(s.Workload), mdEscape(result.FactorString(s.Cell)), mdEscape(s.Metric), mdEscape(s.Unit),
				c.Run+1, h.Runs[c.Run].Campaign.ID, signed(c.Pct), Sig(c.Before), Sig(c.After), pValue(c.Adjusted), c.Verdict+mdEscape(likelyCause(h, c.Run)))
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "| – | – | – | – | – | – | – | – | no changepoint |")
	}
	fmt.Fprintln(w, "\n| run | campaign | started | file | changed since the run before |")
	fmt.Fprintln(w, "|---:|---|---|---|---|")
	for i, r := range h.Runs {
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", i+1, r.Campaign.ID, r.Campaign.Started.Format("2006-01-02 15:04"), r.SpecHash, mdEscape(HistoryChanges(r.Changes)))
	}
	return nil
}

type historyChangeJSON struct {
	Key    string `json:"key"`
	Before string `json:"before"`
	After  string `json:"after"`
	Strict bool   `json:"strict"`
}

type historyRunJSON struct {
	Run      int                 `json:"run"`
	Campaign string              `json:"campaign"`
	Started  time.Time           `json:"started"`
	SpecHash string              `json:"spec_hash"`
	Changes  []historyChangeJSON `json:"changes"`
}

type historyPointJSON struct {
	Run      int         `json:"run"`
	Campaign string      `json:"campaign"`
	N        int         `json:"n"`
	Mean     *float64    `json:"mean"`
	CI95     [2]*float64 `json:"ci95"`
	Median   *float64    `json:"median"`
}

type changepointJSON struct {
	Run      int      `json:"run"`
	Campaign string   `json:"campaign"`
	Before   *float64 `json:"median_before"`
	After    *float64 `json:"median_after"`
	Pct      *float64 `json:"change_pct"`
	P        *float64 `json:"p_value"`
	Adjusted *float64 `json:"p_adjusted"`
	Verdict  string   `json:"verdict"`
}

type historySeriesJSON struct {
	Workload     string             `json:"workload"`
	WorkloadType string             `json:"workload_type"`
	Cell         map[string]string  `json:"cell"`
	Metric       string             `json:"metric"`
	Unit         string             `json:"unit"`
	Better       result.Better      `json:"better"`
	Points       []historyPointJSON `json:"points"`
	Changepoints []changepointJSON  `json:"changepoints"`
}

// historyJSON is the history as one JSON object (runs are 1-based, as
// the table prints them).
func historyJSON(w io.Writer, h analysis.History) error {
	out := struct {
		Version    int                 `json:"schema_version"`
		Experiment string              `json:"experiment"`
		Method     string              `json:"method"`
		Alpha      float64             `json:"alpha"`
		PerSeries  float64             `json:"alpha_per_series"`
		Runs       []historyRunJSON    `json:"runs"`
		Series     []historySeriesJSON `json:"series"`
		ChangedAt  []int               `json:"changed_runs"`
		Skipped    []string            `json:"skipped"`
		Earlier    int                 `json:"earlier"` // finished runs before the first, left out (--last)
	}{Version: SchemaVersion, Experiment: h.Name, Method: HistoryMethod, Alpha: h.Alpha, PerSeries: h.PerSeries, Runs: []historyRunJSON{}, Series: []historySeriesJSON{}, ChangedAt: []int{}, Skipped: h.Skipped, Earlier: h.Earlier}
	if out.Skipped == nil {
		out.Skipped = []string{}
	}
	for i, r := range h.Runs {
		rj := historyRunJSON{Run: i + 1, Campaign: r.Campaign.ID, Started: r.Campaign.Started, SpecHash: r.SpecHash, Changes: []historyChangeJSON{}}
		for _, d := range r.Changes {
			rj.Changes = append(rj.Changes, historyChangeJSON{d.Key, d.A, d.B, d.Strict})
		}
		out.Runs = append(out.Runs, rj)
	}
	for _, s := range h.Series {
		sj := historySeriesJSON{Workload: s.Workload, WorkloadType: s.WorkloadType, Cell: s.Cell, Metric: s.Metric, Unit: s.Unit, Better: s.Better,
			Points: []historyPointJSON{}, Changepoints: []changepointJSON{}}
		for _, p := range s.Points {
			sj.Points = append(sj.Points, historyPointJSON{Run: p.Run + 1, Campaign: h.Runs[p.Run].Campaign.ID, N: p.N, Mean: finitePtr(p.Mean),
				CI95: [2]*float64{finitePtr(p.CI95[0]), finitePtr(p.CI95[1])}, Median: finitePtr(p.Median)})
		}
		for _, c := range s.Changepoints {
			sj.Changepoints = append(sj.Changepoints, changepointJSON{Run: c.Run + 1, Campaign: h.Runs[c.Run].Campaign.ID, Before: finitePtr(c.Before), After: finitePtr(c.After),
				Pct: finitePtr(c.Pct), P: finitePtr(c.PValue), Adjusted: finitePtr(c.Adjusted), Verdict: c.Verdict})
		}
		out.Series = append(out.Series, sj)
	}
	for _, r := range h.ChangedRuns() {
		out.ChangedAt = append(out.ChangedAt, r+1)
	}
	return encodeJSON(w, out, "history")
}
