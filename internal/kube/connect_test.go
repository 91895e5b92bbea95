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
