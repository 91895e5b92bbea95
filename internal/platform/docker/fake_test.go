package docker

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

	"github.com/ctrbench/ctrbench/internal/platform"
)

// fakeAPI produces failures a real engine cannot produce on demand. Calls
// it does not override panic on the nil embedded interface.
type fakeAPI struct {
	API
	pingErr    error
	buildBody  string
	startErr   error
	removeErr  error
	removed    []string
	imageFound bool
	// dependents refuses to remove a container while the one that
	// shares its namespace is there, as podman does.
	dependents map[string]string
}

func (f *fakeAPI) Ping(context.Context) (types.Ping, error) { return types.Ping{}, f.pingErr }
func (f *fakeAPI) ServerVersion(context.Context) (types.Version, error) {
	return types.Version{Version: "20.10.24", APIVersion: "1.41"}, nil
}
func (f *fakeAPI) Info(context.Context) (system.Info, error) {
	return system.Info{CgroupDriver: "cgroupfs"}, nil
}
func (f *fakeAPI) ClientVersion() string { return "1.41" }
func (f *fakeAPI) ImageInspect(_ context.Context, id string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	if f.imageFound {
		return image.InspectResponse{ID: "sha256:feed"}, nil
	}
	return image.InspectResponse{}, fmt.Errorf("no such image %s: %w", id, cerrdefs.ErrNotFound)
}
func (f *fakeAPI) ImageBuild(context.Context, io.Reader, build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(f.buildBody))}, nil
}
func (f *fakeAPI) ContainerCreate(context.Context, *container.Config, *container.HostConfig, *network.NetworkingConfig, *ocispec.Platform, string) (container.CreateResponse, error) {
	return container.CreateResponse{ID: "c0ffee"}, nil
}
func (f *fakeAPI) ContainerAttach(context.Context, string, container.AttachOptions) (types.HijackedResponse, error) {
	c1, c2 := net.Pipe()
	go func() { c2.Close() }()
	return types.NewHijackedResponse(c1, ""), nil
}
func (f *fakeAPI) ContainerStart(context.Context, string, container.StartOptions) error {
	return f.startErr
}
func (f *fakeAPI) ContainerRemove(_ context.Context, id string, o container.RemoveOptions) error {
	if !o.Force {
		return errors.New("remove without force")
	}
	if d, ok := f.dependents[id]; ok && !slices.Contains(f.removed, d) {
		return cerrdefs.ErrConflict.WithMessage("container " + id + " has dependent containers which must be removed before it: " + d)
	}
	f.removed = append(f.removed, id)
	return f.removeErr
}

func TestAvailableFake(t *testing.T) {
	err := Available(context.Background(), WithClient(&fakeAPI{pingErr: errors.New("connection refused")}))
	if err == nil || !strings.Contains(err.Error(), "scripts/setup.sh") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Available = %v", err)
	}
	if err := Available(context.Background(), WithClient(&fakeAPI{})); err != nil {
		t.Errorf("Available with an answering daemon = %v", err)
	}
}

