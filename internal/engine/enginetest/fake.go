// Package enginetest fakes an engine for tests: the failures a real engine
// cannot produce on demand. Like package engine it speaks the Docker SDK's
// types; only tests import it.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ctrbench/ctrbench/internal/engine"
)

// Fake is an engine.API whose answers the test sets. Calls it does not
// override panic on the nil embedded interface.
type Fake struct {
	engine.API
	PingErr    error
	BuildBody  string // the daemon's JSON build output
	StartErr   error
	RemoveErr  error
	Removed    []string // the containers removed, in order
	ImageFound bool
	// Dependents refuses to remove a container while the one that
	// shares its namespace is there, as podman does.
	Dependents map[string]string
}

func (f *Fake) Ping(context.Context) (types.Ping, error) { return types.Ping{}, f.PingErr }
func (f *Fake) ServerVersion(context.Context) (types.Version, error) {
	return types.Version{Version: "20.10.24", APIVersion: "1.41"}, nil
}
func (f *Fake) Info(context.Context) (system.Info, error) {
	return system.Info{CgroupDriver: "cgroupfs"}, nil
}
func (f *Fake) ClientVersion() string { return "1.41" }
func (f *Fake) ImageInspect(_ context.Context, id string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	if f.ImageFound {
		return image.InspectResponse{ID: "sha256:feed"}, nil
	}
	return image.InspectResponse{}, fmt.Errorf("no such image %s: %w", id, cerrdefs.ErrNotFound)
}
func (f *Fake) ImageBuild(context.Context, io.Reader, build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(f.BuildBody))}, nil
}
func (f *Fake) ContainerCreate(context.Context, *container.Config, *container.HostConfig, *network.NetworkingConfig, *ocispec.Platform, string) (container.CreateResponse, error) {
	return container.CreateResponse{ID: "c0ffee"}, nil
}
func (f *Fake) ContainerAttach(context.Context, string, container.AttachOptions) (types.HijackedResponse, error) {
	c1, c2 := net.Pipe()
	go func() { c2.Close() }()
	return types.NewHijackedResponse(c1, ""), nil
}
func (f *Fake) ContainerStart(context.Context, string, container.StartOptions) error {
	return f.StartErr
}
func (f *Fake) ContainerRemove(_ context.Context, id string, o container.RemoveOptions) error {
	if !o.Force {
		return errors.New("remove without force")
	}
	if d, ok := f.Dependents[id]; ok && !slices.Contains(f.Removed, d) {
		return cerrdefs.ErrConflict.WithMessage("container " + id + " has dependent containers which must be removed before it: " + d)
	}
	f.Removed = append(f.Removed, id)
	return f.RemoveErr
}

// Engine is an engine whose client is f.
func (f *Fake) Engine(t testing.TB) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.WithClient(f))
	if err != nil {
		t.Fatal(err)
	}
	return e
}
