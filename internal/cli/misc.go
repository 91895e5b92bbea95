package cli

import (
	"fmt"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "ctrbench %s (%s, %s/%s)\n", sysinfo.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}

func newWorkloadsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "workloads [TYPE]",
		Short: "List workload types, or describe one: parameters, metrics, roles",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if len(args) == 0 {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, t := range workload.Types() {
					s, _ := workload.Lookup(t)
					fmt.Fprintf(tw, "%s\t%s\n", t, s.Summary)
				}
				return tw.Flush()
			}
			s, ok := workload.Lookup(args[0])
			if !ok {
				return usageError{fmt.Errorf("unknown workload type %q; types: %s", args[0], strings.Join(workload.Types(), ", "))}
			}
			fmt.Fprintf(w, "%s — %s\nroles: %s\n", s.Type, s.Summary, strings.Join(s.RoleList(), ", "))
			if len(s.Tools) > 0 {
				for _, t := range s.Tools {
					if t.Package == "" {
						fmt.Fprintf(w, "tool: %s (built by make, beside ctrbench)\n", t.Binary)
					} else {
						fmt.Fprintf(w, "tool: %s (Debian package %s)\n", t.Binary, t.Package)
					}
				}
			}
			if s.Trial.Work != nil {
				fmt.Fprintf(w, "dry-run estimate of a trial: %s\n", s.Trial.Work.Basis)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\nparameter\tdefault\tallowed\tmeaning")
			for _, p := range s.Params {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Default, p.Describe(), p.Doc)
			}
			fmt.Fprintln(tw, "\nmetric\tunit\tbetter\tover pairs\tmeaning")
			for _, m := range s.Metrics {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, m.Unit, m.Better, m.Combine.Describe(m.Unit), m.Doc)
			}
			return tw.Flush()
		},
	}
}
