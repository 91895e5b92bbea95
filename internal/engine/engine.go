// Package engine is ctrbench's one gateway to a Docker Engine API (the
// machine's Docker Engine, a nested parent's, podman's compatible service, a
// swarm manager): the only package that imports the Docker SDK. It makes
// the client (an address, a CLI context, TLS, DOCKER_HOST) and offers what
// the drivers ask of an engine in ctrbench's terms: the daemon's facts,
// images (the agent image built FROM scratch, ensured, saved, loaded),
// networks, volumes, containers (create, attach, start, inspect, wait,
// signal, remove, their events), a swarm's services, tasks and nodes, and
// the objects carrying ctrbench's labels (listed, cleaned).
//
// What a trial does with them is the drivers' (internal/platform/docker,
// nested, podman, swarm); nothing is ever pulled: the machines ctrbench
// runs on may have no registry.
package engine

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
	PingTimeout    = 5 * time.Second
	CleanupTimeout = 30 * time.Second
)

// Option configures New and the functions that make their own client.
type Option func(*options)

type options struct {
	api      API
	host     string // another engine's address, "unix:///path"
	local    bool   // the engine at host runs on this machine (its pids are ours)
	endpoint *platform.Engine
}

// WithEndpoint talks to the engine e names (an address or a Docker CLI
// context, with TLS): a user's swarm manager.
func WithEndpoint(e platform.Engine) Option { return func(o *options) { o.endpoint = &e } }

// WithHost talks to the engine at host ("unix:///path/docker.sock") rather
// than the one the environment names: a nested parent's own daemon.
func WithHost(host string) Option { return func(o *options) { o.host = host } }

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
	if o.endpoint != nil {
		ep, err := engineOptions(*o.endpoint)
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

// Engine is a connection to one engine. It does not contact the engine
// until asked something.
type Engine struct {
	api   API
	owned bool // api was created here and is closed by Close
	// localPIDs: the engine's process IDs are the machine's (it runs here,
	// not inside a nested parent).
	localPIDs bool
}

// New connects to the engine the options name (the environment's without
// any).
func New(opts ...Option) (*Engine, error) {
	o := applyOptions(opts)
	api, owned, err := newClient(o)
	if err != nil {
		return nil, err
	}
	return &Engine{api: api, owned: owned, localPIDs: (o.host == "" || o.local) && o.api == nil}, nil
}

// LocalPIDs reports whether the engine's containers' process IDs are the
// machine's, so their agents can be signalled directly.
func (e *Engine) LocalPIDs() bool { return e.localPIDs }

// Close releases the connection (a client the caller injected is the
// caller's to close).
func (e *Engine) Close() error {
	if e.owned {
		return e.api.Close()
	}
	return nil
}

// Ping reports whether the engine answers.
func (e *Engine) Ping(ctx context.Context) error {
	_, err := e.api.Ping(ctx)
	return err
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
	ctx, cancel := context.WithTimeout(ctx, PingTimeout)
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

// WithTimeout bounds ctx by d unless it already ends sooner.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// unresponsiveTry bounds a clean-up call to an engine known not to answer.
const unresponsiveTry = time.Second

// CleanupContext survives the caller's cancellation (Ctrl-C) so removal
// still happens, but not forever: CleanupTimeout, or the caller's
// deadline when it is sooner (a campaign the watchdog stopped gives its
// clean-up a short one: the engine is known not to answer).
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if errors.Is(context.Cause(ctx), platform.ErrUnresponsive) {
		// The engine is known not to answer: one short try.
		return context.WithTimeout(context.WithoutCancel(ctx), unresponsiveTry)
	}
	d := CleanupTimeout
	if dl, ok := ctx.Deadline(); ok && ctx.Err() == nil && time.Until(dl) < d {
		d = time.Until(dl)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
