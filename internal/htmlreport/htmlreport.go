// Package htmlreport renders a campaign as one self-contained HTML file:
// the campaign's facts, the figures internal/figure chooses (drawn here as
// inline SVG), each workload's telemetry, failed and flagged trials with
// their reasons, placement advice for a co-location campaign, and every
// trial in a sortable table. Styles and the small script are inlined and a
// Content-Security-Policy forbids fetching anything, so the file opens
// anywhere without a network.
package htmlreport

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/figure"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

//go:embed page.html.tmpl
var pageTemplate string

//go:embed style.css
var styleCSS string

//go:embed script.js
var scriptJS string

// policy is the page's Content-Security-Policy: nothing is fetched (no
// source but data: images), no form goes anywhere, and the one script
// that runs is ours, named by its hash — markup that got into the page
// from a campaign's strings could not run even if it escaped escaping.
// Styles stay inline (the figures' SVG and legends carry style
// attributes); with nothing fetchable they can load nothing.
var policy = "default-src 'none'; script-src " + scriptHash(scriptJS) + "; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// scriptHash is a CSP hash source for a script element's exact text.
func scriptHash(js string) string {
	h := sha256.Sum256([]byte(js))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"sig": report.Sig,
}).Parse(pageTemplate))

// Options says which campaign to render and how.
type Options struct {
	Campaign string   // ID or unique prefix
	Baseline []string // factor=level overrides of the campaign's baseline
	// Advice is the tolerance and services for a co-location campaign's
	// placement advice (its services may be empty: pairs only).
	Advice AdviceOptions
	// History is the experiment's history up to this campaign: drawn as
	// a section when it holds two runs or more; nil for none.
	History *analysis.History
}

// Write renders campaign o.Campaign from src as one HTML page and returns
// the campaign's ID.
func Write(ctx context.Context, w io.Writer, src analysis.Source, o Options) (string, error) {
	p, _, err := Build(ctx, src, o)
	if err != nil {
		return "", err
	}
	if err := page.Execute(w, p); err != nil {
		return "", fmt.Errorf("render HTML report: %w", err)
	}
	return p.Campaign.ID, nil
}

// Build loads the campaign and computes the page and its figures (which a
// test compares with what a browser drew).
func Build(ctx context.Context, src analysis.Source, o Options) (Page, []figure.Section, error) {
	q := analysis.Query{Campaign: o.Campaign, Baseline: o.Baseline}
	l, err := analysis.Load(ctx, src, q)
	if err != nil {
		return Page{}, nil, err
	}
	q.Campaign = l.Campaign.ID
	rows := analysis.Rows(l.Series)
	cdfs, err := analysis.LoadCDFs(ctx, src, q)
	if err != nil {
		return Page{}, nil, err
	}
	cells, err := src.Cells(ctx, l.Campaign.ID)
	if err != nil {
		return Page{}, nil, err
	}
	trials, err := src.Trials(ctx, l.Campaign.ID)
	if err != nil {
		return Page{}, nil, err
	}
	secs := figure.Build(rows, cdfs)
	p := Page{
		CSS: template.CSS(styleCSS), JS: template.JS(scriptJS), CSP: policy,
		Campaign: l.Campaign, Title: l.Campaign.Name,
	}
	p.Facts = facts(l, trials)
	p.Env = envOf(l.Campaign)
	if l.Calibration != nil {
		p.Calibration = fmt.Sprintf("%s (%s): differences below its minimum detectable effect are marked in the tables", l.Calibration.Campaign.ID, l.Calibration.Campaign.Started.Format("2006-01-02 15:04"))
	}
	disp := map[string][]string{}
	for _, s := range secs {
		ps := PageSection{ID: s.ID, Title: s.Title, Type: s.Type, Zero: s.Zero, NotDrawn: s.NotDrawn}
		if s.Workload != "" {
			disp[s.Workload] = s.Factors
			ps.Telemetry = telemetry(rows, s.Workload, s.Factors)
			if ws, ok := workload.Lookup(s.Type); ok {
				ps.Doc = ws.Summary
			}
		}
		for _, f := range s.Figures {
			svg, legend := drawFigure(f)
			ps.Figures = append(ps.Figures, PageFigure{
				ID: f.ID, Kind: string(f.Kind), Title: f.Title, Note: f.Note, Band: f.Band,
				Series: len(f.Series), Points: f.Points(),
				SVG: template.HTML(svg), Legend: template.HTML(legend),
			})
		}
		p.Sections = append(p.Sections, ps)
	}
	if o.History != nil && len(o.History.Runs) >= 2 {
		p.Sections = append(p.Sections, historySection(*o.History, cells))
	}
	if a, ok, err := adviceView(l.Campaign.ID, rows, o.Advice); err != nil {
		return Page{}, nil, err
	} else if ok {
		p.Advice = &a
	}
	p.Trials, p.Failed, p.Flagged = trialRows(trials, cells, rows, disp)
	return p, secs, nil
}

