// Package kubernetes is the Kubernetes platform: every instance is a pod
// of one container running the agent, in a namespace of the campaign's
// own, placed on a node by name, on the cluster's pod network (its CNI)
// or its node's host network. The cluster is the one a kubeconfig names,
// as kubectl finds it (KUBECONFIG, ~/.kube/config); ctrbench's test
// cluster (scripts/k8s.sh) is one.
//
// Nothing is pulled: the agent image is written by ctrbench itself (no
// engine) and imported into every node's containerd where the node says
// where that is (scripts/k8s.sh's nodes do, by annotation, as kind load
// imports); a node without it fails the pod, saying how to load it. Pod
// states are watched and stamped as they arrive (package kube, the one
// that speaks the Kubernetes API); the agent's output is its pod's log.
package kubernetes

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Caps: a pod has a namespace and a cgroup of its own; it is on the
// cluster's pod network or its node's host network, and a server is
// reached at its pod's address, through a Service (its ClusterIP) or a
// NodePort; limits are its
// container's CPU and memory limits (requests equal, so a pod with both is
// Guaranteed).
var Caps = platform.Capabilities{
	StartStop: 2 * time.Second, // rough: for the dry run's estimate
	Networks:  []vocab.Network{vocab.Host, vocab.Pod, vocab.Service, vocab.NodePort},
	Storages:  []vocab.Storage{vocab.Layer},
	OwnCgroup: true,
	Limits:    true,
	NoLimits: map[string]string{
		"cpuset":       "a Kubernetes pod has CPU and memory limits; its cores are the kubelet's CPU manager's to give (cores of its own: cpu_manager static, qos guaranteed, whole cpus)",
		"blkio_weight": "a Kubernetes pod has no block I/O limits",
		"read_bps":     "a Kubernetes pod has no block I/O limits",
		"write_bps":    "a Kubernetes pod has no block I/O limits",
		vocab.FPids:    "ctrbench gives a Kubernetes pod CPU and memory limits only (a pod's pids limit is the kubelet's)",
	},
	Phases: []vocab.Phase{vocab.Create, vocab.Assigned, vocab.Start, vocab.Exit, vocab.Remove},
	Tools:  true,
	// A user's image runs with the agent put into it (package userimage),
	// imported into the nodes as the agent image is.
	UserImages: true,
	// A pod holds the agents beside its own (packaging same-pod).
	Pods:    true,
	Own:     platform.Own{Factors: []platform.Factor{qosFactor, kubeProxyFactor, cniFactor, cpuManagerFactor}},
	Cluster: cluster{},
	Net: platform.Net{
		OwnNetNS: true,
	},
}

func init() {
	platform.Register(platform.Driver{
		Name:    "kubernetes",
		Summary: "Kubernetes pods (one container each) on the cluster your kubeconfig names, or ctrbench's test cluster (scripts/k8s.sh)",
		Noun:    "Kubernetes pod",
		Rank:    27,
		Caps:    Caps,
		Open: func(ctx context.Context, cfg platform.Config) (platform.Platform, error) {
			return Open(ctx, cfg)
		},
		Clean: clean,
	})
}

// configured reports whether a cluster is named at all: clean looks at
// none otherwise.
func configured() bool {
	if os.Getenv("KUBECONFIG") != "" {
		return true
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(home + "/.kube/config")
	return err == nil
}

// clean removes the namespaces of killed runs (and everything in them)
// from the cluster the kubeconfig names.
func clean(ctx context.Context, o platform.CleanOptions) (platform.Cleaned, error) {
	var out platform.Cleaned
	if !configured() {
		out.Skipped = "no kubeconfig (KUBECONFIG, ~/.kube/config): no cluster looked at"
		return out, nil
	}
	c, err := kube.Connect("", os.Getenv(kube.ContextEnv))
	if err != nil {
		out.Skipped = err.Error()
		return out, nil
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Version(vctx); err != nil {
		out.Skipped = err.Error()
		return out, nil
	}
	removed, err := c.Clean(ctx, o.Campaign)
	for _, ns := range removed {
		out.Removed = append(out.Removed, "Kubernetes namespace "+ns)
	}
	return out, err
}

// cluster is Kubernetes as a cluster platform: as many nodes as it has,
// routes there as soon as a pod runs, and links between nodes that
// ctrbench shapes where they are on this machine (the test cluster's).
type cluster struct{}

func (cluster) MaxNodes() int      { return 0 }
func (cluster) RoutesSettle() bool { return false }

func (cluster) Shape(p platform.Platform, u vocab.Underlay) error {
	kp, ok := p.(*Platform)
	if !ok {
		return fmt.Errorf("not an open kubernetes platform (%T)", p)
	}
	return kp.shape(u)
}

// Delays: a delay line is spliced into the test cluster's node links.
func (cluster) Delays() bool { return true }
