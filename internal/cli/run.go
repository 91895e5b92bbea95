package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/ctrbench/ctrbench/internal/cgroup"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/platform/native"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// DefaultDB is where results go unless --db says otherwise.
const DefaultDB = "results/ctrbench.db"

type runOptions struct {
	File     string
	Sets     []string
	DB       string
	DryRun   bool
	Resume   string
	NoReport bool
	Format   string
	Stdout   io.Writer
	Stderr   io.Writer
}

func newRunCmd() *cobra.Command {
	o := runOptions{}
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run an experiment file (or resume an interrupted campaign with --resume)",
		Example: `  ctrbench run experiments/quickstart.yaml
  ctrbench run experiments/quickstart.yaml --set repetitions=10 --set workloads.cpu.params.max_prime=40000
  ctrbench run --resume quickstart-20261122-0215`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Resume == "" && len(args) != 1 {
				return usageError{errors.New("run takes one experiment file (or --resume CAMPAIGN)")}
			}
			if o.Resume != "" && len(args) > 0 {
				return usageError{errors.New("--resume takes the experiment from the database; give no file")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.File = args[0]
			}
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runCampaign(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Sets, "set", nil, "override a value of the file: path=value (repeatable), e.g. repetitions=10, factors.platform=[docker]")
	f.StringVar(&o.DB, "db", DefaultDB, "results database (SQLite)")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate and print the cells and trial order; start nothing")
	f.StringVar(&o.Resume, "resume", "", "resume an interrupted campaign by ID (or unique prefix): runs only its missing trials")
	f.BoolVar(&o.NoReport, "no-report", false, "do not print the report at the end")
	f.StringVar(&o.Format, "format", "table", "report format at the end: table, csv, json")
	return c
}

func machine() spec.Machine {
	cpus, mem := sysinfo.Machine()
	return spec.Machine{CPUs: cpus, MemBytes: mem, NoBlkioWeight: !cgroup.BlkioWeightSupported()}
}

var setTrailer = regexp.MustCompile(`(?m)^# --set (.*)$`)

func runCampaign(ctx context.Context, o runOptions) error {
	var (
		e        *spec.Experiment
		db       *store.DB
		campaign result.Campaign
		err      error
		done     map[int]bool
	)
	if o.Resume == "" {
		if e, err = spec.Load(o.File, o.Sets, machine()); err != nil {
			return err
		}
	}
	if o.DryRun {
		if e == nil {
			return usageError{errors.New("--dry-run needs an experiment file")}
		}
		return printPlan(o.Stdout, e)
	}
	if db, err = store.Open(ctx, o.DB); err != nil {
		return err
	}
	defer db.Close()

	if o.Resume != "" {
		if campaign, err = db.Campaign(ctx, o.Resume); err != nil {
			return fmt.Errorf("finding campaign to resume: %w", err)
		}
		var sets []string
		for _, m := range setTrailer.FindAllStringSubmatch(campaign.SpecText, -1) {
			sets = append(sets, m[1])
		}
		text := setTrailer.ReplaceAllString(campaign.SpecText, "")
		if e, err = spec.Parse(campaign.SpecPath, []byte(strings.TrimRight(text, "\n")+"\n"), sets, machine()); err != nil {
			return err
		}
		e.Seed = campaign.Seed
		if done, err = db.DoneSeqs(ctx, campaign.ID); err != nil {
			return err
		}
		fmt.Fprintf(o.Stderr, "resuming campaign %s (%s)\n", campaign.ID, campaign.SpecPath)
	}
	cells := e.Cells()

	binary, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ctrbench binary: %w", err)
	}
	platforms, err := platformsFor(ctx, cells, binary)
	if err != nil {
		return err
	}

	if o.Resume == "" {
		campaign = result.Campaign{
			ID: newCampaignID(e.Name), Name: e.Name, SpecPath: e.Path, SpecText: e.Text, Seed: e.Seed,
			Started: time.Now().UTC(), Status: "running", Env: sysinfo.Fingerprint(toolNames(cells)), Baseline: e.Baseline,
		}
		if err := db.CreateCampaign(ctx, campaign); err != nil {
			return err
		}
		if err := db.AddCells(ctx, campaign.ID, cells); err != nil {
			return err
		}
		seedNote := ""
		if !e.SeedGiven {
			seedNote = " (drawn; pass --set seed=N to repeat this order)"
		}
		fmt.Fprintf(o.Stderr, "campaign %s: %d cells, %d trials, seed %d%s, results in %s\n",
			campaign.ID, len(cells), len(cells)*(e.Repetitions+e.Warmup), e.Seed, seedNote, o.DB)
	}

	sum, runErr := orchestrator.Run(ctx, orchestrator.Options{
		Experiment: e,
		CampaignID: campaign.ID,
		Cells:      cells,
		Platforms:  platforms,
		Done:       done,
		Sink: func(t result.Trial) error {
			// The campaign's context may be cancelled already (Ctrl-C): a
			// finished trial is still written.
			_, err := db.RecordTrial(context.WithoutCancel(ctx), t)
			return err
		},
		Prepared: func(info map[string]string) {
			if err := db.SetCampaignEnv(context.WithoutCancel(ctx), campaign.ID, info); err != nil {
				fmt.Fprintf(o.Stderr, "ctrbench: recording platform info: %v\n", err)
			}
		},
		Progress: orchestrator.NewProgress(o.Stderr, isTerminal(o.Stderr)),
	})
	status := "done"
	switch {
	case errors.Is(runErr, orchestrator.ErrInterrupted):
		status = "interrupted"
	case runErr != nil:
		status = "failed"
	}
	if err := db.FinishCampaign(context.WithoutCancel(ctx), campaign.ID, status, time.Now().UTC()); err != nil {
		fmt.Fprintf(o.Stderr, "ctrbench: recording campaign end: %v\n", err)
	}
	if errors.Is(runErr, orchestrator.ErrInterrupted) {
		return withCode(ExitError, fmt.Errorf("interrupted after %d of %d trials; everything it created was removed; resume with: ctrbench run --db %s --resume %s", sum.Ran, sum.Planned, o.DB, campaign.ID))
	}
	if runErr != nil {
		return runErr
	}
	fmt.Fprintf(o.Stderr, "campaign %s finished: %d trials ok, %d failed\n", campaign.ID, sum.OK, sum.Failed)
	if !o.NoReport {
		if err := writeReport(ctx, db, reportOptions{Campaign: campaign.ID, Format: o.Format}, o.Stdout); err != nil {
			return err
		}
	}
	if sum.Failed > 0 {
		return withCode(ExitTrialsFailed, fmt.Errorf("%d trial(s) failed; see `ctrbench report --db %s --campaign %s --failures`", sum.Failed, o.DB, campaign.ID))
	}
	return nil
}

