package artifact

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
)

// contents are the archive's files but SHA256SUMS, made at made.
func contents(p packed, made time.Time) ([]Entry, error) {
	c := p.Campaign
	env := c.Env
	if env == nil {
		env = map[string]string{}
	}
	envJSON, err := indentJSON(env) // encoding/json sorts a map's keys
	if err != nil {
		return nil, err
	}
	b := thisBuild()
	b.Made, b.Format = made.Format(time.RFC3339), Format
	b.Campaign = &CampaignFacts{ID: c.ID, Name: c.Name, Kind: c.Kind, Status: p.Status,
		Started: stamp(c.Started), Ended: stamp(c.Ended), Calibration: p.Calibration}
	if c.Status != p.Status {
		b.Campaign.StoredStatus = c.Status
	}
	buildJSON, err := indentJSON(b)
	if err != nil {
		return nil, err
	}
	return []Entry{
		{Name: ExperimentName, Data: []byte(c.SpecText)},
		{Name: DBName, Path: filepath.Join(p.Dir, DBName)},
		{Name: ReportName, Path: filepath.Join(p.Dir, ReportName)},
		{Name: EnvName, Data: envJSON},
		{Name: BuildName, Data: buildJSON},
		{Name: CommandsName, Data: []byte(commandsText(p))},
		{Name: ReadmeName, Data: []byte(readmeText(p, b))},
	}, nil
}

// stamp is a time in RFC 3339, UTC; "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// runArgs are the arguments after the file that repeat the campaign: its
// overrides, in order, and its seed (the same cells in the same order).
// A calibration's repetitions, which calibrate appended as an override,
// are its --repetitions.
func runArgs(c result.Campaign) []string {
	_, sets := spec.Overrides(c.SpecText)
	var args []string
	if n := len(sets); c.Kind == result.KindCalibration && n > 0 && strings.HasPrefix(sets[n-1], "repetitions=") {
		args = []string{"--repetitions", strings.TrimPrefix(sets[n-1], "repetitions=")}
		sets = sets[:n-1]
	}
	seeded := false
	for _, s := range sets {
		args = append(args, "--set", s)
		seeded = seeded || strings.HasPrefix(s, "seed=")
	}
	if !seeded {
		args = append(args, "--set", fmt.Sprintf("seed=%d", c.Seed))
	}
	return args
}

// commandsText is commands.txt: the command lines that ran the campaign,
// that check the archive, and that read its results.
func commandsText(p packed) string {
	c := p.Campaign
	verb := "run"
	if c.Kind == result.KindCalibration {
		verb = "calibrate"
	}
	args := runArgs(c)
	line := func(a ...string) string { return shellLine(append([]string{"ctrbench"}, a...)) + "\n" }
	var b strings.Builder
	fmt.Fprintf(&b, "# Command lines of ctrbench campaign %s (%s), %s.\n\n", c.ID, c.Name, p.Status)
	fmt.Fprintf(&b, "# The campaign as it was run: the experiment file at its path then, its\n# --set overrides, and its seed (the same cells in the same order).\n")
	b.WriteString(line(append([]string{verb, c.SpecPath}, args...)...))
	fmt.Fprintf(&b, "\n# The same from this archive, in %s/: experiment.yaml is that file with its\n# overrides appended as comments, which ctrbench ignores; --set applies them.\n", c.ID)
	b.WriteString(line(append([]string{verb, ExperimentName, "--db", "rerun.db"}, args...)...))
	fmt.Fprintf(&b, "\n# Check this archive: SHA256SUMS, and the report rendered again from\n# results.db, byte for byte (any directory, no database needed).\n")
	b.WriteString(line("artifact", "verify", p.File))
	fmt.Fprintf(&b, "# or, after tar -xzf %s:\n", shellQuote(p.File))
	fmt.Fprintf(&b, "cd %s && sha256sum -c SHA256SUMS\n", shellQuote(c.ID))
	fmt.Fprintf(&b, "\n# Read the results, in %s/.\n", c.ID)
	for _, a := range [][]string{
		{"--html", ReportName}, {}, {"--format", "csv"}, {"--format", "json"}, {"--failures"}, {"--telemetry"}, {"--pooled"},
	} {
		b.WriteString(line(append([]string{"report", "--db", DBName, "--campaign", c.ID}, a...)...))
	}
	if p.Calibration != "" {
		fmt.Fprintf(&b, "# the calibration (A/A) its report marks the noise floor by:\n")
		b.WriteString(line("report", "--db", DBName, "--campaign", p.Calibration))
	}
	fmt.Fprintf(&b, "# against a campaign of yours (your database's ID), cell by cell:\n")
	b.WriteString(line("compare", c.ID, "YOUR-CAMPAIGN", "--db", DBName, "--db-b", "YOUR.db"))
	return b.String()
}

// plainArg needs no quoting in a POSIX shell.
var plainArg = regexp.MustCompile(`^[A-Za-z0-9_./=:,+@%-]+$`)

// shellQuote is s as one word of a POSIX shell's command line.
func shellQuote(s string) string {
	if plainArg.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellLine is the command line of args, each quoted as it needs.
func shellLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// readmeText is README.txt: what the archive holds and how to check it.
func readmeText(p packed, b Build) string {
	c := p.Campaign
	var s strings.Builder
	fmt.Fprintf(&s, "Artifact of ctrbench campaign %s\n\n", c.ID)
	fmt.Fprintf(&s, "experiment   %s (file %s)\n", c.Name, c.SpecPath)
	fmt.Fprintf(&s, "status       %s", p.Status)
	if c.Status != p.Status {
		fmt.Fprintf(&s, " (its row says %s: its ctrbench was gone when the archive was made)", c.Status)
	}
	fmt.Fprintf(&s, "\nstarted      %s\nended        %s\n", stamp(c.Started), orNone(stamp(c.Ended)))
	if p.Calibration != "" {
		fmt.Fprintf(&s, "calibration  %s (the A/A run its report marks the noise floor by)\n", p.Calibration)
	}
	fmt.Fprintf(&s, "made         %s by %s, %s/%s\n\n", b.Made, b.describe(), b.OS, b.Arch)
	s.WriteString(`Files
  experiment.yaml   the experiment file as run; its --set overrides follow it as comments
  results.db        a ctrbench results database (SQLite) holding only this campaign — its row,
                    cells, every trial with its observations and histograms — and the
                    calibration its report uses, if any
  report.html       the HTML report, rendered from results.db by ` + "`ctrbench report --db results.db\n" +
		"                    --campaign " + c.ID + " --html report.html`" + `; one file, opens offline
  environment.json  the machine's fingerprint when the campaign ran (kernel, CPU, engine, …)
  ctrbench.json     the ctrbench that made this archive: version, commit, Go, OS; when; the campaign
  commands.txt      the command lines: the run, the check, the reports
  SHA256SUMS        the SHA-256 of every other file

Check
  ctrbench artifact verify ` + shellQuote(p.File) + `
      checks every sum, that no file is missing or extra, and renders the report again from
      results.db with the ctrbench you run, comparing it with report.html byte for byte.
      Any directory will do; no database is needed. A ctrbench of another version or commit
      than ctrbench.json's may render differently; verify says so.
  or, without ctrbench:  tar -xzf ` + shellQuote(p.File) + ` && cd ` + shellQuote(c.ID) + ` && sha256sum -c SHA256SUMS
`)
	return s.String()
}

// orNone is s, or a dash for none.
func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
