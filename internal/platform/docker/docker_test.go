package docker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/ctrbench/ctrbench/internal/engine"
	ctrimage "github.com/ctrbench/ctrbench/internal/image"
	"github.com/ctrbench/ctrbench/internal/netns"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// These tests drive the real Docker engine. They skip, saying why, only
// when no daemon answers.

var (
	skipReason string
	standin    string // static stand-in for the ctrbench binary
	docker     *client.Client
	// Every test uses the same tools, so the image is built once per run.
	testTools = []string{"ls", "iperf3", "ctrbench-no-such-tool"}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ctrbench-docker-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	standin = filepath.Join(dir, "ctrbench")
	// The nonce gives this run its own image, so the build path is always
	// exercised and the image can be removed at the end.
	cmd := exec.Command("go", "build", "-ldflags", "-X main.nonce="+randHex(8), "-o", standin, "./testdata/standin")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building stand-in binary: %v\n%s", err, out)
		return 1
	}
	if err := engine.Available(ctx); err != nil {
		skipReason = "no Docker daemon: " + err.Error()
		return m.Run()
	}
	docker, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer docker.Close()
	code := m.Run()
	if tag := testImageTag(); tag != "" {
		docker.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true})
	}
	return code
}

// staticStandin is the stand-in binary, for tests that need only a file
// that passes the static check.
func staticStandin(t *testing.T) string {
	t.Helper()
	return standin
}

// testImageTag is the tag of the image every test campaign uses.
func testImageTag() string {
	plan, err := ctrimage.Plan(ctrimage.Input{Binary: standin, Tools: testTools})
	if err != nil {
		return ""
	}
	return plan.Tag
}

func randHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func requireDocker(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// newCampaign returns a prepared platform for a fresh campaign, removed
// with everything it made when the test ends, failed or not.
func newCampaign(t *testing.T, networks ...vocab.Network) (*Platform, string) {
	t.Helper()
	requireDocker(t)
	campaign := "test-" + randHex(8)
	p, err := New(WithBinary(standin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := engine.Clean(ctx, campaign, true, false); err != nil {
			t.Errorf("Clean: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err = p.Prepare(ctx, platform.Setup{
		CampaignID: campaign,
		Labels:     map[string]string{"io.ctrbench.test": t.Name()},
		Networks:   networks,
		Tools:      testTools,
		Progress:   testWriter{t},
	})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return p, campaign
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// start runs the stand-in with the commands of args (see testdata/standin).
func start(t *testing.T, p *Platform, spec platform.InstanceSpec, args ...string) platform.Instance {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "ctrbench-" + p.camp.id + "-" + randHex(6)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	if args == nil {
		args = []string{}
	}
	inst, err := p.start(ctx, spec, args)
	if err != nil {
		t.Fatalf("Start %v: %v", args, err)
	}
	t.Logf("started %s in %v", spec.Name, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { inst.Remove(context.Background()) })
	return inst
}

func wait(t *testing.T, inst platform.Instance) platform.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exit, err := inst.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return exit
}

// readAll reads stdout to EOF, failing after a timeout.
func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	ch := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); ch <- b }()
	select {
	case b := <-ch:
		return string(b)
	case <-time.After(30 * time.Second):
		t.Fatal("stdout did not reach EOF")
		return ""
	}
}

// readLine reads one line from br, failing after a timeout.
func readLine(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() { s, _ := br.ReadString('\n'); ch <- s }()
	select {
	case s := <-ch:
		return strings.TrimSpace(s)
	case <-time.After(30 * time.Second):
		t.Fatal("no line on stdout")
		return ""
	}
}

