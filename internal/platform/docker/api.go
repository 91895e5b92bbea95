// Package docker runs agents in Docker containers. It is the only package
// in ctrbench that imports the Docker SDK.
//
// Prepare builds (or reuses) a FROM-scratch agent image from the local
// ctrbench binary and creates a per-campaign bridge network; Start runs one
// container per agent. Nothing is ever pulled: the machines ctrbench runs on
// may have no registry.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// API is the subset of the Docker client this package uses. *client.Client
// satisfies it; tests inject fakes only for failures a real engine cannot
// produce on demand.
type API interface {
	Ping(ctx context.Context) (types.Ping, error)
	ServerVersion(ctx context.Context) (types.Version, error)
	Info(ctx context.Context) (system.Info, error)
	ClientVersion() string

	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
	ImageInspect(ctx context.Context, imageID string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, imageID string, options image.RemoveOptions) ([]image.DeleteResponse, error)

	NetworkCreate(ctx context.Context, name string, options network.CreateOptions) (network.CreateResponse, error)
	NetworkInspect(ctx context.Context, networkID string, options network.InspectOptions) (network.Inspect, error)
	NetworkList(ctx context.Context, options network.ListOptions) ([]network.Summary, error)
	NetworkRemove(ctx context.Context, networkID string) error

	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerWait(ctx context.Context, containerID string, condition container.WaitCondition) (<-chan container.WaitResponse, <-chan error)
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerKill(ctx context.Context, containerID, signal string) error

	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)

	ImageSave(ctx context.Context, imageIDs []string, opts ...client.ImageSaveOption) (io.ReadCloser, error)
	ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error)

	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error

	Close() error
}

var _ API = (*client.Client)(nil)

// Timeouts for waits that have no natural end of their own. A caller's
// shorter deadline always wins.
const (
	pingTimeout    = 5 * time.Second
	prepareTimeout = 10 * time.Minute // image build of a large binary included
	startTimeout   = 2 * time.Minute
	cleanupTimeout = 30 * time.Second
	drainTimeout   = 5 * time.Second // for output still in flight after exit
)

// Option configures New and Clean.
type Option func(*options)

type options struct {
	binary string
	api    API
	host   string // another engine's address, "unix:///path"
	image  string // an agent image already in the engine: nothing is built
	local  bool   // the engine at host runs on this machine (its pids are ours)
	engine *platform.Engine
}

// WithEngine talks to the engine e names (an address or a Docker CLI
// context, with TLS): a user's swarm manager.
func WithEngine(e platform.Engine) Option { return func(o *options) { o.engine = &e } }

// WithBinary sets the statically linked ctrbench binary put in the image.
// Prepare needs it.
func WithBinary(path string) Option { return func(o *options) { o.binary = path } }

// WithHost talks to the engine at host ("unix:///path/docker.sock") rather
// than the one the environment names: a nested parent's own daemon.
func WithHost(host string) Option { return func(o *options) { o.host = host } }

// WithImage says the agent image tag is already in the engine (loaded into
// a nested parent's daemon, or in its preloaded store): Prepare checks it
// is there and builds nothing.
func WithImage(tag string) Option { return func(o *options) { o.image = tag } }

// WithLocalHost says the engine at WithHost's address runs on this machine,
// not inside a container (podman's service): its containers' process IDs
// are the machine's, so their namespaces can be entered and their agents
// signalled directly.
func WithLocalHost() Option { return func(o *options) { o.local = true } }

// WithClient replaces the Docker client, for tests.
func WithClient(api API) Option { return func(o *options) { o.api = api } }

func applyOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// newClient returns the injected client or a new one from the environment
// (DOCKER_HOST etc.); owned reports whether the caller must close it.
func newClient(o options) (api API, owned bool, err error) {
	if o.api != nil {
		return o.api, false, nil
	}
	from := []client.Opt{client.FromEnv}
	if o.host != "" {
		from = []client.Opt{client.WithHost(o.host)}
	}
	if o.engine != nil {
		ep, err := engineOptions(*o.engine)
		if err != nil {
			return nil, false, err
		}
		from = ep.opts
	}
	c, err := client.NewClientWithOpts(append(from, client.WithAPIVersionNegotiation())...)
	if err != nil {
		return nil, false, fmt.Errorf("creating docker client: %w", err)
	}
	return c, true, nil
}

// Available reports whether a Docker daemon answers.
func Available(ctx context.Context, opts ...Option) error {
	api, owned, err := newClient(applyOptions(opts))
	if err != nil {
		return err
	}
	if owned {
		defer api.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := api.Ping(ctx); err != nil {
		return unreachable(api, err)
	}
	return nil
}

func unreachable(api API, err error) error {
	host := ""
	if c, ok := api.(interface{ DaemonHost() string }); ok {
		host = " at " + c.DaemonHost()
	}
	return fmt.Errorf("docker daemon not reachable%s: %w (run scripts/setup.sh to install and start it)", host, err)
}

// withTimeout bounds ctx by d unless it already ends sooner.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// cleanupContext survives the caller's cancellation (Ctrl-C) so removal
// still happens, but not forever.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

var errNoPrepare = errors.New("docker platform: Start called before Prepare")
