package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/htmlreport"
)

// The HTML reports of the stored campaigns — client/server pairs over
// layers, a co-location campaign, and one with histograms — have the
// structure their golden outlines hold (sections, figures with the series
// and points drawn, tables with their rows), draw every point their
// figures declare, reference nothing outside the file, and stay small.
func TestStoredHTMLReportsGolden(t *testing.T) {
	for _, c := range []struct{ name, db, campaign string }{
		{"pairs", "v3.db", "golden-pairs-20261122-224432-85cf"},
		{"coloc", "v3.db", "golden-coloc-20261122-224331-8012"},
		{"hist", "v5-hist.db", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := storedFile(t, c.db)
			out := filepath.Join(t.TempDir(), "report.html")
			args := []string{"report", "--db", db, "--html", out}
			if c.campaign != "" {
				args = append(args, "--campaign", c.campaign)
			}
			if got := runMain(t, args...); !bytes.HasSuffix(got, []byte("[exit 0]\n")) || !bytes.Contains(got, []byte(out)) {
				t.Fatalf("report --html: %s", got)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > 2<<20 {
				t.Errorf("report is %d bytes: want under 2 MiB", len(data))
			}
			outline, err := htmlreport.Outline(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"EXTERNAL", "MISMATCH", "BAD NUMBER"} {
				if strings.Contains(outline, bad) {
					t.Errorf("outline has %s lines:\n%s", bad, outline)
				}
			}
			if !strings.Contains(outline, "  figure ") {
				t.Errorf("no figure in the report:\n%s", outline)
			}
			golden(t, "stored/"+c.name+"-html.golden", []byte(outline))
		})
	}
}

// --html does not combine with the flags that print one part of a report,
// and an unwritable path is an error that leaves nothing behind.
func TestHTMLReportBadUse(t *testing.T) {
	db := storedCopy(t)
	dir := t.TempDir()
	got := runMain(t, "report", "--db", db, "--html", filepath.Join(dir, "r.html"), "--failures")
	if !bytes.HasSuffix(got, []byte("[exit 2]\n")) {
		t.Errorf("--html --failures: %s; want exit 2", got)
	}
	got = runMain(t, "report", "--db", db, "--html", filepath.Join(dir, "no", "such", "dir", "r.html"))
	if !bytes.HasSuffix(got, []byte("[exit 1]\n")) {
		t.Errorf("--html into a missing directory: %s; want exit 1", got)
	}
	got = runMain(t, "report", "--db", db, "--campaign", storedColoc, "--html", filepath.Join(dir, "r.html"), "--services", "a=Z")
	if !bytes.HasSuffix(got, []byte("[exit 2]\n")) {
		t.Errorf("--html --services a=Z (a kind not measured): %s; want exit 2", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// --format markdown prints the table's groups as Markdown tables under the
// campaign's line; pooled percentiles have no Markdown form and say so.
func TestMarkdownReport(t *testing.T) {
	db := storedCopy(t)
	got := string(runMain(t, "report", "--db", db, "--campaign", "golden-coloc-20261122-224331-8012", "--format", "markdown"))
	for _, want := range []string{
		"**ctrbench campaign `golden-coloc-20261122-224331-8012`**",
		"#### cpu (cpu.primes) — events\\_per\\_sec [events/s], higher is better",
		"| platform | network | cpus | neighbour | packaging | n | mean |",
		"|---|---|",
		"[exit 0]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, got)
		}
	}
	// Every line of a table has as many cells as its header.
	cells := -1
	for i, l := range strings.Split(got, "\n") {
		if !strings.HasPrefix(l, "|") {
			cells = -1
			continue
		}
		n := strings.Count(l, "|") - strings.Count(l, `\|`)
		if cells >= 0 && n != cells {
			t.Errorf("line %d has %d cell separators, the header %d: %s", i+1, n, cells, l)
		}
		cells = n
	}
	if got := string(runMain(t, "report", "--db", db, "--pooled", "--format", "markdown")); !strings.Contains(got, "[exit 2]") {
		t.Errorf("--pooled --format markdown: %s; want exit 2", got)
	}
}