func inspect(t *testing.T, inst platform.Instance) container.InspectResponse {
	t.Helper()
	c, err := docker.ContainerInspect(context.Background(), inst.(*instance).id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkLabels(t *testing.T, what string, labels map[string]string, campaign string) {
	t.Helper()
	want := map[string]string{
		platform.LabelManaged:  "true",
		platform.LabelCampaign: campaign,
		platform.LabelOwnerPID: strconv.Itoa(os.Getpid()),
		"io.ctrbench.test":     t.Name(),
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("%s label %s = %q, want %q", what, k, labels[k], v)
		}
	}
}

func TestImageBuildAndReuse(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	// Start from no image, so the first Prepare must build.
	if tag := testImageTag(); tag != "" {
		docker.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true})
	}
	t0 := time.Now()
	p1, c1 := newCampaign(t)
	built := time.Since(t0)
	info1 := p1.Info()
	if info1["docker.image_reused"] != "false" {
		t.Errorf("first Prepare reused an image: %v", info1)
	}
	t.Logf("image build (Prepare) took %v", built.Round(time.Millisecond))

	t0 = time.Now()
	p2, _ := newCampaign(t)
	t.Logf("second Prepare took %v", time.Since(t0).Round(time.Millisecond))
	info2 := p2.Info()
	if info2["docker.image_reused"] != "true" {
		t.Errorf("second Prepare rebuilt the image: %v", info2)
	}
	if info1["docker.image"] != info2["docker.image"] || info1["docker.image_id"] != info2["docker.image_id"] {
		t.Errorf("image changed between campaigns: %s %s vs %s %s",
			info1["docker.image"], info1["docker.image_id"], info2["docker.image"], info2["docker.image_id"])
	}
	if !strings.HasPrefix(info1["docker.image"], "ctrbench-agent:") {
		t.Errorf("image tag %q", info1["docker.image"])
	}
	for _, k := range []string{"docker.version", "docker.api_version", "containerd.version", "runc.version", "docker.cgroup_driver", "docker.cgroup_version"} {
		if info1[k] == "" {
			t.Errorf("Info lacks %s: %v", k, info1)
		}
	}
	if got := p1.MissingTools(); !slices.Equal(got, []string{"ctrbench-no-such-tool"}) {
		t.Errorf("MissingTools = %v", got)
	}
	img, err := docker.ImageInspect(ctx, info1["docker.image"])
	if err != nil {
		t.Fatal(err)
	}
	checkLabels(t, "image", img.Config.Labels, c1)

	// The image holds working copies of dynamically linked host tools.
	inst := start(t, p1, platform.InstanceSpec{}, []string{"stat", "/tmp", ";", "exec", "ls", "/ctrbench", ";", "exec", "iperf3", "--version"}...)
	exit := wait(t, inst)
	out := readAll(t, inst.Stdout())
	if exit.Code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout %q", exit.Code, exit.Stderr, out)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "1777" {
		t.Errorf("/tmp mode %q, want 1777", lines[0])
	}
	if !strings.Contains(out, "/ctrbench") || !strings.Contains(out, "iperf ") {
		t.Errorf("tools did not run in the image: %q", out)
	}
}

func TestLimits(t *testing.T) {
	p, _ := newCampaign(t)
	inst := start(t, p, platform.InstanceSpec{Limits: platform.Limits{CPUs: 0.5, Cpuset: "0", MemoryBytes: 64 << 20}}, []string{"cgroup"}...)
	exit := wait(t, inst)
	out := readAll(t, inst.Stdout())
	if exit.Code != 0 {
		t.Fatalf("exit %d: %s", exit.Code, exit.Stderr)
	}
	seen := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		seen[k] = v
	}
	t.Logf("seen from inside: %v", seen)

	var quota, period float64
	if v := seen["v2.cpu.max"]; v != "missing" {
		fmt.Sscan(v, &quota, &period)
	} else {
		quota, _ = strconv.ParseFloat(seen["cpu.cfs_quota_us"], 64)
		period, _ = strconv.ParseFloat(seen["cpu.cfs_period_us"], 64)
	}
	if period == 0 || quota/period != 0.5 {
		t.Errorf("CPU quota/period = %v/%v, want 0.5", quota, period)
	}
	cpuset := seen["cpuset.cpus"]
	if cpuset == "missing" {
		cpuset = seen["v2.cpuset.cpus"]
	}
	if cpuset != "0" {
		t.Errorf("cpuset %q, want 0", cpuset)
	}
	mem := seen["memory.limit_in_bytes"]
	if mem == "missing" {
		mem = seen["v2.memory.max"]
	}
	if mem != strconv.Itoa(64<<20) {
		t.Errorf("memory limit %q, want %d", mem, 64<<20)
	}

	hc := inspect(t, inst).HostConfig
	if hc.NanoCPUs != 5e8 || hc.CpusetCpus != "0" || hc.Memory != 64<<20 || hc.MemorySwap != 64<<20 {
		t.Errorf("HostConfig: NanoCPUs %d CpusetCpus %q Memory %d MemorySwap %d", hc.NanoCPUs, hc.CpusetCpus, hc.Memory, hc.MemorySwap)
	}
	if hc.AutoRemove {
		t.Error("container is auto-removed")
	}
}

