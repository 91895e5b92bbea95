package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/campaign"
	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/orchestrator"
	"github.com/ctrbench/ctrbench/internal/plan"
	_ "github.com/ctrbench/ctrbench/internal/platform/drivers" // registers every platform
	"github.com/ctrbench/ctrbench/internal/spec"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// DefaultDB is where results go unless --db says otherwise.
const DefaultDB = "results/ctrbench.db"

type runOptions struct {
	File     string
	Profile  string
	Sets     []string
	Pool     string // --subnet-pool: the file's subnet_pool, overridden
	DB       string
	DryRun   bool
	Resume   string
	NoReport bool
	Format   string
	HTML     string // also write the HTML report there
	LockWait time.Duration
	Engine   engineFlags
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
  ctrbench run experiments/quickstart.yaml --profile quick --dry-run
  ctrbench run --resume quickstart-20261122-0215`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Resume == "" && len(args) != 1 {
				return usageError{errors.New("run takes one experiment file (or --resume CAMPAIGN)")}
			}
			if o.Resume != "" && len(args) > 0 {
				return usageError{errors.New("--resume takes the experiment from the database; give no file")}
			}
			if o.Resume != "" && (o.Profile != "" || len(o.Sets) > 0 || o.Pool != "") {
				return usageError{errors.New("--resume runs the campaign as it was stored, with its profile, overrides and subnet pool; give neither --profile, --set nor --subnet-pool")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.File = args[0]
			}
			if o.Pool != "" {
				o.Sets = append(o.Sets, "subnet_pool="+o.Pool)
			}
			if o.LockWait <= 0 {
				return usageError{fmt.Errorf("--lock-wait %s: a duration above zero, such as 10m", o.LockWait)}
			}
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runCampaign(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Profile, "profile", "", "apply a profile of the file (its profiles: key) before the --set overrides")
	f.StringArrayVar(&o.Sets, "set", nil, "override a value of the file: path=value (repeatable), e.g. repetitions=10, factors.platform=[docker]")
	f.StringVar(&o.Pool, "subnet-pool", "", "the IPv4 /15 every address the campaign configures comes from (the file's subnet_pool; default "+subnets.DefaultPool+", RFC 2544's benchmarking range)")
	f.StringVar(&o.DB, "db", DefaultDB, "results database (SQLite)")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate and print the cells and trial order; start nothing")
	f.StringVar(&o.Resume, "resume", "", "resume an interrupted campaign by ID (or unique prefix): runs only its missing trials")
	f.BoolVar(&o.NoReport, "no-report", false, "do not print the report at the end")
	f.DurationVar(&o.LockWait, "lock-wait", orchestrator.DefaultLockWait, "how long to wait for another process (a sqlite3 shell, a backup) to let go of the results file's lock, the trials going on meanwhile, before the campaign stops (resumable)")
	f.StringVar(&o.Format, "format", "table", "report format at the end: table, csv, json, markdown")
	o.Engine.register(f)
	f.StringVar(&o.HTML, "html", "", "also write the campaign's HTML report (figures, telemetry, failures, every trial; one self-contained file) to this path at the end")
	return c
}

func machine() spec.Machine {
	cpus, mem := sysinfo.Machine()
	return spec.Machine{CPUs: cpus, MemBytes: mem, NoBlkioWeight: !cgroup.BlkioWeightSupported(), Image: engineImage}
}

// engineImage looks a user's image up in the Docker Engine the
// environment names, where ctrbench takes it from for every platform.
func engineImage(ref string) error {
	ctx, cancel := context.WithTimeout(context.Background(), engine.PingTimeout)
	defer cancel()
	e, err := engine.New()
	if err != nil {
		return fmt.Errorf("%w: %v", spec.ErrImageUnchecked, err)
	}
	defer e.Close()
	if err := e.Ping(ctx); err != nil {
		return fmt.Errorf("%w: the Docker Engine does not answer (%v)", spec.ErrImageUnchecked, err)
	}
	if _, err := e.ImageID(ctx, ref); err != nil {
		if engine.Gone(err) {
			return fmt.Errorf("image %s is not in the Docker Engine (docker images lists what is): load it there (docker load -i FILE) or build it, or give its `docker save` archive as image_archive", ref)
		}
		return fmt.Errorf("%w: %v", spec.ErrImageUnchecked, err)
	}
	return nil
}

func runCampaign(ctx context.Context, o runOptions) error {
	if o.HTML != "" {
		// Found out now, not after hours of trials.
		if fi, err := os.Stat(filepath.Dir(o.HTML)); err != nil || !fi.IsDir() {
			return usageError{fmt.Errorf("--html %s: its directory does not exist", o.HTML)}
		}
	}
	co := campaign.Options{Resume: o.Resume, Machine: machine(), Stderr: o.Stderr, TTY: isTerminal(o.Stderr), Engine: o.Engine.apply(), LockWait: o.LockWait}
	if o.Resume == "" && o.DryRun {
		return dryRun(o, co.Machine)
	}
	if o.Resume == "" {
		e, err := loadExperiment(spec.Options{Profile: o.Profile, Sets: o.Sets, Machine: co.Machine}, o.File)
		if err != nil {
			return err
		}
		printNotes(o.Stderr, e)
		co.Experiment = e
	} else if o.DryRun {
		return usageError{errors.New("--dry-run needs an experiment file")}
	}
	binary, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ctrbench binary: %w", err)
	}
	co.Binary = binary
	db, err := store.Open(ctx, o.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	out, runErr := campaign.Run(ctx, db, co)
	id, sum := out.Campaign.ID, out.Summary
	if runErr != nil {
		return interruptedOr(runErr, out, o.DB)
	}
	fmt.Fprintf(o.Stderr, "campaign %s finished: %d trials ok, %d failed\n", id, sum.OK, sum.Failed)
	if !o.NoReport {
		if err := writeReport(ctx, db, reportOptions{Campaign: id, Format: o.Format}, o.Stdout); err != nil {
			return err
		}
	}
	if o.HTML != "" {
		if err := writeHTML(ctx, db, reportOptions{Campaign: id, HTML: o.HTML}, o.Stderr); err != nil {
			return err
		}
	}
	if len(sum.CleanupErrors) > 0 {
		return withCode(ExitError, errors.New(leftBehind(sum.CleanupErrors, id)))
	}
	if sum.Failed > 0 {
		return withCode(ExitTrialsFailed, fmt.Errorf("%d trial(s) failed; see `ctrbench report --db %s --campaign %s --failures`", sum.Failed, o.DB, id))
	}
	return nil
}

// loadExperiment reads and validates the experiment file with its
// profile and overrides, and resolves its cells; a profile the file lacks
// is a usage error.
func loadExperiment(so spec.Options, file string) (*spec.Experiment, error) {
	e, err := spec.LoadWith(file, so)
	if err != nil {
		return nil, profileUsage(err)
	}
	if _, err := plan.ResolveAll(e, e.Cells()); err != nil {
		return nil, unplanned(e, err)
	}
	return e, nil
}

// unplanned is a cell of the file the plan cannot resolve (a server on a
// published port whose client is not on the machine…): a problem of the
// file, found before anything starts and reported as validation's are
// (exit status 2).
func unplanned(e *spec.Experiment, err error) error {
	return spec.Problems{{File: e.Path, Msg: err.Error()}}
}

// profileUsage makes a --profile the file lacks a usage error.
func profileUsage(err error) error {
	var pe *spec.ProfileError
	if errors.As(err, &pe) {
		return usageError{err}
	}
	return err
}

// dryRun validates the experiment file and prints the campaign's plan.
// With a profile written for a larger machine, the plan is printed and
// what a run here would refuse is said after it.
func dryRun(o runOptions, m spec.Machine) error {
	e, warnings, err := spec.LoadForPlan(o.File, spec.Options{Profile: o.Profile, Sets: o.Sets, Machine: m})
	if err != nil {
		return profileUsage(err)
	}
	printNotes(o.Stderr, e)
	if err := plan.Describe(o.Stdout, e); err != nil {
		return unplanned(e, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(o.Stdout, "warning:", w)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printNotes says where an experiment file used an accepted older spelling.
func printNotes(w io.Writer, e *spec.Experiment) {
	for _, n := range e.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}
