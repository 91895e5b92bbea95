package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/studies.md states, for every shipped study file and each of its
// profiles, what the dry run plans: cells, repetitions, warm-ups, trials
// and the estimated duration. Each row is the dry run's own numbers, and
// every profile of every file the document studies has its row.
func TestStudiesDocMatchesDryRuns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "studies.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := studiesRows(t, string(b))
	studied := regexp.MustCompile("(?m)^## S[0-9].*\\(`([a-z0-9-]+\\.yaml)`\\)$").FindAllStringSubmatch(string(b), -1)
	if len(studied) < 6 {
		t.Fatalf("docs/studies.md names %d study files in its headings, want the six", len(studied))
	}
	for _, m := range studied {
		file := m[1]
		plan := dryRunPlan(t, file, "")
		profiles := []string{""}
		if m := regexp.MustCompile(`the file's profiles, chosen with --profile NAME: ([^)]*)\)`).FindStringSubmatch(plan.out); m != nil {
			profiles = append(profiles, strings.Split(m[1], ", ")...)
		}
		for _, p := range profiles {
			row, ok := rows[file+"|"+p]
			if !ok {
				t.Errorf("docs/studies.md has no row for %s with profile %q", file, profileName(p))
				continue
			}
			delete(rows, file+"|"+p)
			got := plan
			if p != "" {
				got = dryRunPlan(t, file, p)
			}
			if row.trials != got.trials || row.duration != got.duration {
				t.Errorf("docs/studies.md, %s profile %s: %q, %q; the dry run: %q, %q",
					file, profileName(p), row.trials, row.duration, got.trials, got.duration)
			}
		}
	}
	for key := range rows {
		t.Errorf("docs/studies.md has a row for %s, which no study file of its headings has", strings.Replace(key, "|", " profile ", 1))
	}
}

// studiesRow is what a row of the document's table states.
type studiesRow struct{ trials, duration string }

// studiesRows reads the table whose header starts "| file | study |
// profile |", by file and profile ("" for none).
func studiesRows(t *testing.T, doc string) map[string]studiesRow {
	t.Helper()
	rows := map[string]studiesRow{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "| file | study | profile |"):
			in = true
			continue
		case !in || strings.HasPrefix(line, "|---"):
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 5 {
			t.Fatalf("docs/studies.md: a row of the table has %d columns, want 6: %s", len(cells), line)
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		profile := cell(2)
		if profile == "none" {
			profile = ""
		}
		key := cell(0) + "|" + profile
		if _, dup := rows[key]; dup {
			t.Errorf("docs/studies.md: two rows for %s profile %s", cell(0), profileName(profile))
		}
		rows[key] = studiesRow{trials: cell(3), duration: cell(4)}
	}
	if len(rows) == 0 {
		t.Fatal("docs/studies.md has no table \"| file | study | profile | …\"")
	}
	return rows
}

// dryRunPlanned is a dry run's output and what it plans in the document's
// words: "52 × (30 + 1) = 1612" and "~34 h".
type dryRunPlanned struct{ out, trials, duration string }

// dryRunPlan runs `ctrbench run FILE [--profile P] --dry-run`.
func dryRunPlan(t *testing.T, file, profile string) dryRunPlanned {
	t.Helper()
	args := []string{"run", filepath.Join("..", "..", "experiments", file), "--dry-run"}
	if profile != "" {
		args = append(args, "--profile", profile)
	}
	out := string(runMain(t, args...))
	if !strings.HasSuffix(out, "[exit 0]\n") {
		t.Fatalf("%s: the dry run failed:\n%s", strings.Join(args, " "), out)
	}
	trials := regexp.MustCompile(`(?m)^experiment \S+: (\d+) cells x \((\d+(?: to \d+)?) repetitions \+ (\d+) warm-up\) = (\d+(?: to \d+)?) trials`).FindStringSubmatch(out)
	duration := regexp.MustCompile(`(?m)^estimated duration on this machine: (~.*?) \(`).FindStringSubmatch(out)
	if trials == nil || duration == nil {
		t.Fatalf("%s: no plan or estimate in:\n%s", strings.Join(args, " "), out)
	}
	return dryRunPlanned{out: out, trials: trials[1] + " × (" + trials[2] + " + " + trials[3] + ") = " + trials[4], duration: duration[1]}
}

// profileName names the file's default, which has no profile, "none".
func profileName(profile string) string {
	if profile == "" {
		return "none"
	}
	return profile
}
