// Package cli maps ctrbench's command line onto the packages that do the
// work. It is the only package that imports cobra; each command only turns
// flags into an options struct and calls one function.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/spec"
)

// Exit codes.
const (
	ExitOK           = 0
	ExitError        = 1
	ExitInvalidInput = 2
	ExitTrialsFailed = 3
)

// exitError carries an exit code up to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs the command line and returns the process exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var problems spec.Problems
	var ee *exitError
	switch {
	case errors.As(err, &problems):
		fmt.Fprintf(stderr, "%s\nctrbench: the experiment file has %d problem(s); nothing was started\n", problems.Error(), len(problems))
		return ExitInvalidInput
	case errors.As(err, &ee):
		if ee.err.Error() != "" {
			fmt.Fprintf(stderr, "ctrbench: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "ctrbench: %v\n", err)
	if isUsage(err) {
		return ExitInvalidInput
	}
	return ExitError
}

type usageError struct{ error }

func isUsage(err error) bool { var u usageError; return errors.As(err, &u) }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "ctrbench",
		Short:         "Measure what containers cost microservices",
		Long:          "ctrbench runs declarative experiments — workloads in every placement, platform and network mode asked for — repeats them in randomised order, stores every trial in SQLite and reports statistics.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())}
	})
	root.AddCommand(newRunCmd(), newReportCmd(), newAdviseCmd(), newCampaignsCmd(), newCalibrateCmd(), newCompareCmd(), newHistoryCmd(), newArtifactCmd(), newImageCmd(), newCleanCmd(), newAgentCmd(), newWorkloadsCmd(), newSubnetsCmd(), newVersionCmd())
	return root
}
