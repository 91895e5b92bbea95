// Package kube is ctrbench's one gateway to a Kubernetes API server: the
// only package that imports client-go (and k8s.io/api, apimachinery). It
// finds the cluster as kubectl does, and offers what the kubernetes
// platform asks of a cluster in ctrbench's terms: the server's version and
// nodes, a namespace per campaign, pods started and watched until Ready
// with their lifecycle timings, their logs and exit codes, Services, and
// the clean-up of what a killed campaign left behind.
//
// Its types are plain Go (PodSpec, Pod, Node, Service), so no other
// package needs a Kubernetes type. Nothing is ever pulled: pods use the
// pull policy Never unless told otherwise, since the clusters ctrbench
// benchmarks may have no registry.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ContextEnv names the kubeconfig context the run's clients use (ctrbench
// --kube-context exports it, as --kubeconfig exports KUBECONFIG); unset:
// the kubeconfig's current context.
const ContextEnv = "CTRBENCH_KUBE_CONTEXT"

// TestKubeconfig is where scripts/k8s.sh up writes the admin kubeconfig
// of ctrbench's own test cluster.
const TestKubeconfig = "/var/lib/ctrbench/k8s/admin.kubeconfig"

// Client talks to one cluster, as one context of a kubeconfig names it.
type Client struct {
	cs   *coreClient
	cfg  *rest.Config // for the streams that are not REST calls (exec)
	host string       // the API server's URL, for messages

	mu        sync.Mutex
	campaigns map[string]string // namespace -> its campaign label, as looked up

	// watchTimeout, when not 0, is how long (seconds) the server keeps
	// a watch open, instead of its 30 to 60 minutes: tests make it end
	// soon to see it resumed.
	watchTimeout int64
}

// Connect finds the cluster as kubectl does: the kubeconfig file given,
// else the files $KUBECONFIG lists, else ~/.kube/config (else, inside a
// pod, the pod's service account); context picks one of the file's
// contexts, "" its current one. It does not call the API: Version does.
func Connect(kubeconfig, context string) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		tried := triedConfigs(rules)
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("no Kubernetes cluster configured (tried %s): pass --kubeconfig FILE or set KUBECONFIG; ctrbench's test cluster is %s (make k8s && scripts/k8s.sh up)", tried, TestKubeconfig)
		}
		if context != "" {
			return nil, fmt.Errorf("loading Kubernetes context %q from %s: %w", context, tried, err)
		}
		return nil, fmt.Errorf("loading kubeconfig from %s: %w", tried, err)
	}
	cfg.UserAgent = "ctrbench"
	// The API's deprecation warnings are not the user's to act on.
	cfg.WarningHandler = rest.NoWarnings{}
	// client-go's default of 5 requests a second would pace a trial's
	// creates and deletes; the API server has its own fairness.
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := newCore(cfg)
	if err != nil {
		return nil, fmt.Errorf("making a Kubernetes client for %s: %w", cfg.Host, err)
	}
	return &Client{cs: cs, cfg: cfg, host: cfg.Host, campaigns: map[string]string{}}, nil
}

// triedConfigs names the kubeconfig files rules look at, in order.
func triedConfigs(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	files := strings.Join(rules.Precedence, ", ")
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		return "$KUBECONFIG: " + files
	}
	return files
}

// Host is the API server's URL.
func (c *Client) Host() string { return c.host }

// Version asks the API server its version, e.g. "v1.34.4"; it is also the
// check that the cluster answers.
func (c *Client) Version(ctx context.Context) (string, error) {
	raw, err := c.cs.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("asking the Kubernetes API server at %s its version: %w", c.host, err)
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("reading the version of the Kubernetes API server at %s: %w", c.host, err)
	}
	if v.GitVersion == "" {
		return "", errors.New("the Kubernetes API server at " + c.host + " gave no version")
	}
	return v.GitVersion, nil
}
