package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/cleanup"
	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func newCleanCmd() *cobra.Command {
	var campaign string
	var force, images bool
	var eng engineFlags
	c := &cobra.Command{
		Use:   "clean",
		Short: "Remove what a killed run left behind: containers, networks, volumes, ctb* links, cgroups",
		Long: "clean finds every object carrying ctrbench's labels (and host links named ctb*) and removes it.\n" +
			"Objects of a campaign whose ctrbench process is still running are kept unless --force.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			rep, err := cleanup.Run(cmd.Context(), cleanup.Options{Campaign: campaign, Force: force, Images: images, Engine: eng.apply()})
			for _, n := range rep.Notes {
				fmt.Fprintln(w, n)
			}
			for _, r := range rep.Removed {
				fmt.Fprintf(w, "removed %s\n", r)
			}
			for _, k := range rep.Kept {
				fmt.Fprintf(w, "kept %s\n", k)
			}
			return err
		},
	}
	c.Flags().StringVar(&campaign, "campaign", "", "only this campaign's objects (default: all of ctrbench's)")
	c.Flags().BoolVar(&force, "force", false, "also remove objects of campaigns whose ctrbench process is still running")
	c.Flags().BoolVar(&images, "images", false, "also remove the cached ctrbench-agent images")
	eng.register(c.Flags())
	return c
}

func newImageCmd() *cobra.Command {
	c := &cobra.Command{Use: "image", Short: "Manage the workload image"}
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the local workload image (FROM scratch: ctrbench plus the tools workloads use); no registry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := engine.Available(cmd.Context()); err != nil {
				return err
			}
			binary, err := os.Executable()
			if err != nil {
				return err
			}
			p, err := docker.New(docker.WithBinary(binary))
			if err != nil {
				return err
			}
			var tools []string
			seen := map[string]bool{}
			for _, t := range workload.Types() {
				s, _ := workload.Lookup(t)
				for _, tl := range s.Tools {
					if !seen[tl.Binary] {
						seen[tl.Binary] = true
						tools = append(tools, tl.Binary)
					}
				}
			}
			id := "image-build"
			if err := p.Prepare(cmd.Context(), platform.Setup{CampaignID: id, Tools: tools, Progress: cmd.ErrOrStderr(),
				Labels: map[string]string{platform.LabelManaged: "true", platform.LabelCampaign: id}}); err != nil {
				return err
			}
			defer p.Close(cmd.Context())
			info := p.Info()
			fmt.Fprintf(cmd.OutOrStdout(), "%s (id %s, reused: %s)\n", info["docker.image"], info["docker.image_id"], info["docker.image_reused"])
			if m := p.MissingTools(); len(m) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "not on this host, so not in the image: %s (scripts/setup.sh installs them)\n", strings.Join(m, ", "))
			}
			return nil
		},
	}
	c.AddCommand(build)
	return c
}
