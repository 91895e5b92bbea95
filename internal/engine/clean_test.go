package engine_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/engine/enginetest"
	"github.com/ctrbench/ctrbench/internal/owner"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

// lateEngine is an engine still creating a killed run's container: the
// client's appears only after Clean first looked.
type lateEngine struct {
	enginetest.Fake
	lists int
}

func (e *lateEngine) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	e.lists++
	switch e.lists {
	case 1:
		return []container.Summary{{ID: "server", Names: []string{"/ctrbench-k-t1-server"}}}, nil
	case 2:
		return []container.Summary{{ID: "client", Names: []string{"/ctrbench-k-t1-client"}}}, nil
	}
	return nil, nil
}
func (e *lateEngine) NetworkList(context.Context, network.ListOptions) ([]network.Summary, error) {
	return nil, nil
}
func (e *lateEngine) VolumeList(context.Context, volume.ListOptions) (volume.ListResponse, error) {
	return volume.ListResponse{}, nil
}

// A container that appears after Clean's first look (a killed run's engine
// finishing a create) is removed too: Clean looks again after a pass that
// removed something, until one finds nothing new.
func TestCleanSettles(t *testing.T) {
	e := &lateEngine{}
	rep, err := engine.Clean(context.Background(), "k", true, false, engine.WithClient(e))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ctrbench-k-t1-server", "ctrbench-k-t1-client"}; !slices.Equal(rep.Containers, want) {
		t.Errorf("removed %v, want %v", rep.Containers, want)
	}
	if e.lists != 3 {
		t.Errorf("%d looks, want 3 (the last finds nothing new)", e.lists)
	}
}

// keptEngine holds a container whose owner (this test) still runs, beside
// a killed run's container that appears late: Clean settles over several
// passes and says it kept the live one once, not once a pass.
type keptEngine struct {
	lateEngine
	owner string // the live owner's pid
}

func (e *keptEngine) ContainerList(ctx context.Context, o container.ListOptions) ([]container.Summary, error) {
	out, _ := e.lateEngine.ContainerList(ctx, o)
	l := owner.Labels("live")
	l[platform.LabelOwnerPID] = e.owner
	return append(out, container.Summary{ID: "live", Names: []string{"/ctrbench-live-t1-server"}, Labels: l}), nil
}

func TestCleanKeptOnce(t *testing.T) {
	// A running process that is a ctrbench by its command line.
	e := &keptEngine{owner: strconv.Itoa(testutil.LivePID(t, "ctrbench-owner"))}
	rep, err := engine.Clean(context.Background(), "", false, false, engine.WithClient(e))
	if err != nil {
		t.Fatal(err)
	}
	if e.lists != 3 {
		t.Fatalf("%d looks, want 3 (settling over the late container)", e.lists)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], "ctrbench-live-t1-server") {
		t.Errorf("skipped %q, want the live container once", rep.Skipped)
	}
	if want := []string{"ctrbench-k-t1-server", "ctrbench-k-t1-client"}; !slices.Equal(rep.Containers, want) {
		t.Errorf("removed %v, want %v", rep.Containers, want)
	}
}
