package kube

import (
	"maps"
	"os"
	"strconv"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// Labels merges the caller's labels with the three ctrbench labels (the
// campaign's, managed, and this process as its owner), which always win:
// Clean finds what a campaign made by them.
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

// campaignSelector selects the objects of one campaign, or of all
// campaigns when campaign is "".
func campaignSelector(campaign string) string {
	s := platform.LabelManaged + "=true"
	if campaign != "" {
		s += "," + platform.LabelCampaign + "=" + campaign
	}
	return s
}
