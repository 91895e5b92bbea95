package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/engine/enginetest"
)

func TestAvailableFake(t *testing.T) {
	err := engine.Available(context.Background(), engine.WithClient(&enginetest.Fake{PingErr: errors.New("connection refused")}))
	if err == nil || !strings.Contains(err.Error(), "scripts/setup.sh") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Available = %v", err)
	}
	if err := engine.Available(context.Background(), engine.WithClient(&enginetest.Fake{})); err != nil {
		t.Errorf("Available with an answering daemon = %v", err)
	}
}

// A container already gone, or being removed by someone else, counts as
// removed; any other failure is one.
func TestRemoveTolerance(t *testing.T) {
	for name, rerr := range map[string]error{
		"not found":   fmt.Errorf("no such container: %w", cerrdefs.ErrNotFound),
		"in progress": fmt.Errorf("removal of container c0ffee is already in progress: %w", cerrdefs.ErrConflict),
	} {
		t.Run(name, func(t *testing.T) {
			f := &enginetest.Fake{RemoveErr: rerr}
			if err := f.Engine(t).RemoveContainer(context.Background(), "c0ffee"); err != nil {
				t.Errorf("RemoveContainer = %v", err)
			}
		})
	}
	f := &enginetest.Fake{RemoveErr: errors.New("daemon busy")}
	if err := f.Engine(t).RemoveContainer(context.Background(), "c0ffee"); err == nil {
		t.Error("RemoveContainer hid a real failure")
	}
}

// A container that shares another's namespace must go first on podman:
// removing a campaign's containers in the engine's list order still
// removes both, and only a container that stays is an error.
func TestRemoveDependents(t *testing.T) {
	f := &enginetest.Fake{Dependents: map[string]string{"server": "client"}}
	if failed := f.Engine(t).RemoveContainers(context.Background(), []string{"server", "client"}); len(failed) != 0 {
		t.Errorf("failed: %v", failed)
	}
	if !slices.Equal(f.Removed, []string{"client", "server"}) {
		t.Errorf("removed %v", f.Removed)
	}
	f = &enginetest.Fake{Dependents: map[string]string{"server": "ghost"}}
	failed := f.Engine(t).RemoveContainers(context.Background(), []string{"server"})
	if err := failed["server"]; err == nil || !strings.Contains(err.Error(), "dependent containers") {
		t.Errorf("a container that cannot go: %v", failed)
	}
}

func TestBridgeName(t *testing.T) {
	n := engine.BridgeName("20260101-abc")
	if !strings.HasPrefix(n, "ctb") || len(n) != 11 || n != engine.BridgeName("20260101-abc") || n == engine.BridgeName("other") {
		t.Errorf("BridgeName = %q", n)
	}
}
