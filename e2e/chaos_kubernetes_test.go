package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// Faults of a Kubernetes cluster's own parts, on ctrbench's test cluster
// (make chaos brings one up for them: scripts/k8s-test.sh): a pod evicted,
// the API server frozen, a node's kubelet and its containerd killed, each
// mid-trial. Each row says what ctrbench did, and that no trial was lost
// or recorded twice and nothing was left — on the machine or, as kubectl
// reads it, on the cluster.

// k8sRun is the test cluster's run directory (scripts/k8s-cluster.sh's
// RUN): its daemons' PID files.
const k8sRun = "/run/ctrbench-k8s"

// chaosKubernetes marks a fault-injection case on the test cluster: make
// chaos runs it.
func chaosKubernetes(t *testing.T) {
	t.Helper()
	requireKubernetes(t)
	chaosCase(t, true)
	waitNodesReady(t)
}

// k8sPID is the PID a daemon of the test cluster's wrote ("kube-apiserver",
// "node1/kubelet").
func k8sPID(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(k8sRun, name+".pid"))
	if err != nil {
		t.Fatalf("the test cluster's %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// k8sScript runs scripts/k8s.sh with args.
func k8sScript(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("bash", append([]string{filepath.Join("..", "scripts", "k8s.sh")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/k8s.sh %v: %v\n%s", args, err, out)
	}
}

// k8sRow finishes a case's row: what kubectl finds of the campaign joins
// what is left on the machine.
func k8sRow(t *testing.T, f faultRun, order int, fault, did string) chaosRow {
	t.Helper()
	r := f.row(t, order, fault, did)
	if left := kubeLeftovers(t, f.id); len(left) > 0 {
		t.Errorf("kubectl finds %v of the campaign", left)
		if r.Left == "nothing" {
			r.Left = ""
		}
		r.Left = strings.TrimPrefix(r.Left+"; on the cluster: "+strings.Join(left, ", "), "; ")
	}
	return r
}

// waitNodesReady waits until every node of the test cluster is Ready.
func waitNodesReady(t *testing.T) {
	t.Helper()
	waitFor(t, "every node Ready", 2*time.Minute, func() bool {
		out, err := kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {end}`)
		return err == nil && strings.TrimSpace(out) != "" && !strings.Contains(out, "False") && !strings.Contains(out, "Unknown")
	})
}

// kubeCells is a campaign of pods on the test cluster's first node whose
// trials run for seconds.
func kubeCells(name string) string { return longTrials(name, "kubernetes", 3, "") }

// A pod evicted mid-trial through the Eviction API (what a node under
// pressure or a drain does): the platform's failure, not the workload's —
// the attempt is recorded as the platform's and the trial tried again.
func TestChaosKubernetesPodEvicted(t *testing.T) {
	chaosKubernetes(t)
	start := time.Now()
	f := runFault(t, kubeCells("chaos-k8s-evict"), 3, primesRunning, func() {
		out, err := kubectl(t, "get", "pods", "--all-namespaces", "-l", platform.LabelManaged+"=true", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}")
		pods := strings.Fields(out)
		if err != nil || len(pods) == 0 {
			t.Fatalf("no pod of the campaign to evict: %v", err)
		}
		ns, name, _ := strings.Cut(pods[0], "/")
		body := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`
		cmd := exec.Command(os.Getenv("CTRBENCH_KUBECTL"), "create", "--raw", "/api/v1/namespaces/"+ns+"/pods/"+name+"/eviction", "-f", "-")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("evicting %s: %v: %s", pods[0], err, out)
		}
	}, nil)
	if f.code != 0 || f.retried < 1 {
		t.Errorf("exit %d, %d attempt(s) retried: want the evicted pod's trial retried as the platform's failure and the campaign complete (%v)", f.code, f.retried, f.what)
	}
	record(t, start, k8sRow(t, f, 60, "a trial's pod evicted (the Eviction API) mid-trial",
		"the trial's attempt failed by the platform (its pod was deleted by something else than ctrbench) and was tried again; the campaign completed"))
}

// The API server frozen (SIGSTOP) mid-trial, trial timeout 20 s: the trial
// cannot learn that its agent ended; the watchdog pings the API server
// (platform.Pinger), finds it silent and stops the campaign as an
// interruption. After SIGCONT, `run --resume` completes it.
func TestChaosKubernetesAPIServerFrozen(t *testing.T) {
	chaosKubernetes(t)
	start := time.Now()
	pid := k8sPID(t, "kube-apiserver")
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	f := runFault(t, kubeCells("chaos-k8s-apiserver"), 3, primesRunning, func() {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}, func() {
		thaw()
		// As an operator would before resuming: the API server answers
		// and the nodes, marked NotReady while their kubelets could not
		// report, are Ready again.
		waitFor(t, "the API server to answer", time.Minute, func() bool { _, err := kubectl(t, "get", "--raw", "/readyz"); return err == nil })
		waitNodesReady(t)
	})
	record(t, start, k8sRow(t, f, 61, "the API server frozen (SIGSTOP kube-apiserver) mid-trial, trial timeout 20 s, then SIGCONT",
		"the breaker found the API server silent and stopped the campaign; `run --resume` completed it"))
}

// A node's kubelet killed (SIGKILL) mid-trial and started again a few
// seconds later (scripts/k8s.sh restart): the pod's container runs on
// without it; the log stream the kubelet served ends, and the platform
// reads the rest of the pod's log once the agent has ended (its result
// among it); the campaign completes.
func TestChaosKubernetesKubeletKilled(t *testing.T) {
	chaosKubernetes(t)
	start := time.Now()
	f := runFault(t, kubeCells("chaos-k8s-kubelet"), 3, primesRunning, func() {
		if err := syscall.Kill(k8sPID(t, "node1/kubelet"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		k8sScript(t, "restart", "1", "kubelet")
	}, nil)
	record(t, start, k8sRow(t, f, 62, "a node's kubelet killed (SIGKILL) mid-trial, started again 3 s later",
		"the pod's log stream (the kubelet's) ended early; once the agent had ended, the platform read the rest of the pod's log, the agent's result among it; the campaign went on and completed"))
}

// A node's containerd killed (SIGKILL) mid-trial and started again a few
// seconds later: the running container's shim outlives it and the kubelet
// reconnects, but what the agent wrote while containerd was down is not in
// the pod's log; the campaign completes.
func TestChaosKubernetesContainerdKilled(t *testing.T) {
	chaosKubernetes(t)
	start := time.Now()
	f := runFault(t, kubeCells("chaos-k8s-containerd"), 3, primesRunning, func() {
		if err := syscall.Kill(k8sPID(t, "node1/containerd"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		k8sScript(t, "restart", "1", "containerd")
	}, nil)
	record(t, start, k8sRow(t, f, 63, "a node's containerd killed (SIGKILL) mid-trial, started again 3 s later",
		"the trial under way failed when its agent's result did not reach the pod's log (containerd copies a container's output into it, and was down when the agent wrote it), as the workload's failure: ctrbench cannot tell that from a workload that printed nothing; the campaign went on and completed"))
}