func TestBridgeNetwork(t *testing.T) {
	p, campaign := newCampaign(t, vocab.Bridge)
	ctx := context.Background()

	n, err := docker.NetworkInspect(ctx, engine.NetworkName(campaign), network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkLabels(t, "network", n.Labels, campaign)
	bridge := n.Options["com.docker.network.bridge.name"]
	if bridge != engine.BridgeName(campaign) || !strings.HasPrefix(bridge, platform.LinkPrefix) || len(bridge) > 15 {
		t.Errorf("bridge name option %q, want %s", bridge, engine.BridgeName(campaign))
	}
	if _, err := os.Stat("/sys/class/net/" + bridge); err != nil {
		t.Errorf("host link %s missing: %v", bridge, err)
	}
	info := p.Info()
	if info["docker.network_subnet"] == "" || info["docker.network_gateway"] != p.HostAddr(vocab.Bridge) || info["docker.network_bridge"] != bridge {
		t.Errorf("Info network fields: %v", info)
	}

	server := start(t, p, platform.InstanceSpec{Network: vocab.Bridge,
		Labels: map[string]string{"io.ctrbench.role": "server"}}, []string{"serve", ":8080", "3"}...)
	c := inspect(t, server)
	checkLabels(t, "container", c.Config.Labels, campaign)
	if c.Config.Labels["io.ctrbench.role"] != "server" {
		t.Errorf("spec label missing: %v", c.Config.Labels)
	}
	ip := server.IP()
	if net.ParseIP(ip) == nil {
		t.Fatalf("server IP %q", ip)
	}
	// Output printed before Wait streams while the container runs.
	out := bufio.NewReader(server.Stdout())
	if l := readLine(t, out); !strings.HasPrefix(l, "listening") {
		t.Fatalf("server said %q", l)
	}

	// From the host.
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), 5*time.Second)
	if err != nil {
		t.Fatalf("host to container: %v", err)
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if !strings.HasPrefix(line, "hello from") {
		t.Errorf("host got %q", line)
	}

	// From a second container on the same network.
	peer := start(t, p, platform.InstanceSpec{Network: vocab.Bridge}, []string{"dial", ip + ":8080"}...)
	if exit := wait(t, peer); exit.Code != 0 {
		t.Fatalf("client exit %d: %s", exit.Code, exit.Stderr)
	}
	if got := readAll(t, peer.Stdout()); !strings.HasPrefix(got, "hello from") {
		t.Errorf("container got %q", got)
	}

	// A container reaches a server on the host at HostAddr.
	ln, err := net.Listen("tcp", net.JoinHostPort(p.HostAddr(vocab.Bridge), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			fmt.Fprintln(c, "hello from host")
			c.Close()
		}
	}()
	toHost := start(t, p, platform.InstanceSpec{Network: vocab.Bridge}, []string{"dial", ln.Addr().String()}...)
	if exit := wait(t, toHost); exit.Code != 0 {
		t.Fatalf("dial host exit %d: %s", exit.Code, exit.Stderr)
	}
	if got := readAll(t, toHost.Stdout()); got != "hello from host\n" {
		t.Errorf("container got %q from host", got)
	}

	// The third connection ends the server.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), 5*time.Second); err == nil {
		c.Close()
	}
	if exit := wait(t, server); exit.Code != 0 {
		t.Errorf("server exit %d: %s", exit.Code, exit.Stderr)
	}
}

