package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/workload"
)

func newCleanCmd() *cobra.Command {
	var campaign string
	var force, images bool
	c := &cobra.Command{
		Use:   "clean",
		Short: "Remove what a killed run left behind: containers, networks, volumes, ctb* links, cgroups",
		Long: "clean finds every object carrying ctrbench's labels (and host links named ctb*) and removes it.\n" +
			"Objects of a campaign whose ctrbench process is still running are kept unless --force.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			var problems []string
			live := false
			// What each platform's engine holds: containers, networks,
			// volumes, images.
			for _, d := range platform.Drivers() {
				if d.Clean == nil {
					continue
				}
				out, err := d.Clean(cmd.Context(), platform.CleanOptions{Campaign: campaign, Force: force, Images: images})
				if out.Skipped != "" {
					fmt.Fprintf(w, "%s: %s\n", d.Name, out.Skipped)
				}
				for _, r := range out.Removed {
					fmt.Fprintf(w, "removed %s\n", r)
				}
				for _, k := range out.Kept {
					fmt.Fprintf(w, "kept %s\n", k)
				}
				live = live || len(out.Kept) > 0
				if err != nil {
					problems = append(problems, err.Error())
				}
			}
			// Links and namespaces are not labelled, only named; while a
			// campaign runs they are in use, so they are kept unless forced.
			if pids := otherRuns(); len(pids) > 0 && !live {
				live = true
				fmt.Fprintf(w, "a ctrbench run is in progress (pid %s)\n", strings.Join(pids, ", "))
			}
			if !live || force {
				labRemoved, err := netlab.Clean()
				if err != nil {
					problems = append(problems, err.Error())
				}
				for _, r := range labRemoved {
					fmt.Fprintf(w, "removed %s\n", r)
				}
				removed, err := links.RemoveAll(nil)
				if err != nil {
					problems = append(problems, err.Error())
				}
				for _, l := range removed {
					fmt.Fprintf(w, "removed link %s\n", l)
				}
			} else {
				fmt.Fprintf(w, "kept network namespaces, OVS bridges and links named %s* (a campaign is still running; --force removes them)\n", platform.LinkPrefix)
			}
			tree := cgroup.Base
			if campaign != "" {
				tree = cgroup.CampaignTree(campaign)
			}
			if !live || force {
				for _, d := range cgroup.RemoveTree(tree) {
					fmt.Fprintf(w, "removed cgroup %s\n", d)
				}
			}
			if len(problems) > 0 {
				return fmt.Errorf("%s", strings.Join(problems, "\n"))
			}
			return nil
		},
	}
	c.Flags().StringVar(&campaign, "campaign", "", "only this campaign's objects (default: all of ctrbench's)")
	c.Flags().BoolVar(&force, "force", false, "also remove objects of campaigns whose ctrbench process is still running")
	c.Flags().BoolVar(&images, "images", false, "also remove the cached ctrbench-agent images")
	return c
}

// otherRuns lists the pids of other `ctrbench run` processes.
func otherRuns() []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) >= 2 && filepath.Base(args[0]) == "ctrbench" && args[1] == "run" {
			out = append(out, e.Name())
		}
	}
	return out
}

func newImageCmd() *cobra.Command {
	c := &cobra.Command{Use: "image", Short: "Manage the workload image"}
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the local workload image (FROM scratch: ctrbench plus the tools workloads use); no registry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := docker.Available(cmd.Context()); err != nil {
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
