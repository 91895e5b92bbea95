package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaGet = metav1.GetOptions{}

// podRange holds the IPs of all pods of the test cluster; each node has a
// /24 of it.
var podRange = net.IPNet{IP: net.IPv4(198, 18, 244, 0), Mask: net.CIDRMask(22, 32)}

// httpdSpec is a busybox httpd serving /bin on port 8080, ready when it
// serves /busybox (the kubelet's HTTP readiness probe).
func httpdSpec(ns, name, node string) PodSpec {
	return PodSpec{
		Name: name, Namespace: ns, Node: node, Image: smokeImage,
		Args:      []string{"httpd", "-f", "-p", "8080", "-h", "/bin"},
		Ports:     []Port{{Name: "http", Port: 8080}},
		Readiness: &Probe{TCPPort: 8080, HTTPPath: "/busybox"},
		Labels:    map[string]string{"app": "httpd"},
		Requests:  map[string]string{"cpu": "10m", "memory": "8Mi"},
	}
}

// getBusybox GETs /busybox of the server at addr (host:port), retrying
// for up to wait while the address is not served yet (a Service's rules
// follow its endpoints by a moment); it fails the test unless it gets
// status 200 and a body.
func getBusybox(t *testing.T, addr string, wait time.Duration) {
	t.Helper()
	// A connection tried before kube-proxy has the Service's rules leaves
	// a conntrack entry without them on the node that routes the
	// ClusterIP, which its retransmitted SYNs then follow: each attempt
	// gets a second to connect, from a new port.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:       (&net.Dialer{Timeout: time.Second}).DialContext,
		DisableKeepAlives: true,
	}}
	deadline := time.Now().Add(wait)
	start := time.Now()
	defer func() { t.Logf("GET %s served after %v", addr, time.Since(start)) }()
	for {
		n, err := get(client, "http://"+addr+"/busybox")
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("GET http://%s/busybox: %d bytes, %v", addr, n, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func get(client *http.Client, url string) (int64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("status %s", resp.Status)
	}
	return n, err
}

// checkLifecycle fails the test unless every stage was observed, in order,
// each within 2 s of the API's time for it (whole seconds, truncated).
func checkLifecycle(t *testing.T, name string, l Lifecycle) {
	t.Helper()
	for _, s := range Stages() {
		obs, api := l.Observed[s], l.API[s]
		if obs.IsZero() || api.IsZero() {
			t.Errorf("%s: stage %s not observed (%v) or not in the API (%v)", name, s, obs, api)
			continue
		}
		if d := obs.Sub(api); d < -2*time.Second || d > 2*time.Second {
			t.Errorf("%s: stage %s observed at %v, the API says %v: %v apart", name, s, obs, api, d)
		}
		if s > Created && obs.Before(l.Observed[s-1]) {
			t.Errorf("%s: stage %s (%v) observed before %s (%v)", name, s, obs, s-1, l.Observed[s-1])
		}
	}
	t.Logf("%s: scheduled +%v, initialized +%v, sandbox ready +%v, containers ready +%v, ready +%v", name,
		l.Since(Scheduled), l.Since(Initialized), l.Since(SandboxReady), l.Since(ContainersReady), l.Since(Ready))
}

// Pods pinned to each node run there, in that node's /24 of the pod
// range, serve HTTP to this process by pod IP, and, behind one Service,
// by its ClusterIP and by its NodePort on each node's IP.
func TestPodsServeOnEachNode(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	ns := testNamespace(t, c)
	subnets := map[string]string{}
	for i, node := range testNodes {
		name := fmt.Sprintf("httpd-%d", i+1)
		p, err := c.StartPod(ctx, httpdSpec(ns, name, node))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeletePod(context.Background(), p) })
		ip := net.ParseIP(p.IP)
		if p.Node != node || ip == nil || !podRange.Contains(ip) {
			t.Errorf("pod %s on %s at %s, want on %s in %v", name, p.Node, p.IP, node, podRange.String())
			continue
		}
		subnet := ip.Mask(net.CIDRMask(24, 32)).String()
		for other, s := range subnets {
			if s == subnet {
				t.Errorf("pods on %s and %s both in %s/24, want a /24 per node", other, node, s)
			}
		}
		subnets[node] = subnet
		checkLifecycle(t, name, p.Lifecycle)
		getBusybox(t, net.JoinHostPort(p.IP, "8080"), 5*time.Second)
	}
	svc, err := c.CreateService(ctx, ns, "httpd", map[string]string{"app": "httpd"}, []ServicePort{{Name: "http", Port: 80, TargetPort: 8080}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(svc.ClusterIP); ip == nil || !(&net.IPNet{IP: net.IPv4(198, 18, 241, 0), Mask: net.CIDRMask(24, 32)}).Contains(ip) || svc.Ports["http"].NodePort == 0 {
		t.Fatalf("service = %+v, want a ClusterIP in 198.18.241.0/24 and a NodePort", svc)
	}
	getBusybox(t, net.JoinHostPort(svc.ClusterIP, "80"), 15*time.Second)
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		getBusybox(t, net.JoinHostPort(n.InternalIP, fmt.Sprint(svc.Ports["http"].NodePort)), 15*time.Second)
	}
}