func TestHostNetwork(t *testing.T) {
	p, _ := newCampaign(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if got := p.HostAddr(vocab.Host); got != "127.0.0.1" {
		t.Errorf("HostAddr(host) = %q", got)
	}
	inst := start(t, p, platform.InstanceSpec{Network: vocab.Host}, []string{"serve", addr, "1"}...)
	if inst.IP() != "" {
		t.Errorf("host-network IP() = %q, want empty", inst.IP())
	}
	if mode := inspect(t, inst).HostConfig.NetworkMode; mode != "host" {
		t.Errorf("network mode %q", mode)
	}
	out := bufio.NewReader(inst.Stdout())
	if l := readLine(t, out); !strings.HasPrefix(l, "listening") {
		t.Fatalf("server said %q", l)
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if !strings.HasPrefix(line, "hello from") {
		t.Errorf("got %q", line)
	}
	if exit := wait(t, inst); exit.Code != 0 {
		t.Errorf("exit %d: %s", exit.Code, exit.Stderr)
	}
}

// TestHoldNamespace: the namespace HoldNamespace returns, adopted under
// another name as the lab adopts it, is the one a container started with
// that name (network host) runs in: a server it starts on loopback answers
// a client in the named namespace. A path the platform does not hold is
// refused; Close removes the holder.
func TestHoldNamespace(t *testing.T) {
	p, campaign := newCampaign(t)
	ctx := context.Background()
	held, err := p.HoldNamespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	name := "ctbt" + randHex(6)
	named, err := netns.Adopt(name, held)
	if err != nil {
		t.Fatal(err)
	}
	defer netns.Delete(name)
	inst := start(t, p, platform.InstanceSpec{Network: vocab.Host, NetNS: named}, "serve", "127.0.0.1:7077", "1")
	if mode := inspect(t, inst).HostConfig.NetworkMode; !strings.HasPrefix(string(mode), "container:") {
		t.Errorf("network mode %q, want the holder's container", mode)
	}
	if l := readLine(t, bufio.NewReader(inst.Stdout())); !strings.HasPrefix(l, "listening") {
		t.Fatalf("server said %q", l)
	}
	var line string
	err = netns.Do(named, func() error {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:7077", 5*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		line, err = bufio.NewReader(conn).ReadString('\n')
		return err
	})
	if err != nil || !strings.HasPrefix(line, "hello from") {
		t.Errorf("dialling the server over the held namespace's loopback: %q, %v", line, err)
	}
	if exit := wait(t, inst); exit.Code != 0 {
		t.Errorf("exit %d: %s", exit.Code, exit.Stderr)
	}
	// Held again (the lab rebuilt): a new namespace, the old holder gone.
	again, err := p.HoldNamespace(ctx, 1)
	if err != nil {
		t.Fatalf("holding host 1 again: %v", err)
	}
	if again == held {
		t.Errorf("held again at the same path %s", again)
	}
	if _, err := os.Stat(held); err == nil {
		t.Errorf("the old holder's namespace %s is still there", held)
	}
	_, err = p.Start(ctx, platform.InstanceSpec{Name: "ctrbench-" + campaign + "-x", Network: vocab.Host, NetNS: "/proc/self/ns/net"})
	if err == nil || !strings.Contains(err.Error(), "not a namespace the docker platform holds") {
		t.Errorf("a namespace it does not hold: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, campaign)
}

func TestExitCodeAndStderr(t *testing.T) {
	p, _ := newCampaign(t)
	inst := start(t, p, platform.InstanceSpec{}, []string{"echo", "out", ";", "spam", "3000", ";", "exit", "3", "boom"}...)
	// Wait before reading stdout: nothing may block on the unread output.
	exit := wait(t, inst)
	if exit.Code != 3 {
		t.Errorf("exit code %d, want 3", exit.Code)
	}
	if len(exit.Stderr) > stderrTail || !strings.HasSuffix(exit.Stderr, "line 2999\nboom\n") {
		t.Errorf("stderr tail (%d bytes) ends %q", len(exit.Stderr), exit.Stderr[max(0, len(exit.Stderr)-40):])
	}
	if got := readAll(t, inst.Stdout()); got != "out\n" {
		t.Errorf("stdout %q", got)
	}
}

func TestWaitTimeoutAndRemove(t *testing.T) {
	p, _ := newCampaign(t)
	inst := start(t, p, platform.InstanceSpec{}, []string{"echo", "first", ";", "sleep", "60"}...)
	br := bufio.NewReader(inst.Stdout())
	if l := readLine(t, br); l != "first" {
		t.Errorf("first line %q", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := inst.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on a running container = %v, want deadline exceeded", err)
	}
	// Remove works even with a cancelled context.
	if err := inst.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := inst.Remove(context.Background()); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, err := docker.ContainerInspect(context.Background(), inst.(*instance).id); !cerrdefs.IsNotFound(err) {
		t.Errorf("container still there after Remove: %v", err)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("stdout after Remove: %q", rest)
	}

	// A container removed behind our back counts as removed.
	inst2 := start(t, p, platform.InstanceSpec{}, []string{"echo", "x"}...)
	wait(t, inst2)
	if err := docker.ContainerRemove(context.Background(), inst2.(*instance).id, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := inst2.Remove(context.Background()); err != nil {
		t.Errorf("Remove of a vanished container: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	p, _ := newCampaign(t)
	ctx := context.Background()
	if _, err := p.Start(ctx, platform.InstanceSpec{Name: "ctrbench-" + p.camp.id + "-x", Network: vocab.Bridge}); err == nil {
		t.Error("Start on an unprepared bridge network succeeded")
	}
	if _, err := p.Start(ctx, platform.InstanceSpec{Network: "macvlan"}); err == nil {
		t.Error("Start on an unknown network succeeded")
	}
	name := "ctrbench-" + p.camp.id + "-dup"
	start(t, p, platform.InstanceSpec{Name: name}, []string{"sleep", "30"}...)
	if _, err := p.start(ctx, platform.InstanceSpec{Name: name}, []string{"echo"}); err == nil {
		t.Error("Start with a duplicate name succeeded")
	}
	q, err := New(WithBinary(standin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Start(ctx, platform.InstanceSpec{}); !errors.Is(err, errNoPrepare) {
		t.Errorf("Start before Prepare = %v", err)
	}
}

func TestClose(t *testing.T) {
	p, campaign := newCampaign(t, vocab.Bridge)
	start(t, p, platform.InstanceSpec{Network: vocab.Bridge}, []string{"sleep", "60"}...)
	start(t, p, platform.InstanceSpec{}, []string{"sleep", "60"}...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Close must clean up even after Ctrl-C.
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	assertNothingLeft(t, campaign)
}

func assertNothingLeft(t *testing.T, campaign string) {
	t.Helper()
	ctx := context.Background()
	f := labelFilter(campaign)
	cs, err := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil || len(cs) != 0 {
		t.Errorf("containers left: %d (%v)", len(cs), err)
	}
	ns, err := docker.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil || len(ns) != 0 {
		t.Errorf("networks left: %d (%v)", len(ns), err)
	}
	if _, err := os.Stat("/sys/class/net/" + engine.BridgeName(campaign)); err == nil {
		t.Errorf("host link %s left", engine.BridgeName(campaign))
	}
}

func TestAvailable(t *testing.T) {
	requireDocker(t)
	if err := engine.Available(context.Background()); err != nil {
		t.Errorf("Available: %v", err)
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	err := engine.Available(context.Background())
	if err == nil || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("Available without a daemon = %v, want a hint to run scripts/setup.sh", err)
	}
}

// labelFilter selects the objects of one campaign, as the engine's own
// listing does.
func labelFilter(campaign string) filters.Args {
	return filters.NewArgs(filters.Arg("label", platform.LabelManaged+"=true"), filters.Arg("label", platform.LabelCampaign+"="+campaign))
}
