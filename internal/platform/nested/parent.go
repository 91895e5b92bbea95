package nested

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/cgroup"
	"github.com/ctrbench/ctrbench/internal/engine"
	"github.com/ctrbench/ctrbench/internal/firewall"
	"github.com/ctrbench/ctrbench/internal/links"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/docker"
	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// daemonTimeout bounds how long a parent's engine may take to answer.
const daemonTimeout = 2 * time.Minute

// parent is one parent container and its engine.
type parent struct {
	name      string
	network   vocab.Network // on the machine
	limits    platform.Limits
	preloaded bool
	labels    map[string]string
	subnet    int          // inner bridge slot (subnets.Pool.InnerBridge), -1 without a bridge
	pool      subnets.Pool // the campaign's subnet pool
	storeDir  string       // a seed's data root on the host (the preloaded store it makes)
	// hostBridge is the bridge ctrbench made in the machine's namespace
	// for the engine of a parent on the host network ("" otherwise).
	hostBridge string
	hostname   string // its host name, when it is a node ("" for Docker's)
	requested  time.Time

	ready chan struct{} // closed when set up (err says how)
	err   error
	outer platform.Instance // the parent container
	inner *docker.Platform  // its engine
	ip    string            // its address on the machine's side ("" on the host network)
	// wired is the address the lab wired a parent with network none with
	// (Wired), once it has; guarded by mu.
	wired string
	sock  string // host directory of its API socket
	at    map[vocab.Phase]time.Time
	done  func() // forget it in the platform

	mu       sync.Mutex
	capacity int
	reserved int
	released int
	removed  bool
	removeAt time.Time
}

// reserve takes a child's place in the parent, if it has one left.
func (pr *parent) reserve() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.removed || pr.reserved >= pr.capacity {
		return false
	}
	pr.reserved++
	return true
}

// setUp starts the parent container, waits for its engine, brings the
// agent image into it and prepares it; ready is closed at the end.
func (pr *parent) setUp(ctx context.Context, p *Platform) {
	defer close(pr.ready)
	pr.at = map[vocab.Phase]time.Time{}
	fail := func(err error) { pr.err = fmt.Errorf("parent %s: %w", pr.name, err) }
	var store string
	if pr.preloaded {
		var err error
		if store, err = p.preloadedStore(ctx); err != nil {
			fail(err)
			return
		}
	}
	p.mu.Lock()
	work, parentImage, agentTar, setup := p.work, p.parentImage, p.agentTar, p.setup
	userTars, users := maps.Clone(p.userTars), maps.Clone(p.users)
	p.mu.Unlock()
	if err := pr.makeHostSide(work); err != nil {
		fail(err)
		return
	}
	if err := pr.startOuter(ctx, p, parentImage, store); err != nil {
		fail(err)
		return
	}
	inner, err := pr.connectInner(ctx, p, users)
	if err != nil {
		fail(err)
		return
	}
	if err := loadAll(ctx, inner, pr.tars(agentTar, userTars)); err != nil {
		fail(err)
		return
	}
	if err := pr.prepareInner(ctx, inner, setup); err != nil {
		fail(err)
		return
	}
	pr.at[vocab.ImageReady] = time.Now()
	if err := openInner(pr, inner); err != nil {
		fail(err)
		return
	}
	if err := routeTo(pr); err != nil {
		fail(err)
	}
}