func TestMissingImageSaysHowToLoad(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	ns := testNamespace(t, c)
	const image = "docker.io/library/ctb-no-such-image:1"
	spec := httpdSpec(ns, "noimage", testNodes[0])
	spec.Image = image
	_, err := c.StartPod(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "scripts/k8s.sh load "+image) {
		t.Fatalf("StartPod with a missing image = %v, want the hint scripts/k8s.sh load %s", err, image)
	}
	t.Log(err)
	if _, gerr := c.cs.CoreV1().Pods(ns).Get(ctx, "noimage", metaGet); gerr == nil {
		t.Errorf("the failed pod is still there")
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	ns := testNamespace(t, c)
	p, err := c.StartPod(ctx, PodSpec{Name: "exit3", Namespace: ns, Image: smokeImage, RunToCompletion: true,
		Args: []string{"sh", "-c", "echo bye from $WHO; exit 3"}, Env: map[string]string{"WHO": "exit3"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeletePod(context.Background(), p) })
	code, err := c.WaitExit(ctx, p)
	if err != nil || code != 3 {
		t.Errorf("WaitExit = %d, %v; want 3", code, err)
	}
	logs, err := c.Logs(ctx, p)
	if err != nil || logs != "bye from exit3\n" {
		t.Errorf("Logs = %q, %v; want %q", logs, err, "bye from exit3\n")
	}
	if err := c.DeletePod(ctx, p); err != nil {
		t.Error(err)
	}
}

// A server that exits instead of getting ready: its code and log's end.
func TestExitBeforeReady(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	ns := testNamespace(t, c)
	spec := httpdSpec(ns, "crash", "")
	spec.Args = []string{"sh", "-c", "echo line1; echo last words; exit 7"}
	_, err := c.StartPod(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "exited with code 7") || !strings.Contains(err.Error(), "last words") {
		t.Fatalf("StartPod of a pod that exits = %v, want its code 7 and its log", err)
	}
	t.Log(err)
}

func TestUnschedulable(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	ns := testNamespace(t, c)
	spec := httpdSpec(ns, "huge", "")
	spec.Requests = map[string]string{"cpu": "1000"}
	_, err := c.StartPod(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "cannot be scheduled") || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Fatalf("StartPod of a pod asking 1000 CPUs = %v, want the scheduler's Insufficient cpu", err)
	}
	t.Log(err)
}

// A host-network pod has its node's IP and serves on it.
func TestHostNetwork(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	ns := testNamespace(t, c)
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := nodes[len(nodes)-1]
	spec := httpdSpec(ns, "hostnet", node.Name)
	spec.HostNetwork = true
	spec.Args = []string{"httpd", "-f", "-p", "18080", "-h", "/bin"}
	spec.Ports = []Port{{Port: 18080}}
	spec.Readiness = &Probe{TCPPort: 18080}
	p, err := c.StartPod(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeletePod(context.Background(), p) })
	if p.IP != node.InternalIP || p.Node != node.Name {
		t.Errorf("host-network pod on %s at %s, want on %s at %s", p.Node, p.IP, node.Name, node.InternalIP)
	}
	getBusybox(t, net.JoinHostPort(p.IP, "18080"), 5*time.Second)
}

// A watch the server ends (its timeout, here 1 s) is resumed where it
// was: WaitExit sees a command end after several of them.
func TestWatchResumes(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	c.watchTimeout = 1
	ctx := testContext(t)
	ns := testNamespace(t, c)
	p, err := c.StartPod(ctx, PodSpec{Name: "slow-exit", Namespace: ns, Image: smokeImage, RunToCompletion: true,
		Args: []string{"sh", "-c", "sleep 4; exit 5"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeletePod(context.Background(), p) })
	start := time.Now()
	code, err := c.WaitExit(ctx, p)
	if err != nil || code != 5 {
		t.Errorf("WaitExit = %d, %v; want 5", code, err)
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("WaitExit returned after %v, before the 1 s watches could end", d)
	}
}
