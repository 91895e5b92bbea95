package kube

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

// Clean removes a campaign's namespace, with its pod, once its owner is
// dead, and keeps one whose owner is a running ctrbench.
func TestClean(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	owned := func(pid int) (campaign, ns string) {
		campaign = testCampaign(t)
		labels := owner.Labels(campaign)
		labels[platform.LabelOwnerPID] = strconv.Itoa(pid) // Labels names this process
		ns, err := c.ensureNamespace(ctx, campaign, labels)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeleteNamespace(context.Background(), ns) })
		return campaign, ns
	}
	deadCampaign, deadNS := owned(testutil.DeadPID(t))
	liveCampaign, liveNS := owned(testutil.LivePID(t, "/usr/bin/ctrbench"))
	p, err := c.StartPod(ctx, PodSpec{Name: "sleeper", Namespace: deadNS, Image: smokeImage, Args: []string{"sleep", "3600"}})
	if err != nil {
		t.Fatal(err)
	}

	removed, err := c.Clean(ctx, deadCampaign)
	if err != nil || !slices.Equal(removed, []string{deadNS}) {
		t.Errorf("Clean(%s) = %v, %v; want [%s]", deadCampaign, removed, err, deadNS)
	}
	if _, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metaGet); err == nil {
		t.Errorf("pod %s/%s still there after Clean", p.Namespace, p.Name)
	}
	removed, err = c.Clean(ctx, liveCampaign)
	if err != nil || len(removed) != 0 {
		t.Errorf("Clean(%s) = %v, %v; want nothing removed: its owner runs", liveCampaign, removed, err)
	}
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, liveNS, metaGet); err != nil {
		t.Errorf("namespace %s of a running owner: %v", liveNS, err)
	}
}