// Page is what the template renders.
type Page struct {
	CSS         template.CSS
	JS          template.JS
	CSP         string // the Content-Security-Policy (policy)
	Title       string
	Campaign    result.Campaign
	Facts       []Fact
	Env         []Fact
	Calibration string
	Sections    []PageSection
	Advice      *AdviceView
	Trials      []TrialRow
	Failed      []TrialRow
	Flagged     []TrialRow
}

// historySection draws the experiment's history: a figure per headline
// metric with the changepoints, and the runs with what changed.
func historySection(h analysis.History, cells []result.Cell) PageSection {
	ids := map[string]int{}
	for _, c := range cells {
		ids[c.Workload+" "+result.FactorString(c.Factors)] = c.ID
	}
	s := figure.History(h, ids)
	title := fmt.Sprintf("History of %s (%d runs)", h.Name, len(h.Runs))
	if h.Earlier > 0 {
		title = fmt.Sprintf("History of %s (its last %d runs of %d)", h.Name, len(h.Runs), len(h.Runs)+h.Earlier)
	}
	ps := PageSection{ID: s.ID, Title: title,
		Doc: fmt.Sprintf("Each workload's headline metric per cell, run by run, with its 95%% interval. Changepoints (dashed red lines, judged on each run's median): %s; "+
			"a history in which nothing changed shows one with probability at most %g. The table says what changed between runs: the experiment file's hash and the environment fingerprint.", report.HistoryMethod, h.Alpha)}
	for _, f := range s.Figures {
		svg, legend := drawFigure(f)
		ps.Figures = append(ps.Figures, PageFigure{ID: f.ID, Kind: string(f.Kind), Title: f.Title, Note: f.Note, Band: f.Band,
			Series: len(f.Series), Points: f.Points(), SVG: template.HTML(svg), Legend: template.HTML(legend)})
	}
	t := &Table{Head: []string{"run", "campaign", "started", "file", "changed since the run before", "changepoints"}}
	for i, r := range h.Runs {
		n := 0
		for _, s := range h.Series {
			for _, c := range s.Changepoints {
				if c.Run == i {
					n++
				}
			}
		}
		cps := ""
		if n > 0 {
			cps = fmt.Sprintf("%d series changed", n)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), r.Campaign.ID, r.Campaign.Started.Format("2006-01-02 15:04"), r.SpecHash, report.HistoryChanges(r.Changes), cps})
	}
	ps.Runs = t
	return ps
}

// Fact is one line of the campaign's summary.
type Fact struct{ Name, Value string }

// PageSection is a workload's (or the interference matrices') figures.
type PageSection struct {
	ID, Title, Type, Doc string
	Figures              []PageFigure
	Telemetry            *Table
	Runs                 *Table   // a history's runs and what changed between them
	Zero                 []string // metrics 0 in every trial, not drawn
	NotDrawn             []string // why some cells are left out of the figures
}

// PageFigure is one drawn figure with what the test counts.
type PageFigure struct {
	ID, Kind, Title, Note, Band string
	Series, Points              int
	SVG, Legend                 template.HTML
}

// Table is a small table of text.
type Table struct {
	Head []string
	Rows [][]string
}

// TrialRow is one trial of the trials table.
type TrialRow struct {
	Seq, Rep, CellID int
	Anchor           bool // the first trial of its cell: carries the cell's anchor
	Workload, Cell   string
	Warmup           bool
	Status           string
	Started          string
	Seconds          string
	Value            string // the workload's headline metric
	Note             string // error or flags
	Flagged          bool
}

// facts are the campaign's summary lines.
func facts(l analysis.Loaded, trials []result.Trial) []Fact {
	c := l.Campaign
	var ok, failed, flagged, warm int
	for _, t := range trials {
		switch {
		case t.Warmup:
			warm++
		case t.Status != result.OK:
			failed++
		default:
			ok++
			if t.Flags != "" {
				flagged++
			}
		}
	}
	fs := []Fact{
		{"campaign", c.ID},
		{"experiment file", c.SpecPath},
		{"seed", fmt.Sprint(c.Seed)},
		{"status", c.Status},
		{"started", c.Started.Format("2006-01-02 15:04:05 MST")},
	}
	if !c.Ended.IsZero() {
		fs = append(fs, Fact{"ended", c.Ended.Format("2006-01-02 15:04:05 MST") + " (" + c.Ended.Sub(c.Started).Round(time.Second).String() + ")"})
	}
	fs = append(fs, Fact{"trials", fmt.Sprintf("%d ok (%d flagged), %d failed or timed out, %d warm-up", ok, flagged, failed, warm)})
	if len(c.Baseline) > 0 {
		fs = append(fs, Fact{"baseline", result.FactorString(c.Baseline)})
	}
	if m := report.MachineNoise(c.Env); m != "" {
		fs = append(fs, Fact{"machine", m})
	}
	return fs
}

