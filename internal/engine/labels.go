package engine

import (
	"github.com/docker/docker/api/types/filters"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// campaignFilter selects the objects of one campaign, or of all campaigns
// when campaign is "".
func campaignFilter(campaign string) filters.Args {
	f := filters.NewArgs(filters.Arg("label", platform.LabelManaged+"=true"))
	if campaign != "" {
		f.Add("label", platform.LabelCampaign+"="+campaign)
	}
	return f
}
