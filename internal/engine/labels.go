package engine

import (
	"bytes"
	"maps"
	"os"
	"strconv"

	"github.com/docker/docker/api/types/filters"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// Labels merges the caller's labels with the three ctrbench labels (the
// campaign's, managed, and this process as its owner), which always win.
func Labels(campaign string, extra ...map[string]string) map[string]string {
	l := map[string]string{}
	for _, e := range extra {
		maps.Copy(l, e)
	}
	l[platform.LabelManaged] = "true"
	l[platform.LabelCampaign] = campaign
	l[platform.LabelOwnerPID] = strconv.Itoa(os.Getpid())
	return l
}

// campaignFilter selects the objects of one campaign, or of all campaigns
// when campaign is "".
func campaignFilter(campaign string) filters.Args {
	f := filters.NewArgs(filters.Arg("label", platform.LabelManaged+"=true"))
	if campaign != "" {
		f.Add("label", platform.LabelCampaign+"="+campaign)
	}
	return f
}

// OwnerRunning reports whether the ctrbench that labelled an object (its
// owner-pid label) still runs on this machine.
func OwnerRunning(labels map[string]string) bool {
	return ownerRunning(labels[platform.LabelOwnerPID])
}

// ownerRunning reports whether pid is a live process that is ctrbench, so
// a campaign still running is not pulled from under it. A reused pid that
// belongs to another program does not count.
func ownerRunning(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(n) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("ctrbench"))
}