// makeHostSide makes what the parent needs on the machine, below the
// campaign's directory work: the directory of its engine's API socket
// and, on the host network, the bridge its engine is given.
func (pr *parent) makeHostSide(work string) error {
	// A unix socket's path is short (108 bytes): the name's hash.
	sum := sha256.Sum256([]byte(pr.name))
	pr.sock = filepath.Join(work, "s", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(pr.sock, 0o700); err != nil {
		return err
	}
	if pr.network == vocab.Host {
		// An engine in the machine's namespace must be given a bridge of
		// ctrbench's: without one it deletes the machine's docker0.
		pr.hostBridge = platform.LinkPrefix + "np" + hex.EncodeToString(sum[:4])
		sub, _ := pr.subnetOf()
		addr := &net.IPNet{IP: net.IP(subnets.Gateway(pr.pool.InnerBridge(pr.subnet)).AsSlice()), Mask: sub.Mask}
		if err := links.AddBridge(pr.hostBridge, addr); err != nil {
			pr.hostBridge = ""
			return err
		}
	}
	return nil
}

// startOuter starts the parent container with its engine (from image
// parentImage, on data root store when preloaded), and records when it
// was created and started.
func (pr *parent) startOuter(ctx context.Context, p *Platform, parentImage, store string) error {
	e := pr.engineSpec(parentImage, store)
	spec := platform.InstanceSpec{Name: pr.name, Network: pr.network, Limits: pr.limits, Labels: pr.labels}
	outer, err := p.outer.StartEngine(ctx, spec, e)
	if err != nil {
		return err
	}
	pr.outer, pr.ip = outer, outer.IP()
	t := outer.Timings()
	pr.at[vocab.Create], pr.at[vocab.Start] = t.At[vocab.Create], t.At[vocab.Start]
	return nil
}

// connectInner makes the Docker platform of the parent's engine (pr.inner),
// knowing the users' images users, and waits until that engine answers.
func (pr *parent) connectInner(ctx context.Context, p *Platform, users map[string]engine.UserImage) (*docker.Platform, error) {
	// The agent image is loaded below (a seed loads it into the store it
	// makes), or is in the preloaded store: never built in the parent.
	inner, err := docker.New(docker.WithEngine(engine.WithHost("unix://"+filepath.Join(pr.sock, "docker.sock"))), docker.WithImage(p.outer.AgentImage()),
		docker.WithUserImages(users))
	if err != nil {
		return nil, err
	}
	pr.inner = inner
	if err := pr.awaitEngine(ctx); err != nil {
		return nil, err
	}
	pr.at[vocab.DaemonReady] = time.Now()
	return inner, nil
}

// tars are the saved images to load into the parent's engine: the agent
// image's agentTar unless the parent is preloaded, then the users' images
// userTars in their keys' order.
func (pr *parent) tars(agentTar string, userTars map[string]string) []string {
	var tars []string
	if !pr.preloaded {
		tars = append(tars, agentTar)
	}
	// Users' images are loaded into every parent, preloaded or not: the
	// store holds the agent image alone.
	for _, key := range slices.Sorted(maps.Keys(userTars)) {
		tars = append(tars, userTars[key])
	}
	return tars
}

// loadAll loads the saved images tars into a parent's engine, in order,
// stopping at the first that fails.
func loadAll(ctx context.Context, inner *docker.Platform, tars []string) error {
	for _, tar := range tars {
		if err := loadInto(ctx, inner, tar); err != nil {
			return err
		}
	}
	return nil
}

// prepareInner prepares the parent's engine for the campaign of setup:
// the host network, the inner bridge when the parent has one of its own,
// storage layer and tmpfs.
func (pr *parent) prepareInner(ctx context.Context, inner *docker.Platform, setup platform.Setup) error {
	networks := []vocab.Network{vocab.Host}
	if pr.subnet >= 0 && pr.hostBridge == "" {
		networks = append(networks, vocab.BridgeDefault)
	}
	return inner.Prepare(ctx, platform.Setup{CampaignID: setup.CampaignID, Labels: setup.Labels, Networks: networks,
		Storages: []vocab.Storage{vocab.Layer, vocab.Tmpfs}})
}

// openInner lets what reaches the parent for its inner bridge through to
// the children there, on an engine inside that filters it (Docker 28:
// firewall.OpenInner), in the parent's own namespace.
func openInner(pr *parent, inner *docker.Platform) error {
	if pr.subnet < 0 || pr.hostBridge != "" || !inner.Daemon().FiltersDirectAccess() {
		return nil
	}
	ns := pr.outer.NetNSPath()
	if ns == "" {
		return fmt.Errorf("parent %s: no network namespace to open its inner bridge in", pr.name)
	}
	sub, _ := pr.subnetOf()
	return firewall.OpenInner(ns, sub.String())
}

// loadInto loads a saved image into a parent's engine.
func loadInto(ctx context.Context, inner *docker.Platform, tar string) error {
	f, err := os.Open(tar)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = inner.Engine().LoadImage(ctx, f)
	return err
}

// engineSpec is the parent container: the parent image running its
// engine (its init, `agent parent`), its socket's directory, its data root
// (a tmpfs, or a seed's store on the host) and the preloaded store.
func (pr *parent) engineSpec(parentImage, store string) engine.EngineSpec {
	e := engine.EngineSpec{
		Image:    parentImage,
		Cmd:      []string{"agent", "parent", "--config", parentConfig(pr).String()},
		Binds:    []string{pr.sock + ":" + sockMount},
		Tmpfs:    map[string]string{"/run": "rw,exec", "/tmp": "rw,exec"},
		Hostname: pr.hostname,
	}
	if pr.subnet >= 0 && pr.hostBridge == "" {
		// The parent routes between the machine and its inner bridge.
		e.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
	}
	switch {
	case pr.storeDir != "": // a seed: its data root is the store on the host
		e.Binds = append(e.Binds, pr.storeDir+":"+dataRoot)
	default:
		e.Tmpfs[dataRoot] = "rw,exec"
	}
	if store != "" {
		e.Binds = append(e.Binds, store+":"+storeMount+":ro")
	}
	return e
}

// awaitEngine polls the parent's engine until it answers, failing early
// when the parent container has ended.
func (pr *parent) awaitEngine(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, daemonTimeout)
	defer cancel()
	exited := make(chan platform.Exit, 1)
	go func() {
		if ex, err := pr.outer.Wait(ctx); err == nil {
			exited <- ex
		}
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err := pr.inner.Engine().Ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case ex := <-exited:
			return fmt.Errorf("the parent's engine ended before it answered (exit %d): %s", ex.Code, lastLines(ex.Stderr, 3))
		case <-ctx.Done():
			return fmt.Errorf("the parent's engine did not answer within %s: %w", daemonTimeout, err)
		case <-tick.C:
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// release gives back a child's place; the last child out removes the
// parent.
func (pr *parent) release(ctx context.Context) error {
	pr.mu.Lock()
	pr.released++
	last := pr.released >= pr.reserved
	pr.mu.Unlock()
	if !last {
		return nil
	}
	return pr.remove(ctx)
}

// remove removes the parent container (its children die with it), its
// route and its socket directory. Safe to call more than once.
func (pr *parent) remove(ctx context.Context) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.removed {
		return nil
	}
	pr.removed = true
	var errs []error
	errs = append(errs, unroute(pr))
	if pr.inner != nil {
		errs = append(errs, pr.inner.Disconnect()) // its containers go with the parent
	}
	if pr.outer != nil {
		errs = append(errs, pr.outer.Remove(ctx))
	}
	if pr.sock != "" {
		errs = append(errs, os.RemoveAll(pr.sock))
	}
	if pr.hostBridge != "" {
		errs = append(errs, links.Remove(pr.hostBridge))
	}
	pr.removeAt = time.Now()
	if pr.done != nil {
		pr.done()
	}
	return errors.Join(errs...)
}

// instance is a child in its parent.
type instance struct {
	platform.Instance // the child container in the parent's engine
	parent            *parent
	ip                string
	requested         time.Time
	childStart        time.Time

	mu      sync.Mutex
	removed bool
	remove  time.Time
	// engine are the child's events as the parent's engine recorded them,
	// read at removal: the engine goes with the parent.
	engine    map[vocab.Phase]time.Time
	engineErr error
}

// Go implements platform.Goer: the child's agent is signalled directly,
// found on the machine through its parent (microseconds), else through
// the parent's engine, which is slow when many parents are busy.
func (c *instance) Go(ctx context.Context) error {
	pp, ok1 := c.parent.outer.(interface{ Pid() int })
	cp, ok2 := c.Instance.(interface{ Pid() int })
	if ok1 && ok2 && pp.Pid() > 0 && cp.Pid() > 0 {
		if pid, found := hostPID(pp.Pid(), cp.Pid()); found && syscall.Kill(pid, syscall.SIGUSR1) == nil {
			return nil
		}
	}
	g, ok := c.Instance.(platform.Goer)
	if !ok {
		return errors.New("the child cannot be given the go signal")
	}
	return g.Go(ctx)
}

// Wired implements platform.Wired: a parent the lab wired (on Open
// vSwitch) whose child is on its inner bridge is the machine's route to
// that bridge, through the address the lab gave it; a child in its
// parent's namespace needs no route.
func (c *instance) Wired(ip string) error {
	pr := c.parent
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.subnet < 0 || pr.network != vocab.None || pr.wired != "" || pr.removed {
		return nil
	}
	pr.wired = ip
	if err := routeTo(pr); err != nil {
		pr.wired = ""
		return fmt.Errorf("routing the machine to parent %s's inner bridge: %w", pr.name, err)
	}
	return nil
}

// NetNSPath implements platform.Instance: the parent's namespace, which
// a child on the parent's network shares, for the lab to wire.
func (c *instance) NetNSPath() string { return c.parent.outer.NetNSPath() }

// IP implements platform.Instance: on the parent's network, the parent's
// address; on the inner bridge, the child's own (routed through the
// parent).
func (c *instance) IP() string { return c.ip }

// Remove implements platform.Instance: the child, then the parent when it
// was the last of its children.
func (c *instance) Remove(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.removed {
		return nil
	}
	err := c.Instance.Remove(ctx)
	if et, ok := c.Instance.(platform.EngineTimer); ok && err == nil {
		c.engine, c.engineErr = et.EngineTimings(ctx)
	}
	rerr := c.parent.release(ctx)
	c.removed, c.remove = true, time.Now()
	return errors.Join(err, rerr)
}

// Timings implements platform.Instance: the parent's phases that happened
// in this child's life (all of them for the child that started the
// parent), the child's start, its exit and its removal.
func (c *instance) Timings() platform.Timings {
	t := platform.Timings{Requested: c.requested, At: map[vocab.Phase]time.Time{}}
	for ph, at := range c.parent.at {
		if !at.IsZero() && !at.Before(c.requested) {
			t.At[ph] = at
		}
	}
	t.At[vocab.ChildStart] = c.childStart
	if x, ok := c.Instance.Timings().At[vocab.Exit]; ok {
		t.At[vocab.Exit] = x
	}
	c.mu.Lock()
	if c.removed {
		t.At[vocab.Remove] = c.remove
	}
	c.mu.Unlock()
	return t
}

// EngineTimings implements platform.EngineTimer: the child's events as
// the parent's engine recorded them, read when the child was removed.
func (c *instance) EngineTimings(context.Context) (map[vocab.Phase]time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.removed {
		return nil, errors.New("the parent's engine is asked for its events when the child is removed")
	}
	return c.engine, c.engineErr
}

// Seen implements platform.Seer: the parent as the host sees it — its
// name, network and address, its inner bridge, how the image came, and
// the limits its cgroups really have (they bound the child).
func (c *instance) Seen() map[string]string {
	pr := c.parent
	m := map[string]string{}
	if s, ok := c.Instance.(platform.Seer); ok { // the child's own: the user's image it runs
		maps.Copy(m, s.Seen())
	}
	maps.Copy(m, map[string]string{"parent": pr.name, "parent.network": string(pr.network), "parent.ip": pr.ip, "parent.image": ImageLoad})
	if pr.preloaded {
		m["parent.image"] = ImagePreloaded
	}
	if pr.subnet >= 0 {
		sub, _ := pr.subnetOf()
		m["parent.inner_bridge"] = sub.String()
	}
	if pp, ok := pr.outer.(interface{ Pid() int }); ok && pp.Pid() > 0 {
		l := cgroup.Of(pp.Pid())
		m["parent.cgroup.cpuset"] = l.Cpuset
		if l.CPUs > 0 {
			m["parent.cgroup.cpus"] = strconv.FormatFloat(l.CPUs, 'g', 6, 64)
		}
		if l.MemoryBytes > 0 {
			m["parent.cgroup.memory"] = strconv.FormatInt(l.MemoryBytes, 10)
		}
	}
	return m
}

// hostPID finds the machine's process ID of a process that has pid inner
// in parent's PID namespace: a process whose NSpid's second entry is inner
// and that descends from the parent's first process (host PID parent).
func hostPID(parent, inner int) (int, bool) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		st, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		var nspid []string
		for _, line := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nspid = strings.Fields(v)
			}
		}
		if len(nspid) < 2 || nspid[1] != strconv.Itoa(inner) {
			continue
		}
		pid, _ := strconv.Atoi(nspid[0])
		for p, hops := pid, 0; p > 1 && hops < 64; hops++ {
			if p == parent {
				return pid, true
			}
			p = ppid(p)
		}
	}
	return 0, false
}

func ppid(pid int) int {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
