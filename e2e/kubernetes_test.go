package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/physics"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
	"github.com/ctrbench/ctrbench/internal/userimage"
)

// The Kubernetes tests run on ctrbench's test cluster, which
// scripts/k8s-test.sh (make test's last step) brings up and down around
// them: it says so in CTRBENCH_K8S_TEST. Elsewhere they skip.
func requireKubernetes(t *testing.T) {
	t.Helper()
	if os.Getenv("CTRBENCH_K8S_TEST") == "" || os.Getenv("KUBECONFIG") == "" {
		t.Skip("no test cluster: scripts/k8s-test.sh (make test-k8s) runs this on one")
	}
}

// kubectl runs the cluster's own client (the one scripts/k8s.sh built:
// software nobody here wrote, reading what ctrbench made).
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("CTRBENCH_KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &kubectlError{err, stderr.String()}
	}
	return string(out), nil
}

type kubectlError struct {
	err    error
	stderr string
}

func (e *kubectlError) Error() string { return e.err.Error() + ": " + e.stderr }

// kubeLeftovers are the campaign's namespaces and everything labelled as
// its, as kubectl lists them.
func kubeLeftovers(t *testing.T, campaign string) []string {
	t.Helper()
	sel := platform.LabelCampaign + "=" + campaign
	var left []string
	for _, args := range [][]string{
		{"get", "namespaces", "-l", sel, "-o", "name"},
		{"get", "pods,services", "--all-namespaces", "-l", sel, "-o", "name"},
	} {
		out, err := kubectl(t, args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v", args, err)
		}
		left = append(left, strings.Fields(out)...)
	}
	return left
}

// assertNoKubeLeftovers checks that kubectl finds nothing of campaign id
// after its run.
func assertNoKubeLeftovers(t *testing.T, id string) {
	t.Helper()
	if left := kubeLeftovers(t, id); len(left) > 0 {
		t.Errorf("kubectl finds the campaign's %v after the run", left)
	}
}

// TestKubernetesPaths: the Kubernetes paths of experiments/kubernetes.yaml
// — pods on one node and on two, a ClusterIP Service and a NodePort, the
// client on the other node — run through `ctrbench run` on the two-node
// test cluster: every trial ends OK, each trial records its pods' nodes
// (the two roles on two nodes where hosts is 2) and a fronted server its
// Service's address; the physics invariant holds for the new paths (a
// Service or a NodePort is not faster than the pod's own address, pods on
// two nodes not faster than on one: physics.Check, one-sided, Holm, at a
// family-wise error of 1%, so a cluster where the order truly holds fails
// this test at most once in a hundred runs, however busy the machine);
// kubectl finds nothing of the campaign afterwards.
func TestKubernetesPaths(t *testing.T) {
	requireKubernetes(t)
	db, id := runStored(t, `name: e2e-kubernetes
seed: 41
repetitions: 3
warmup: 0
timeout: 1m
factors:
  path:
    pod-same-node: {platform: kubernetes, network: pod, hosts: 1}
    pod-other-node: {platform: kubernetes, network: pod, hosts: 2}
    service-other-node: {platform: kubernetes, network: service, hosts: 2}
    nodeport-other-node: {platform: kubernetes, network: nodeport, hosts: 2}
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}
`)
	assertNoKubeLeftovers(t, id)
	cells := cellFactors(t, db, id)
	trials := okTrials(t, db, id, 12, func(tr result.Trial) string { return cells[tr.CellID]["path"] })
	for _, tr := range trials {
		path := cells[tr.CellID]["path"]
		client, server := tr.Seen["platform.kubernetes.node"], tr.Seen["server.platform.kubernetes.node"]
		if client == "" || server == "" || (client != server) != strings.HasSuffix(path, "other-node") {
			t.Errorf("trial %d (%s): client on node %q, server on %q", tr.Seq, path, client, server)
		}
		fronted := tr.Seen["server.platform.kubernetes.service_address"]
		if (fronted != "") != (strings.HasPrefix(path, "service") || strings.HasPrefix(path, "nodeport")) {
			t.Errorf("trial %d (%s): the server's Service address is %q", tr.Seq, path, fronted)
		}
	}
	res := physics.Check(reportRows[analysis.Row](t, db), physics.Options{Alpha: 0.01})
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range res.Comparisons {
		got[c.Ordering.Name]++
		t.Log(c.String())
	}
	for _, o := range []string{"Kubernetes ClusterIP Service ⊃ pod network", "Kubernetes NodePort ⊃ pod network", "Kubernetes pods on two nodes ⊃ pods on one node"} {
		if got[o] == 0 {
			t.Errorf("no comparison of %q: %v", o, got)
		}
	}
	if v := res.Violations(); len(v) > 0 {
		t.Errorf("a path with strictly more work measured faster:\n%s", text.String())
	}
}

