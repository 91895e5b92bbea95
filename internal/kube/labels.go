package kube

import (
	"github.com/ctrbench/ctrbench/internal/platform"
)

// campaignSelector selects the objects of one campaign, or of all
// campaigns when campaign is "".
func campaignSelector(campaign string) string {
	s := platform.LabelManaged + "=true"
	if campaign != "" {
		s += "," + platform.LabelCampaign + "=" + campaign
	}
	return s
}
