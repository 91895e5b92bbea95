// Package owner is how ctrbench marks what a campaign makes and tells
// whether the run that made it still lives: the labels every object
// carries (managed, its campaign, this process as its owner) and the
// check on an owner's pid. Both gateways — engine for Docker's objects,
// kube for Kubernetes' — label with it, and every clean asks it, so a
// running campaign's objects are never pulled from under it.
package owner

import (
	"bytes"
	"maps"
	"os"
	"strconv"

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

// Running reports whether the ctrbench that labelled an object (its
// owner-pid label) still runs on this machine: a live process that is
// ctrbench. A reused pid that belongs to another program does not count.
func Running(labels map[string]string) bool {
	n, err := strconv.Atoi(labels[platform.LabelOwnerPID])
	if err != nil || n <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(n) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("ctrbench"))
}