// TestKubernetesCleanAfterSIGKILL: a run killed with SIGKILL while its
// pods run leaves its namespace on the cluster (nothing of ctrbench's is
// left to remove it); `ctrbench clean` removes the namespace with its pods,
// and kubectl finds nothing of the campaign.
func TestKubernetesCleanAfterSIGKILL(t *testing.T) {
	requireKubernetes(t)
	db := filepath.Join(t.TempDir(), "r.db")
	exp := writeExperiment(t, `name: e2e-kubernetes-kill
seed: 1
repetitions: 1
timeout: 1h
factors:
  platform: [kubernetes]
  network: [pod]
  hosts: [2]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1h}}
`)
	cmd, stderr := startCtrbench(t, "run", exp, "--db", db)
	waitFor(t, "the campaign to start", time.Minute, func() bool { return campaignLine.MatchString(stderr.String()) })
	id := campaignID(t, stderr.String())
	ns := kube.NamespaceName(id)
	waitFor(t, "both pods running", 2*time.Minute, func() bool {
		out, err := kubectl(t, "get", "pods", "-n", ns, "--field-selector", "status.phase=Running", "-o", "name")
		return err == nil && len(strings.Fields(out)) >= 2
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	if left := kubeLeftovers(t, id); len(left) < 3 {
		t.Fatalf("after the kill kubectl lists %v; want the namespace and both pods still there (the test would show nothing)", left)
	}
	r := ctrbench(t, 2*time.Minute, "clean", "--campaign", id)
	if r.code != 0 {
		t.Fatalf("clean exited %d: %s%s", r.code, r.stdout, r.stderr)
	}
	contains(t, "clean output", r.stdout, "Kubernetes namespace "+ns)
	if left := kubeLeftovers(t, id); len(left) > 0 {
		t.Errorf("kubectl finds %v after clean", left)
	}
	if _, err := kubectl(t, "get", "namespace", ns); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("kubectl get namespace %s after clean: %v; want NotFound", ns, err)
	}
	assertNothingLeft(t, id)
}

// TestKubernetesOwnServices: users' images on the cluster, as on every
// other platform — nginx from its image driven by ctrbench's HTTP
// generator, redis from its image driven by redis-benchmark from the same
// image (an exec client) — on a pod on the same node and through a
// NodePort from the other node (the Service fronts redis's and nginx's own
// ports beside the agent's). The images have ctrbench's agent put into
// them (package userimage) and are imported into both nodes; each trial's
// workload validated its own output (ok), and the server ran from the
// user's image.
func TestKubernetesOwnServices(t *testing.T) {
	requireKubernetes(t)
	img := exampleImages(t)
	exp := strings.ReplaceAll(`name: e2e-kubernetes-own
seed: 5
repetitions: 1
warmup: 0
timeout: 2m
factors:
  path:
    pod-same-node: {platform: kubernetes, network: pod, hosts: 1}
    nodeport-other-node: {platform: kubernetes, network: nodeport, hosts: 2}
workloads:
  - name: web
    type: service
    params:
      image_archive: IMAGES/nginx.tar
      port: 8080
      ready: {http: /index.html}
      client: {type: http.get, params: {path: /4k.bin, concurrency: 4, duration: 1s}}
`+redisService(5000, 2, "set", "get"), "IMAGES", img)
	db, id := runStored(t, exp)
	cells, workloads := cellFactors(t, db, id), cellWorkloads(t, db, id)
	trials := okTrials(t, db, id, 4, func(tr result.Trial) string { return workloads[tr.CellID] + "/" + cells[tr.CellID]["path"] })
	for _, tr := range trials {
		where := workloads[tr.CellID] + "/" + cells[tr.CellID]["path"]
		want := map[string]string{"web": "nginx.tar", "kv": "redis.tar"}[workloads[tr.CellID]]
		if img := tr.Seen["server.platform.image"]; !strings.HasSuffix(img, want) || !strings.HasPrefix(tr.Seen["server.platform.image.id"], userimage.AgentRepository+":") {
			t.Errorf("trial %d (%s): the server ran from image %q (%q), want %s with the agent put in", tr.Seq, where, img, tr.Seen["server.platform.image.id"], want)
		}
		// The kubelet probed the server as the file's ready says, as it
		// would a Deployment's: its Service sent it traffic only then.
		if probe, want := tr.Seen["server.platform.kubernetes.readiness"], map[string]string{"web": "http :8080/index.html", "kv": "tcp :6379"}[workloads[tr.CellID]]; probe != want {
			t.Errorf("trial %d (%s): the server pod's readiness probe %q, want %q", tr.Seq, where, probe, want)
		}
		m := trialMeasures(tr)
		if m["requests_per_sec"] <= 0 && m["set_rps"] <= 0 {
			t.Errorf("trial %d (%s): no rate measured: %v", tr.Seq, where, m)
		}
	}
	assertNoKubeLeftovers(t, id)
}

// TestKubernetesPodLifecycle: S1's creation time on Kubernetes — 1 and 4
// pods created at once — timed from the watch: each pod's phases
// (created, scheduled, initialized, sandbox ready, running, the agent's
// first word, exit, removal) are all there and add up to its total.
func TestKubernetesPodLifecycle(t *testing.T) {
	requireKubernetes(t)
	db, id := runStored(t, `name: e2e-kubernetes-lifecycle
seed: 3
repetitions: 2
warmup: 0
factors:
  platform: [kubernetes]
  instances: [1, 4]
workloads:
  - {name: create, type: lifecycle.run}
`)
	cells := cellFactors(t, db, id)
	for _, tr := range okTrials(t, db, id, 4, func(tr result.Trial) string { return "instances " + cells[tr.CellID]["instances"] }) {
		phases := map[string]map[string]float64{}
		for _, o := range tr.Observations {
			if prefix, metric, ok := strings.Cut(o.ID().String(), "lifecycle."); ok {
				if phases[prefix] == nil {
					phases[prefix] = map[string]float64{}
				}
				phases[prefix][metric] = o.Value
			}
		}
		pods := 0
		for prefix, m := range phases {
			total, ok := m["total"]
			if !ok {
				continue
			}
			pods++
			sum := 0.0
			for _, ph := range []string{"create", "assigned", "preparing", "starting", "start", "ready", "exit", "remove"} {
				v, ok := m[ph]
				if !ok {
					t.Errorf("trial %d, %q: no phase %s (%v)", tr.Seq, prefix, ph, m)
				}
				sum += v
			}
			if d := sum - total; d > 1e-6 || d < -1e-6 {
				t.Errorf("trial %d, %q: phases add up to %v, total %v", tr.Seq, prefix, sum, total)
			}
		}
		if want := cells[tr.CellID]["instances"]; want != strconv.Itoa(pods) {
			t.Errorf("trial %d: %d pods' phases, want %s", tr.Seq, pods, want)
		}
	}
}

// TestKubernetesPairsAndNeighbours: the rest of the workload kinds on the
// two-node cluster through `ctrbench run` — three client/server pairs at
// once (their clients given the go signal together, through exec), and a
// CPU-bound neighbour beside the measured client in each of the three
// packagings: in the client's own container (same-container), in a
// container of its own in the client's pod (same-pod), in a pod of its
// own (separate-containers). Every trial ends OK. The neighbour covered
// the whole of the client's measured window in every packaging: it is
// ready before the client's go and stopped after its result, so this
// holds however busy the machine. The pod of a same-pod trial held two
// containers, and the pairs' trial keeps each pair's result with the
// overlap flagged as ctrbench promises (assertOverlapFlagged). No
// measured effect is asserted: chance failure nil.
func TestKubernetesPairsAndNeighbours(t *testing.T) {
	requireKubernetes(t)
	db, id := runStored(t, `name: e2e-kubernetes-neighbours
seed: 8
repetitions: 1
warmup: 0
timeout: 2m
factors:
  platform: [kubernetes]
  network: [pod]
  hosts: [2]
  pairs: [1, 3]
  neighbour: [hog]
  packaging: [same-container, same-pod, separate-containers]
  neighbour.cpus: ["0.5"]
exclude:
  - {workload: hog}
  - {pairs: 3, neighbour: hog}
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}
  - {name: hog, type: cpu.primes, params: {duration: 100ms, max_prime: 2000, threads: 1}}
`)
	cells := cellFactors(t, db, id)
	what := func(tr result.Trial) string {
		f := cells[tr.CellID]
		return "pairs " + f["pairs"] + " neighbour " + f["neighbour"] + " " + f["packaging"]
	}
	trials := okTrials(t, db, id, 5, what)
	seen := map[string]bool{}
	for _, tr := range trials {
		f := cells[tr.CellID]
		seen[what(tr)] = true
		switch {
		case f["pairs"] == "3":
			for p := 1; p <= 3; p++ {
				if _, ok := observed(tr, "pair"+strconv.Itoa(p)+".transactions_per_sec"); !ok {
					t.Errorf("trial %d: no transactions_per_sec of pair %d", tr.Seq, p)
				}
			}
			ov := assertOverlapFlagged(t, tr, "pairs")
			t.Logf("the 3 pairs ran together for %.1f%% of their window", ov)
		case f["neighbour"] == "hog":
			ov, ok := observed(tr, "neighbour.overlap_pct")
			if !ok || ov < 99 {
				t.Errorf("trial %d (%s): the neighbour covered %.1f%% (present %v) of the client's window, want all of it", tr.Seq, what(tr), ov, ok)
			}
			if containers := tr.Seen["platform.kubernetes.containers"]; (f["packaging"] == "same-pod") != (containers == "2") {
				t.Errorf("trial %d (%s): the client's pod held %q containers", tr.Seq, what(tr), containers)
			}
		}
	}
	for _, want := range []string{"pairs 1 neighbour none ", "pairs 3 neighbour none ", "pairs 1 neighbour hog same-container", "pairs 1 neighbour hog same-pod", "pairs 1 neighbour hog separate-containers"} {
		if !seen[want] {
			t.Errorf("no ok trial of %q (have %v)", want, seen)
		}
	}
	assertNoKubeLeftovers(t, id)
}

// TestKubernetesProxyModeAndCNI: the kube_proxy and cni factors place a
// cell's pods on the nodes that run what its levels name — one cluster
// whose nodes differ (scripts/k8s-test.sh brings up node 3 with kube-proxy
// in nftables mode and node 4 with the ptp CNI beside two iptables/bridge
// nodes) measures a ClusterIP Service through each kube-proxy mode and the
// pod network of each CNI. Each trial ran on such a node, and records its
// mode and plugin; and the labels the levels select by are true: each
// node's kube-proxy, asked on its metrics port inside the node, reports
// the mode its label says, and its CNI configuration names the plugin its
// label says.
func TestKubernetesProxyModeAndCNI(t *testing.T) {
	requireKubernetes(t)
	db, id := runStored(t, `name: e2e-kubernetes-factors
seed: 4
repetitions: 1
warmup: 0
timeout: 2m
factors:
  platform: [kubernetes]
  hosts: [1]
  path:
    service-iptables: {network: service, kube_proxy: iptables, cni: bridge}
    service-nftables: {network: service, kube_proxy: nftables}
    pod-bridge: {network: pod, kube_proxy: iptables, cni: bridge}
    pod-ptp: {network: pod, cni: ptp}
workloads:
  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}
`)
	cells := cellFactors(t, db, id)
	trials := okTrials(t, db, id, 4, func(tr result.Trial) string { return cells[tr.CellID]["path"] })
	for _, tr := range trials {
		path := cells[tr.CellID]["path"]
		for role, prefix := range map[string]string{"client": "", "server": "server."} {
			proxy, cni := tr.Seen[prefix+"platform.kubernetes.kube_proxy"], tr.Seen[prefix+"platform.kubernetes.cni"]
			wantProxy, wantCNI := "iptables", "bridge"
			switch path {
			case "service-nftables":
				wantProxy = "nftables"
			case "pod-ptp":
				wantCNI = "ptp"
			}
			if proxy != wantProxy || cni != wantCNI {
				t.Errorf("trial %d (%s): the %s's node runs kube-proxy %q and CNI %q, want %s and %s", tr.Seq, path, role, proxy, cni, wantProxy, wantCNI)
			}
		}
	}
	out, err := kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.ctrbench\.io/kube-proxy} {.metadata.labels.ctrbench\.io/cni}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("node labels %q", line)
		}
		n := strings.TrimPrefix(f[0], "ctrbench-node")
		mode, err := exec.Command("nsenter", "--net=/run/netns/ctrbench-k8s-node"+n, "curl", "-sf", "http://127.0.0.1:10249/proxyMode").Output()
		if err != nil || string(mode) != f[1] {
			t.Errorf("node %s is labelled kube-proxy %s; its kube-proxy says %q (%v)", f[0], f[1], mode, err)
		}
		conf, err := os.ReadFile(filepath.Join("/var/lib/ctrbench/k8s/node"+n, "cni", "10-ctrbench.conflist"))
		if err != nil || !strings.Contains(string(conf), `"type": "`+f[2]+`"`) {
			t.Errorf("node %s is labelled CNI %s; its CNI configuration: %s (%v)", f[0], f[2], conf, err)
		}
	}
}