func prepared(t *testing.T, f *fakeAPI) *Platform {
	t.Helper()
	p, err := New(WithClient(f), WithBinary(staticStandin(t)))
	if err != nil {
		t.Fatal(err)
	}
	f.imageFound = true
	if err := p.Prepare(context.Background(), platform.Setup{CampaignID: "fake"}); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartFailureRemovesContainer(t *testing.T) {
	f := &fakeAPI{startErr: errors.New("OCI runtime create failed")}
	p := prepared(t, f)
	_, err := p.Start(context.Background(), platform.InstanceSpec{Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "OCI runtime create failed") {
		t.Errorf("Start = %v", err)
	}
	if len(f.removed) != 1 || f.removed[0] != "c0ffee" {
		t.Errorf("removed %v, want the created container", f.removed)
	}
}

func TestBuildErrorReported(t *testing.T) {
	f := &fakeAPI{buildBody: `{"stream":"Step 1/4 : FROM scratch\n"}` + "\n" + `{"errorDetail":{"message":"no space left on device"},"error":"no space left on device"}` + "\n"}
	p, err := New(WithClient(f), WithBinary(staticStandin(t)))
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	err = p.Prepare(context.Background(), platform.Setup{CampaignID: "fake", Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Prepare = %v", err)
	}
	// A failed build's error carries the builder's log, so the user sees
	// which step failed; a successful build stays one line of progress.
	if err == nil || !strings.Contains(err.Error(), "Step 1/4") {
		t.Errorf("build log not in the error: %v", err)
	}
	if strings.Contains(progress.String(), "Step 1/4") {
		t.Errorf("builder steps written to Progress: %q", progress.String())
	}
}

func TestRemoveTolerance(t *testing.T) {
	for name, rerr := range map[string]error{
		"not found":   fmt.Errorf("no such container: %w", cerrdefs.ErrNotFound),
		"in progress": fmt.Errorf("removal of container c0ffee is already in progress: %w", cerrdefs.ErrConflict),
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{removeErr: rerr}
			inst := &instance{api: f, id: "c0ffee", name: "x"}
			if err := inst.Remove(context.Background()); err != nil {
				t.Errorf("Remove = %v", err)
			}
			if err := inst.Remove(context.Background()); err != nil || len(f.removed) != 1 {
				t.Errorf("second Remove = %v after %d calls", err, len(f.removed))
			}
		})
	}
	f := &fakeAPI{removeErr: errors.New("daemon busy")}
	inst := &instance{api: f, id: "c0ffee", name: "x"}
	if err := inst.Remove(context.Background()); err == nil {
		t.Error("Remove hid a real failure")
	}
	f.removeErr = nil
	if err := inst.Remove(context.Background()); err != nil || len(f.removed) != 2 {
		t.Errorf("retried Remove = %v after %d calls", err, len(f.removed))
	}
}

// A container that shares another's namespace must go first on podman:
// removing a campaign's containers in the engine's list order still
// removes both, and only a container that stays is an error.
func TestRemoveDependents(t *testing.T) {
	f := &fakeAPI{dependents: map[string]string{"server": "client"}}
	if failed := removeContainers(context.Background(), f, []string{"server", "client"}); len(failed) != 0 {
		t.Errorf("failed: %v", failed)
	}
	if !slices.Equal(f.removed, []string{"client", "server"}) {
		t.Errorf("removed %v", f.removed)
	}
	f = &fakeAPI{dependents: map[string]string{"server": "ghost"}}
	failed := removeContainers(context.Background(), f, []string{"server"})
	if err := failed["server"]; err == nil || !strings.Contains(err.Error(), "dependent containers") {
		t.Errorf("a container that cannot go: %v", failed)
	}
}

func TestBufferAndTail(t *testing.T) {
	b := newBuffer()
	b.Write([]byte("ab"))
	b.Write([]byte("c"))
	done := make(chan string)
	go func() { all, _ := io.ReadAll(b); done <- string(all) }()
	b.Write([]byte("d"))
	b.CloseWithError(io.EOF)
	if got := <-done; got != "abcd" {
		t.Errorf("buffer read %q", got)
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Error("write after close succeeded")
	}
}

func TestResources(t *testing.T) {
	r, err := resources(platform.Limits{CPUs: 1.5, Cpuset: "0-1", MemoryBytes: 1 << 30})
	if err != nil || r.NanoCPUs != 1.5e9 || r.CpusetCpus != "0-1" || r.Memory != 1<<30 || r.MemorySwap != 1<<30 {
		t.Errorf("resources = %+v, %v", r, err)
	}
	if r, _ := resources(platform.Limits{}); r.NanoCPUs != 0 || r.Memory != 0 || r.MemorySwap != 0 {
		t.Errorf("zero limits gave %+v", r)
	}
	if _, err := resources(platform.Limits{CPUs: -1}); err == nil {
		t.Error("negative CPUs accepted")
	}
}

func TestBridgeName(t *testing.T) {
	n := BridgeName("20260101-abc")
	if !strings.HasPrefix(n, "ctb") || len(n) != 11 || n != BridgeName("20260101-abc") || n == BridgeName("other") {
		t.Errorf("BridgeName = %q", n)
	}
}
