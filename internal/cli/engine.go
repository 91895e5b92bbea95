package cli

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/ctrbench/ctrbench/internal/kube"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/kubernetes"
)

// engineFlags name a Docker Engine as Docker's CLI does — the manager of a
// user's swarm, for the swarm platform (and every Engine API call of the
// run) — and a Kubernetes cluster as kubectl does, for the kubernetes
// platform.
type engineFlags struct {
	platform.Engine
	// The Kubernetes cluster, for the kubernetes platform: a kubeconfig
	// file and a context of it, as kubectl takes them.
	Kubeconfig, KubeContext string
	// Registry is where the kubernetes platform pushes its images for the
	// nodes to pull, instead of importing them into the nodes.
	Registry string
}

func (e *engineFlags) register(f *pflag.FlagSet) {
	f.StringVar(&e.Host, "docker-host", "", "the Docker Engine to drive, as docker -H takes it (tcp://manager:2376, unix:///path); default $DOCKER_HOST. With platform swarm it must be a swarm manager: the campaign runs on that swarm rather than on one emulated here")
	f.StringVar(&e.Context, "context", "", "a Docker CLI context naming the engine (default $DOCKER_CONTEXT)")
	// As Docker's CLI: DOCKER_TLS_VERIFY set (to anything) turns it on,
	// and the files then come from $DOCKER_CERT_PATH.
	f.BoolVar(&e.TLSVerify, "tlsverify", os.Getenv("DOCKER_TLS_VERIFY") != "", "use TLS and verify the engine (default $DOCKER_TLS_VERIFY; without the three files below, ca.pem, cert.pem and key.pem of $DOCKER_CERT_PATH or ~/.docker)")
	f.StringVar(&e.TLSCACert, "tlscacert", "", "trust certs signed only by this CA (with --docker-host)")
	f.StringVar(&e.TLSCert, "tlscert", "", "TLS certificate file (with --docker-host)")
	f.StringVar(&e.TLSKey, "tlskey", "", "TLS key file (with --docker-host)")
	f.StringVar(&e.Kubeconfig, "kubeconfig", "", "the kubeconfig file of the Kubernetes cluster the kubernetes platform runs on, as kubectl takes it (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&e.KubeContext, "kube-context", "", "the kubeconfig's context naming the cluster (default its current context)")
	f.StringVar(&e.Registry, "registry", "", "a registry the kubernetes platform pushes the agent and users' images to, HOST[:PORT][/PREFIX] (http://… for one without TLS), for nodes it cannot import images into: pods pull them by digest (default $"+kubernetes.RegistryEnv+")")
}

// apply exports the engine to the environment, where every Engine API
// client of the run (and validation, which asks whose kernel counts)
// finds it, as Docker's CLI does; it returns the engine.
func (e *engineFlags) apply() platform.Engine {
	if e.Host != "" {
		os.Setenv("DOCKER_HOST", e.Host)
	}
	if e.Context != "" {
		os.Setenv("DOCKER_CONTEXT", e.Context)
	}
	if e.Kubeconfig != "" {
		os.Setenv("KUBECONFIG", e.Kubeconfig)
	}
	if e.KubeContext != "" {
		os.Setenv(kube.ContextEnv, e.KubeContext)
	}
	if e.Registry != "" {
		os.Setenv(kubernetes.RegistryEnv, e.Registry)
	}
	if e.Host == "" && e.Context == "" {
		e.Host = os.Getenv("DOCKER_HOST")
		e.Context = os.Getenv("DOCKER_CONTEXT")
	}
	return e.Engine
}