// TestKubernetesCPUManagerStatic: the cpu_manager factor places a
// Guaranteed pod with one whole CPU on a node whose kubelet runs the
// static CPU manager policy (node 4 of scripts/k8s-test.sh's cluster,
// which keeps CPU 0 for its shared pool) or on one without it: there the
// agent finds itself confined to one core of its own, not CPU 0; without
// it, on every CPU the test itself may use (all of the machine's). The
// agent reads its own affinity (sched_getaffinity), so this is what the
// kernel enforced.
func TestKubernetesCPUManagerStatic(t *testing.T) {
	requireKubernetes(t)
	db, id := runStored(t, `name: e2e-kubernetes-cpu-manager
seed: 2
repetitions: 1
warmup: 0
timeout: 2m
factors:
  platform: [kubernetes]
  cpu_manager: [none, static]
  qos: [guaranteed]
  cpus: [1]
  memory: [128MiB]
workloads:
  - {name: cpu, type: cpu.primes, params: {duration: 300ms, max_prime: 2000, threads: 1}}
`)
	cells := cellFactors(t, db, id)
	all := sysinfo.Affinity() // the test's own: every CPU of the machine
	for _, tr := range okTrials(t, db, id, 2, func(tr result.Trial) string { return cells[tr.CellID]["cpu_manager"] }) {
		policy, affinity := cells[tr.CellID]["cpu_manager"], tr.Seen["cpu.affinity"]
		if got := tr.Seen["platform.kubernetes.cpu_manager"]; got != policy {
			t.Errorf("trial %d (cpu_manager %s) ran on a node whose policy is %q", tr.Seq, policy, got)
		}
		if tr.Seen["platform.kubernetes.qos_class"] != "Guaranteed" {
			t.Errorf("trial %d: QoS class %q", tr.Seq, tr.Seen["platform.kubernetes.qos_class"])
		}
		t.Logf("cpu_manager %s: the agent ran on CPUs %s (the machine's: %s)", policy, affinity, all)
		switch policy {
		case "static":
			if _, err := strconv.Atoi(affinity); err != nil || affinity == "0" {
				t.Errorf("trial %d: under the static policy the agent ran on CPUs %q, want one core other than the shared pool's CPU 0", tr.Seq, affinity)
			}
		case "none":
			if affinity != all {
				t.Errorf("trial %d: without the static policy the agent ran on CPUs %q, want the machine's %s", tr.Seq, affinity, all)
			}
		}
	}
}

