package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestConnectNamesWhatItTried(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	if _, err := Connect(missing, ""); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Connect(%q) = %v, want an error naming the file", missing, err)
	}

	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not a pod
	t.Setenv("KUBECONFIG", "")
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err != nil {
		_, err := Connect("", "")
		if err == nil || !strings.Contains(err.Error(), "no Kubernetes cluster configured") || !strings.Contains(err.Error(), clientcmd.RecommendedHomeFile) {
			t.Errorf("Connect with no kubeconfig = %v, want an error naming %s", err, clientcmd.RecommendedHomeFile)
		}
	}

	other := filepath.Join(t.TempDir(), "a", "b")
	t.Setenv("KUBECONFIG", other)
	if _, err := Connect("", ""); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("Connect with KUBECONFIG=%s = %v, want an error naming it", other, err)
	}
}

func TestConnectContext(t *testing.T) {
	if _, err := os.Stat(TestKubeconfig); err != nil {
		t.Skip("no ctrbench test cluster: make k8s && scripts/k8s.sh up")
	}
	_, err := Connect(TestKubeconfig, "no-such-context")
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "no-such-context") || !strings.Contains(err.Error(), TestKubeconfig) {
		t.Errorf("Connect with a missing context = %v, want an error naming it and the file", err)
	}
	cfg, err := clientcmd.LoadFromFile(TestKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Connect(TestKubeconfig, cfg.CurrentContext)
	if err != nil || c.Host() == "" {
		t.Errorf("Connect with context %q = %v, %v", cfg.CurrentContext, c, err)
	}
}
