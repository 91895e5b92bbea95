package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// JUnit XML, as CI systems read it (Jenkins, GitLab, GitHub's test
// reporters): one test suite for the comparison, one test case per
// judged change — failed where the metric regressed beyond the
// threshold, skipped where nothing could be judged (undetermined). A
// comparison that judged no metric is one case in error, never an empty
// suite that passes.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr,omitempty"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name    string      `xml:"name,attr"`
	Tests   int         `xml:"tests,attr"`
	Fails   int         `xml:"failures,attr"`
	Errors  int         `xml:"errors,attr"`
	Skipped int         `xml:"skipped,attr"`
	Time    string      `xml:"time,attr"`
	Cases   []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitMessage `xml:"failure,omitempty"`
	Error   *junitMessage `xml:"error,omitempty"`
	Skipped *junitMessage `xml:"skipped,omitempty"`
	Out     string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// compareJUnit writes the comparison as JUnit XML.
func compareJUnit(w io.Writer, c analysis.Comparison) error {
	s := junitSuite{Name: fmt.Sprintf("ctrbench compare %s %s (threshold ±%g%%)", c.A.ID, c.B.ID, c.Threshold), Time: "0"}
	for _, ch := range c.Changes {
		if !ch.Judged {
			continue
		}
		tc := junitCase{Class: "ctrbench." + ch.Workload, Name: result.FactorString(ch.Cell) + " " + ch.Metric, Time: "0"}
		detail := fmt.Sprintf("A %s: mean %s (n=%d); B %s: mean %s (n=%d); change %s; p Holm %s; verdict %s",
			c.A.ID, Sig(ch.A.Mean), ch.A.N, c.B.ID, Sig(ch.B.Mean), ch.B.N, changeText(ch), pValue(ch.PHolm), ch.Verdict)
		switch ch.Verdict {
		case analysis.Regressed:
			tc.Failure = &junitMessage{Message: fmt.Sprintf("%s regressed beyond ±%g%%: %s", ch.Metric, c.Threshold, changeText(ch)), Type: "regression", Text: detail}
			s.Fails++
		case analysis.Undetermined:
			tc.Skipped = &junitMessage{Message: "undetermined: " + ch.Note, Text: detail}
			s.Skipped++
		default:
			tc.Out = detail
		}
		s.Cases = append(s.Cases, tc)
		s.Tests++
	}
	if c.Judged == 0 {
		s.Cases = append(s.Cases, junitCase{Class: "ctrbench", Name: "comparison", Time: "0",
			Error: &junitMessage{Message: NothingJudged(c), Type: "nothing-judged"}})
		s.Tests++
		s.Errors++
	}
	out := junitSuites{Name: "ctrbench", Tests: s.Tests, Fails: s.Fails, Errors: s.Errors, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// changeText is a change as the table prints it: "-19.3% [-21.0, -17.6]".
func changeText(ch analysis.Change) string {
	if !finite(ch.Pct) {
		return "-"
	}
	s := signed(ch.Pct) + "%"
	if finite(ch.CI95[0]) {
		s += " " + interval(ch.CI95, signed)
	}
	return s
}

// CompareSummary writes the comparison's verdict as Markdown, for a CI
// job's summary page ($GITHUB_STEP_SUMMARY): a line with the verdict (a
// cross and the reason when nothing was judged), the settings that
// differ, then the judged changes that are not "no change".
func CompareSummary(w io.Writer, c analysis.Comparison) error {
	verdict := fmt.Sprintf(":white_check_mark: no metric regressed beyond ±%g%%", c.Threshold)
	switch {
	case c.Judged == 0:
		verdict = ":x: " + NothingJudged(c)
	case c.Regressed > 0:
		verdict = fmt.Sprintf(":x: %d metric(s) regressed beyond ±%g%%", c.Regressed, c.Threshold)
	}
	fmt.Fprintf(w, "### ctrbench compare `%s` → `%s`\n\n%s; %d of %d judged changed (q < 0.05).\n\n", c.A.ID, c.B.ID, verdict, c.Discoveries, c.Judged)
	if len(c.Settings) > 0 {
		parts := make([]string, len(c.Settings))
		for i, d := range c.Settings {
			parts[i] = mdCell(SettingChange(d))
		}
		fmt.Fprintf(w, "Settings differ (the cells matched on their other factors): %s.\n\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w, "| workload | cell | metric | A mean | B mean | change [95% CI] | p Holm | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	shown := 0
	for _, ch := range c.Changes {
		if !ch.Judged || ch.Verdict == analysis.NoChange {
			continue
		}
		shown++
		fmt.Fprintf(w, "| %s | %s | %s [%s] | %s | %s | %s | %s | %s |\n", mdCell(ch.Workload), mdCell(result.FactorString(ch.Cell)), mdCell(ch.Metric), mdCell(ch.Unit),
			Sig(ch.A.Mean), Sig(ch.B.Mean), changeText(ch), pValue(ch.PHolm), ch.Verdict)
	}
	if shown == 0 {
		fmt.Fprintln(w, "| | | | | | | | every judged metric: no change |")
	}
	_, err := fmt.Fprintln(w)
	return err
}

// mdCell keeps a Markdown table cell whole.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