// TestKubernetesUnderlay: an underlay shapes the test cluster's links
// between nodes as the network lab shapes emulated hosts': a tbf on each
// node's egress caps its rate, and a delay line spliced into each node's
// link (between its port and the machine's bridge) delays it. A stream
// between pods on two nodes moves at most the rate, give or take tbf's
// 15% (the bound TestEmulatedHosts holds the lab to); a request/response
// between them takes at least the round trip's 10 ms (each transaction
// crosses both nodes' lines, 5 ms each, no jitter); and the run leaves
// the links as it found them: no tbf, each node's port back in the
// bridge, no line's pair. The bounds are physical: chance failure nil.
func TestKubernetesUnderlay(t *testing.T) {
	requireKubernetes(t)
	db, id := runStored(t, `name: e2e-kubernetes-underlay
seed: 6
repetitions: 1
warmup: 0
timeout: 2m
factors:
  platform: [kubernetes]
  network: [pod]
  hosts: [2]
  underlay: [200mbit, "200mbit delay 10ms"]
workloads:
  - {name: tcp, type: net.tcp_stream, params: {duration: 1s}}
  - {name: rr, type: net.tcp_rr, params: {duration: 1s}}
`)
	cells, workloads := cellFactors(t, db, id), cellWorkloads(t, db, id)
	for _, tr := range okTrials(t, db, id, 4, func(tr result.Trial) string { return workloads[tr.CellID] + " " + cells[tr.CellID]["underlay"] }) {
		underlay, m := cells[tr.CellID]["underlay"], trialMeasures(tr)
		switch workloads[tr.CellID] {
		case "tcp":
			t.Logf("a stream between pods on two nodes across %s: %.3f Gbit/s", underlay, m["throughput"])
			if v := m["throughput"]; v <= 0 || v > 0.23 {
				t.Errorf("trial %d: pods on two nodes across a 200 Mbit/s underlay (%s): %.3f Gbit/s", tr.Seq, underlay, v)
			}
		case "rr":
			t.Logf("request/response between pods on two nodes across %s: p50 %.0f µs", underlay, m["latency_p50"])
			if v := m["latency_p50"]; strings.Contains(underlay, "delay") && v < 10000 {
				t.Errorf("trial %d: across a 10 ms round trip (%s) a transaction took %.0f µs", tr.Seq, underlay, v)
			}
		}
	}
	for n := 1; n <= 2; n++ {
		out, err := exec.Command("tc", "-n", "ctrbench-k8s-node"+strconv.Itoa(n), "qdisc", "show", "dev", "eth0").CombinedOutput()
		if err != nil || strings.Contains(string(out), "tbf") {
			t.Errorf("node %d's link after the run: %s (%v); want it unshaped", n, out, err)
		}
		port, err := exec.Command("ip", "-o", "link", "show", "ctrk8s-n"+strconv.Itoa(n)).CombinedOutput()
		if err != nil || !strings.Contains(string(port), "master ctrk8s0") {
			t.Errorf("node %d's port after the run: %s (%v); want it back in the bridge ctrk8s0", n, port, err)
		}
		if out, err := exec.Command("ip", "-o", "link", "show", "ctbkd"+strconv.Itoa(n)).CombinedOutput(); err == nil {
			t.Errorf("a delay line's pair is left on node %d's link: %s", n, out)
		}
	}
}
