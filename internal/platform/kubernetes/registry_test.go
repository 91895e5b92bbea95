package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/kubernetes"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/result"
)

// registryAnnotation is where the test cluster's nodes say a registry on
// the machine is reachable from them over plain HTTP (scripts/k8s-cluster.sh).
const registryAnnotation = "ctrbench.io/http-registry"

// startRegistry runs Debian's docker-registry (unpacked by scripts/k8s.sh
// build beside kubectl) at addr, storing in a directory of the test's, until
// the test ends.
func startRegistry(t *testing.T, addr string) {
	t.Helper()
	kubectl := os.Getenv("CTRBENCH_KUBECTL")
	bin := filepath.Join(filepath.Dir(kubectl), "registry")
	if _, err := os.Stat(bin); kubectl == "" || err != nil {
		t.Skip("no docker-registry from scripts/k8s.sh build (scripts/k8s-test.sh names it)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: "+filepath.Join(dir, "data")+"\nhttp:\n  addr: "+addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfg)
	var log bytes.Buffer // its log: every probe of a blob not yet there is an "error"
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the registry's log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/v2/"); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry at %s did not answer in 20 s", addr)
		}
	}
}

// TestRegistry: with --registry the agent image is pushed (by
// go-containerregistry) to a real registry — Debian's docker-registry, on
// the machine's address on the node network — and pods pull it from there
// by digest: a pod on the second node runs the agent from it, and the
// registry lists the tag that was pushed.
func TestRegistry(t *testing.T) {
	testCluster(t)
	ctx := context.Background()
	c, err := kube.Connect(kube.TestKubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) < 2 {
		t.Fatalf("nodes %v, %v", nodes, err)
	}
	anns, err := c.NodeAnnotations(ctx, nodes[1].Name)
	if err != nil {
		t.Fatal(err)
	}
	addr := anns[registryAnnotation]
	if addr == "" {
		t.Fatalf("node %s does not say where a registry is reachable (%s)", nodes[1].Name, registryAnnotation)
	}
	startRegistry(t, addr)
	t.Setenv(kubernetes.RegistryEnv, "http://"+addr+"/ctrbench-test")
	p, campaign, labels := prepared(t, "test-k8s-registry", 2)
	ref := p.Info()["kubernetes.agent_image"]
	repo, digest, ok := strings.Cut(ref, "@sha256:")
	if !ok || repo != addr+"/ctrbench-test/ctrbench-agent" || len(digest) != 64 {
		t.Fatalf("the agent image is %q; want %s/ctrbench-test/ctrbench-agent@sha256:…", ref, addr)
	}
	resp, err := http.Get("http://" + addr + "/v2/ctrbench-test/ctrbench-agent/tags/list")
	if err != nil {
		t.Fatal(err)
	}
	var tags struct{ Tags []string }
	err = json.NewDecoder(resp.Body).Decode(&tags)
	resp.Body.Close()
	if err != nil || len(tags.Tags) != 1 {
		t.Errorf("the registry lists tags %v (%v); want the one pushed", tags.Tags, err)
	}
	key := result.NewKey()
	inv := invocation.Agent{Kind: invocation.Run, Workload: "cpu.primes", Role: "main", Params: `{"duration":"200ms","max_prime":"2000"}`, Key: key}
	in, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-pulled", Agent: inv, Host: 2, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Remove(ctx)
	if res := platformtest.ReadResult(t, in, key); res == nil || res.Status != result.OK {
		t.Fatalf("the pod pulled from the registry: %+v", res)
	}
	if node := in.(platform.Seer).Seen()["kubernetes.node"]; node != nodes[1].Name {
		t.Errorf("ran on %s, want %s", node, nodes[1].Name)
	}
}