// platformsFor creates only the platforms the cells use, so a native-only
// experiment needs no Docker daemon.
func platformsFor(ctx context.Context, cells []result.Cell, binary string) (map[string]platform.Platform, error) {
	used := map[string]bool{}
	for _, c := range cells {
		ws, _ := workload.Lookup(c.WorkloadType)
		for _, r := range ws.RoleList() {
			used[spec.PlacementFor(c.Factors, r).Platform] = true
		}
		if c.Factors[spec.FPackaging] == spec.PackSeparate {
			used[spec.PlacementFor(c.Factors, spec.RoleAntagonist).Platform] = true
		}
	}
	out := map[string]platform.Platform{}
	if used["native"] {
		out["native"] = native.New(binary)
	}
	if used["docker"] {
		if err := docker.Available(ctx); err != nil {
			return nil, err
		}
		p, err := docker.New(docker.WithBinary(binary))
		if err != nil {
			return nil, err
		}
		out["docker"] = p
	}
	return out, nil
}

func toolNames(cells []result.Cell) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cells {
		ws, _ := workload.Lookup(c.WorkloadType)
		for _, t := range ws.Tools {
			if !seen[t.Binary] {
				seen[t.Binary] = true
				out = append(out, t.Binary)
			}
		}
	}
	return out
}

var nonID = regexp.MustCompile(`[^a-z0-9]+`)

// newCampaignID is name-date-time-random: readable, sortable, unique, and
// valid in Docker object names.
func newCampaignID(name string) string {
	n := strings.Trim(nonID.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > 24 {
		n = n[:24]
	}
	if n == "" {
		n = "campaign"
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%s-%s", n, time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(b))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func printPlan(w io.Writer, e *spec.Experiment) error {
	cells := e.Cells()
	fmt.Fprintf(w, "experiment %s: %d cells x (%d repetitions + %d warm-up) = %d trials, seed %d, timeout %s per trial\n",
		e.Name, len(cells), e.Repetitions, e.Warmup, len(cells)*(e.Repetitions+e.Warmup), e.Seed, e.Timeout)
	if v := e.Envelope; !v.IsZero() {
		var parts []string
		if v.CPUs > 0 {
			parts = append(parts, fmt.Sprintf("%g cores", v.CPUs))
		}
		if v.Cpuset != "" {
			parts = append(parts, "cpuset "+v.Cpuset)
		}
		if v.MemoryBytes > 0 {
			parts = append(parts, workload.FormatSize(v.MemoryBytes))
		}
		fmt.Fprintf(w, "emulated machine: %s (every instance runs inside one cgroup with these limits)\n", strings.Join(parts, ", "))
	}
	for _, c := range cells {
		base := ""
		if id, ok := e.BaselineOf(c, cells); ok {
			if id == c.ID {
				base = "  (baseline)"
			} else {
				base = fmt.Sprintf("  (baseline: cell %d)", id)
			}
		}
		fmt.Fprintf(w, "  cell %2d  %-12s %s%s\n", c.ID, c.Workload, result.FactorString(c.Factors), base)
	}
	ids := make([]int, len(cells))
	for i, c := range cells {
		ids[i] = c.ID
	}
	fmt.Fprint(w, "order (cell ids):")
	for _, pt := range spec.Order(ids, e.Repetitions, e.Warmup, e.Seed) {
		mark := ""
		if pt.Warmup {
			mark = "w"
		}
		fmt.Fprintf(w, " %d%s", pt.CellID, mark)
	}
	fmt.Fprintln(w)
	return nil
}
