// Package cleanup removes what ctrbench runs left behind — a campaign's
// containers, networks and volumes (through each platform driver), the
// network namespaces, OVS bridges and ctb* links of the network lab, and
// ctrbench's cgroups — after a kill. `ctrbench clean` runs it for every
// campaign; resuming a campaign runs it for that campaign first.
package cleanup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/netlab"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// Options say what to remove.
type Options struct {
	Campaign string          // only this campaign's objects; "" for all of ctrbench's
	Force    bool            // also what a still-running ctrbench owns
	Images   bool            // also cached images
	Engine   platform.Engine // a user's swarm manager (--docker-host)
}

// Report is what Run did, line by line as `ctrbench clean` prints it.
type Report struct {
	Removed []string // "container ctrbench-…", "link ctb1a2bs", "cgroup …"
	Kept    []string // what a running ctrbench still owns
	Notes   []string // "docker: not reachable, skipped (…)"
	// Live: another ctrbench run is in progress, so what is named but not
	// labelled (namespaces, links) was kept.
	Live bool
}

// Run removes leftovers. Failures to remove one thing do not stop the
// others; they come back joined.
func Run(ctx context.Context, o Options) (Report, error) {
	var rep Report
	var errs []error
	for _, d := range platform.Drivers() {
		if d.Clean == nil {
			continue
		}
		out, err := d.Clean(ctx, platform.CleanOptions{Campaign: o.Campaign, Force: o.Force, Images: o.Images, Engine: o.Engine})
		if out.Skipped != "" {
			rep.Notes = append(rep.Notes, d.Name+": "+out.Skipped)
		}
		rep.Removed = append(rep.Removed, out.Removed...)
		rep.Kept = append(rep.Kept, out.Kept...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Namespaces and links carry a run's token, not its campaign: while
	// any other run is alive they may be its, so they are kept.
	rep.Live = len(rep.Kept) > 0
	if pids := OtherRuns(); len(pids) > 0 && !rep.Live {
		rep.Live = true
		rep.Notes = append(rep.Notes, "a ctrbench run is in progress (pid "+strings.Join(pids, ", ")+")")
	}
	if rep.Live && !o.Force {
		rep.Notes = append(rep.Notes, "kept network namespaces, OVS bridges and links named "+platform.LinkPrefix+"* (a campaign is still running; --force removes them)")
		return rep, errors.Join(errs...)
	}
	lab, err := netlab.Clean()
	rep.Removed = append(rep.Removed, lab...)
	errs = append(errs, err)
	rules, err := firewall.Clean(nil)
	cni, cerr := firewall.CleanCNI(nil) // podman's bridges' isolation rules
	direct, derr := firewall.CleanDirect(nil)
	for _, r := range slices.Concat(rules, cni, direct) {
		rep.Removed = append(rep.Removed, "iptables rule "+r)
	}
	errs = append(errs, err, cerr, derr)
	// The bridges of Docker networks still there (a campaign left alone)
	// are the engine's to remove.
	removed, err := links.RemoveAll(engine.LiveBridges(ctx))
	for _, l := range removed {
		rep.Removed = append(rep.Removed, "link "+l)
	}
	errs = append(errs, err)
	tree := cgroup.Base
	if o.Campaign != "" {
		tree = cgroup.CampaignTree(o.Campaign)
	}
	for _, d := range cgroup.RemoveTree(tree) {
		rep.Removed = append(rep.Removed, "cgroup "+d)
	}
	return rep, errors.Join(errs...)
}

// OtherRuns lists the pids of other `ctrbench run` processes that could
// own what clean removes by name here: those sharing this process's mount
// namespace (where /run/netns names namespaces) or network namespace
// (where links are). A run in a container or an emulated machine of its
// own (both namespaces its own) names its namespaces and links there, not
// here. A run whose namespaces cannot be read counts.
func OtherRuns() []string {
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
		if len(args) >= 2 && filepath.Base(args[0]) == "ctrbench" && args[1] == "run" && sharesNamespaces(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// sharesNamespaces reports whether process pid shares this process's
// mount or network namespace, or either cannot be read.
func sharesNamespaces(pid string) bool {
	for _, ns := range []string{"mnt", "net"} {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		its, err2 := os.Readlink("/proc/" + pid + "/ns/" + ns)
		if err1 != nil || err2 != nil || mine == its {
			return true
		}
	}
	return false
}
