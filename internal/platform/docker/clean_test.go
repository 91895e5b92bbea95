package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

// leftovers makes what a killed campaign leaves behind: a running
// container, a network with its ctb bridge, a volume and, if withImage, an
// image, all labelled with the given owner pid.
func leftovers(t *testing.T, campaign string, owner int, withImage bool) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { engine.Clean(context.Background(), campaign, true, true) })
	labels := map[string]string{
		platform.LabelManaged:  "true",
		platform.LabelCampaign: campaign,
		platform.LabelOwnerPID: strconv.Itoa(owner),
	}
	// On a subnet of ctrbench's pool, as a campaign's (the last of the
	// engines' blocks, which campaigns take last).
	sub := subnets.Default().Block(subnets.EnginesLast)
	if _, err := docker.NetworkCreate(ctx, engine.NetworkName(campaign), network.CreateOptions{
		Driver: "bridge", Labels: labels, Options: map[string]string{"com.docker.network.bridge.name": engine.BridgeName(campaign)},
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: sub.String(), Gateway: subnets.Gateway(sub).String()}}},
	}); err != nil {
		t.Fatal(err)
	}
	c, err := docker.ContainerCreate(ctx,
		&container.Config{Image: testImageTag(), Cmd: []string{"sleep", "60"}, Labels: labels},
		&container.HostConfig{NetworkMode: container.NetworkMode(engine.NetworkName(campaign))},
		nil, nil, "ctrbench-"+campaign+"-left")
	if err != nil {
		t.Fatal(err)
	}
	if err := docker.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := docker.VolumeCreate(ctx, volume.CreateOptions{Name: "ctrbench-" + campaign, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if !withImage {
		return
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	df := []byte("FROM scratch\nCOPY f /f\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	tw.Write(df)
	tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: int64(len(campaign))})
	tw.Write([]byte(campaign))
	tw.Close()
	resp, err := docker.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{"ctrbench-agent:" + campaign}, Labels: labels, Remove: true, Version: build.BuilderV1,
	})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := docker.ImageInspect(ctx, "ctrbench-agent:"+campaign); err != nil {
		t.Fatalf("test image not built: %v", err)
	}
}

func TestCleanDeadOwner(t *testing.T) {
	newCampaign(t) // makes sure the agent image exists
	campaign := "test-" + randHex(8)
	leftovers(t, campaign, testutil.DeadPID(t), true)

	rep, err := engine.Clean(context.Background(), campaign, false, true)
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	t.Logf("report: %+v", rep)
	if len(rep.Containers) != 1 || len(rep.Networks) != 1 || len(rep.Volumes) != 1 || len(rep.Images) != 1 || len(rep.Skipped) != 0 {
		t.Errorf("report %+v, want one of each removed and nothing skipped", rep)
	}
	assertNothingLeft(t, campaign)
	if _, err := docker.ImageInspect(context.Background(), "ctrbench-agent:"+campaign); err == nil {
		t.Error("image left")
	}
	vols, _ := docker.VolumeList(context.Background(), volume.ListOptions{Filters: labelFilter(campaign)})
	if len(vols.Volumes) != 0 {
		t.Errorf("volumes left: %d", len(vols.Volumes))
	}
	// The shared agent image is a cache: Clean without images keeps it.
	if _, err := docker.ImageInspect(context.Background(), testImageTag()); err != nil {
		t.Errorf("agent image gone: %v", err)
	}
}

func TestCleanLiveOwner(t *testing.T) {
	newCampaign(t)
	campaign := "test-" + randHex(8)
	leftovers(t, campaign, testutil.LivePID(t, "ctrbench-owner"), false)
	ctx := context.Background()

	rep, err := engine.Clean(ctx, campaign, false, false)
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	t.Logf("report: %+v", rep)
	if len(rep.Containers)+len(rep.Networks)+len(rep.Volumes) != 0 || len(rep.Skipped) != 3 {
		t.Errorf("report %+v, want 3 skipped and nothing removed", rep)
	}
	cs, _ := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: labelFilter(campaign)})
	if len(cs) != 1 {
		t.Errorf("live campaign's container was removed")
	}

	rep, err = engine.Clean(ctx, campaign, true, false)
	if err != nil {
		t.Fatalf("Clean force: %v", err)
	}
	if len(rep.Containers) != 1 || len(rep.Networks) != 1 || len(rep.Volumes) != 1 || len(rep.Skipped) != 0 {
		t.Errorf("forced report %+v, want one of each removed", rep)
	}
	assertNothingLeft(t, campaign)
}

// Objects of other campaigns are not touched by a campaign's Clean.
func TestCleanOtherCampaign(t *testing.T) {
	newCampaign(t)
	mine, other := "test-"+randHex(8), "test-"+randHex(8)
	leftovers(t, other, testutil.DeadPID(t), false)
	rep, err := engine.Clean(context.Background(), mine, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Containers)+len(rep.Networks)+len(rep.Volumes)+len(rep.Images) != 0 {
		t.Errorf("engine.Clean(%s) removed %+v", mine, rep)
	}
	ns, _ := docker.NetworkList(context.Background(), network.ListOptions{Filters: labelFilter(other)})
	if len(ns) != 1 {
		t.Errorf("other campaign's network removed")
	}
}