// envOf is the environment fingerprint, sorted.
func envOf(c result.Campaign) []Fact {
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Fact, len(keys))
	for i, k := range keys {
		out[i] = Fact{k, c.Env[k]}
	}
	return out
}

// telemetryShown are the counters beside a workload's figures: the ones
// that explain a difference (CPU time, throttling, memory, retransmissions,
// the machine's network softirqs).
var telemetryShown = []string{"cpu_seconds", "cpu_throttled_seconds", "ctx_switches_involuntary", "softirq_net_rx", "softirq_net_tx", "memory_peak_bytes", "tcp_retrans_segs"}

// telemetry is a workload's telemetry table: one row per cell, the mean of
// each counter of each role (and of its neighbours) that was not 0
// everywhere.
func telemetry(rows []analysis.Row, w string, disp []string) *Table {
	var cols []string
	seenCol := map[string]bool{}
	vals := map[int]map[string]float64{}
	var cellOrder []int
	cellLabel := map[int]string{}
	for _, r := range rows {
		if r.Workload != w || r.ID.Kind != result.KindTelemetry || r.ID.Scope.PerCopy() || r.ID.Scope == result.ScopeNeighbour && r.ID.Index > 1 {
			continue
		}
		if !contains(telemetryShown, r.ID.Metric) || r.N == 0 {
			continue
		}
		name := r.Metric
		if vals[r.CellID] == nil {
			vals[r.CellID] = map[string]float64{}
			cellOrder = append(cellOrder, r.CellID)
			cellLabel[r.CellID] = cellName(r.Cell, disp)
		}
		vals[r.CellID][name] = r.Mean
		if r.Mean != 0 && !seenCol[name] {
			seenCol[name] = true
			cols = append(cols, name)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	t := &Table{Head: append([]string{"cell"}, cols...)}
	for _, id := range cellOrder {
		line := []string{cellLabel[id]}
		for _, c := range cols {
			v, ok := vals[id][c]
			if !ok {
				line = append(line, "")
				continue
			}
			line = append(line, report.Sig(v))
		}
		t.Rows = append(t.Rows, line)
	}
	return t
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// cellName names a cell by its display factors' levels.
func cellName(c map[string]string, disp []string) string {
	var parts []string
	for _, k := range disp {
		parts = append(parts, strings.TrimPrefix(k, "param.")+"="+c[k])
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " ")
}

// trialRows is every trial, with the failed and the flagged apart.
func trialRows(trials []result.Trial, cells []result.Cell, rows []analysis.Row, disp map[string][]string) (all, failed, flagged []TrialRow) {
	byID := map[int]result.Cell{}
	for _, c := range cells {
		byID[c.ID] = c
	}
	// The headline value of each trial: its workload's first metric row's.
	headline := map[int]result.MetricID{} // cell -> metric
	unit := map[int]string{}
	for _, r := range rows {
		if _, ok := headline[r.CellID]; !ok && r.ID.Role == "" && r.ID.Kind != result.KindTelemetry && !r.ID.Scope.PerCopy() && r.ID.Scope != result.ScopeNeighbour {
			headline[r.CellID], unit[r.CellID] = r.ID, r.Unit
		}
	}
	anchored := map[int]bool{}
	for _, t := range trials {
		c := byID[t.CellID]
		tr := TrialRow{
			Seq: t.Seq, Rep: t.Repetition, CellID: t.CellID, Workload: c.Workload, Cell: cellName(c.Factors, disp[c.Workload]),
			Warmup: t.Warmup, Status: string(t.Status), Started: t.Started.Format("15:04:05"),
			Flagged: t.Flags != "",
		}
		if !t.Ended.IsZero() && !t.Started.IsZero() {
			tr.Seconds = fmt.Sprintf("%.1f", t.Ended.Sub(t.Started).Seconds())
		}
		if !anchored[t.CellID] {
			anchored[t.CellID], tr.Anchor = true, true
		}
		for _, o := range t.Observations {
			if h, ok := headline[t.CellID]; ok && analysis.SameMetric(o.ID(), h) && !math.IsNaN(o.Value) {
				tr.Value = report.Sig(o.Value) + " " + unit[t.CellID]
				break
			}
		}
		switch {
		case t.Status != result.OK:
			tr.Note = t.Error
			if t.FailedBy != "" {
				tr.Note = "failed by the " + t.FailedBy + ": " + t.Error
			}
		case t.Flags != "":
			tr.Note = t.Flags
		}
		if len(t.Attempts) > 0 {
			tr.Note = strings.TrimSpace(tr.Note + fmt.Sprintf(" (after %d attempt(s) the platform failed)", len(t.Attempts)))
		}
		all = append(all, tr)
		if t.Status != result.OK {
			failed = append(failed, tr)
		} else if t.Flags != "" {
			flagged = append(flagged, tr)
		}
	}
	return all, failed, flagged
}
