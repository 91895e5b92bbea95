package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/platform"
)

// FactorImageStore is where the engine keeps images and containers'
// layers: its classic storage driver (overlay2) or containerd's image
// store (its snapshotter), an option of Docker 24 to 28 and the default
// of 29. It changes what making a container costs, so it is a factor of
// creation time and start latency. Changing it takes a restart of the
// engine, which ctrbench does only through a command it is given
// (EngineRestartEnv): it never restarts the machine's engine by itself.
const FactorImageStore = "image_store"

// The image store's levels.
const (
	StoreOverlay2   = "overlay2"
	StoreContainerd = "containerd"
)

// SeenImageStore is the key of an instance's record that says which image
// store its container was made in (engine.Facts.ImageStore).
const SeenImageStore = "image_store"

// EngineRestartEnv names the command that restarts the engine with the
// image store given as its one argument (overlay2 or containerd) and
// returns once it answers; scripts/docker-engine.sh sets it for the
// Docker Engine it runs.
const EngineRestartEnv = "CTRBENCH_ENGINE_RESTART"

// ImageStoreFactor is the image store factor's declaration; "" (a cell
// that does not set it) keeps the engine's as it is.
var ImageStoreFactor = platform.Factor{
	Name:    FactorImageStore,
	Default: "",
	Doc:     "the engine's image store: overlay2 (its classic storage driver) or containerd (containerd's image store, Docker 24 and later); changing it restarts the engine through the command in " + EngineRestartEnv + " (ctrbench never restarts the machine's engine by itself); not set: the engine's as it is",
	Check:   checkImageStore,
}

// checkImageStore accepts a level when it names a store and the engine
// can be given it: a restart command is set, and the engine is recent
// enough (when it answers).
func checkImageStore(level string) (string, error) {
	if level != StoreOverlay2 && level != StoreContainerd {
		return "", fmt.Errorf("want %s or %s", StoreOverlay2, StoreContainerd)
	}
	if os.Getenv(EngineRestartEnv) == "" {
		return "", fmt.Errorf("the image store is changed by restarting the engine, and ctrbench never restarts the machine's engine by itself: set %s to a command that restarts your engine with the store named as its argument (scripts/docker-engine.sh sets it for the Docker Engine it runs)", EngineRestartEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), engine.PingTimeout)
	defer cancel()
	if facts, err := machineFacts(ctx); err == nil && level == StoreContainerd {
		if err := facts.HasContainerdStore(); err != nil {
			return "", err
		}
	}
	return level, nil
}

// ensureStore restarts the engine with image store want when it has
// another (the cell's level; "" leaves it), then brings the campaign's
// images into it, before an instance of the cell is made: the restart is
// never part of a trial's timings. One instance at a time switches; the
// others of the trial find it done.
func (p *Platform) ensureStore(ctx context.Context, want string) error {
	if want == "" {
		return nil
	}
	p.storeMu.Lock()
	defer p.storeMu.Unlock()
	camp, err := p.current()
	if err != nil {
		return err
	}
	if camp.daemon.ImageStore() == want {
		return nil
	}
	restart := os.Getenv(EngineRestartEnv)
	if restart == "" {
		return fmt.Errorf("image store %s: %s is not set (the engine's store is %s)", want, EngineRestartEnv, camp.daemon.ImageStore())
	}
	start := time.Now()
	out, err := exec.CommandContext(ctx, "sh", "-c", restart+" "+want).CombinedOutput()
	if err != nil {
		return fmt.Errorf("restarting the engine with image store %s (%s %s): %w: %s", want, restart, want, err, strings.TrimSpace(string(out)))
	}
	facts, err := p.awaitEngine(ctx, 2*time.Minute)
	if err != nil {
		return fmt.Errorf("the engine after its restart with image store %s: %w", want, err)
	}
	if got := facts.ImageStore(); got != want {
		return fmt.Errorf("the engine restarted with image store %s, not %s (%s %s)", got, want, restart, want)
	}
	p.mu.Lock()
	c := *p.camp
	c.daemon, c.image, c.users, c.runtimes = facts, engine.AgentImage{}, maps.Clone(p.presetUsers), nil
	p.camp = &c
	setup := p.setup
	p.mu.Unlock()
	if err := p.Prepare(ctx, setup); err != nil {
		return fmt.Errorf("bringing the campaign's images into image store %s: %w", want, err)
	}
	fmt.Fprintf(setup.Notes(), "docker: the engine restarted with image store %s in %.1fs (its images brought into it)\n", want, time.Since(start).Seconds())
	return nil
}

// awaitEngine waits until the engine answers, and reads its facts anew.
func (p *Platform) awaitEngine(ctx context.Context, d time.Duration) (engine.Facts, error) {
	deadline := time.Now().Add(d)
	for {
		pctx, cancel := context.WithTimeout(ctx, engine.PingTimeout)
		err := p.eng.Ping(pctx)
		cancel()
		if err == nil {
			return p.eng.Facts(ctx)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return engine.Facts{}, errors.Join(err, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
