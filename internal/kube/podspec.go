package kube

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// containerName is the name of a pod's own container.
const containerName = "main"

// PodSpec is one pod of a trial in ctrbench's terms: its own container,
// and sidecars beside it.
type PodSpec struct {
	Name      string // a DNS-1123 label
	Namespace string // one EnsureNamespace made
	// Node pins the pod to the node of that name ("" lets the scheduler
	// choose). The scheduler still places it (a required node affinity
	// on the node's name, as a DaemonSet's pods have), so the pod's
	// timings include scheduling and its requests are accounted for.
	Node    string
	Image   string
	Command []string // the entrypoint; nil keeps the image's
	Args    []string
	Env     map[string]string
	// HostNetwork runs the pod in its node's network namespace.
	HostNetwork bool
	Ports       []Port
	Readiness   *Probe // nil: Ready once the container runs
	// Requests and Limits are resource quantities by name, e.g.
	// {"cpu": "500m", "memory": "64Mi"}.
	Requests, Limits map[string]string
	// Labels are the caller's (trial, role); ctrbench's win over them.
	Labels map[string]string
	// PullPolicy is "Never" when "" (the cluster may have no registry),
	// else "IfNotPresent" or "Always".
	PullPolicy string
	// GracePeriod is the time the pod is given to stop on deletion;
	// 0, the default, kills it at once (a PID 1 that ignores SIGTERM
	// would otherwise hold a deletion for 30 s).
	GracePeriod time.Duration
	// RunToCompletion is for a command that ends: StartPod returns once
	// its container has started (or already ended), WaitExit gives its
	// exit code. Otherwise StartPod waits until the pod is Ready. Pods
	// are never restarted either way (restartPolicy Never): a restart
	// inside a trial would corrupt its measurements.
	RunToCompletion bool
	// Sidecars are more containers in the pod: they share its network
	// namespace, node and life, each with its own limits, and each ends
	// on its own (the pod runs until all have). StartPod waits until every
	// container has started; Pod.Sidecar addresses one.
	Sidecars []Sidecar
}

// Sidecar is a container beside a pod's own.
type Sidecar struct {
	Name  string // a DNS-1123 label, not the pod's own container's ("main")
	Image string // "" for the pod's image
	Args  []string
	Env   map[string]string
	// Requests and Limits as the pod's own.
	Requests, Limits map[string]string
}

// Port is a container port the pod exposes.
type Port struct {
	Name     string // optional, a Service's targetPort may name it
	Port     int32
	Protocol string // "TCP" when "", or "UDP", "SCTP"
}

// Probe is a readiness check: a TCP connection to TCPPort (or, with
// HTTPPath, an HTTP GET of that path there answered below 400), or Exec
// run in the container (ready when it exits 0).
type Probe struct {
	TCPPort  int32
	HTTPPath string
	Exec     []string
	Period   time.Duration // 1 s when 0
}

// validate reports every problem of the spec at once.
func (s *PodSpec) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("pod name %q: %s", s.Name, strings.Join(msgs, "; ")))
	}
	if s.Namespace == "" {
		errs = append(errs, errors.New("pod "+s.Name+": no namespace (make one with EnsureNamespace)"))
	}
	if s.Image == "" {
		errs = append(errs, errors.New("pod "+s.Name+": no image"))
	}
	if p := s.Readiness; p != nil && ((p.TCPPort == 0) == (len(p.Exec) == 0) || (p.HTTPPath != "" && p.TCPPort == 0)) {
		errs = append(errs, errors.New("pod "+s.Name+": a readiness probe needs exactly one of a TCP port (with an HTTP path or not) and a command"))
	}
	names := map[string]bool{containerName: true}
	for _, sc := range s.Sidecars {
		if msgs := validation.IsDNS1123Label(sc.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("pod %s: sidecar name %q: %s", s.Name, sc.Name, strings.Join(msgs, "; ")))
		}
		if names[sc.Name] {
			errs = append(errs, fmt.Errorf("pod %s: two containers are named %q", s.Name, sc.Name))
		}
		names[sc.Name] = true
	}
	switch s.PullPolicy {
	case "", "Never", "IfNotPresent", "Always":
	default:
		errs = append(errs, fmt.Errorf("pod %s: pull policy %q is none of Never, IfNotPresent, Always", s.Name, s.PullPolicy))
	}
	return errors.Join(errs...)
}

// pod is the Kubernetes pod of the spec, labelled with labels.
func (s *PodSpec) pod(labels map[string]string) (*corev1.Pod, error) {
	res, err := resources(s.Requests, s.Limits)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", s.Name, err)
	}
	pull := corev1.PullPolicy(s.PullPolicy)
	if pull == "" {
		pull = corev1.PullNever
	}
	ctr := corev1.Container{
		Name:            containerName,
		Image:           s.Image,
		Command:         s.Command,
		Args:            s.Args,
		ImagePullPolicy: pull,
		Resources:       res,
		ReadinessProbe:  s.Readiness.probe(),
		// The reason a container ended is its log's end, which Logs
		// and the failure messages give.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	ctr.Env = envVars(s.Env)
	for _, p := range s.Ports {
		proto := corev1.Protocol(p.Protocol)
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ctr.Ports = append(ctr.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: proto})
	}
	containers := []corev1.Container{ctr}
	for _, sc := range s.Sidecars {
		c, err := sc.container(s.Image, pull)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", s.Name, err)
		}
		containers = append(containers, c)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                    containers,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr(int64(s.GracePeriod / time.Second)),
			HostNetwork:                   s.HostNetwork,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
		},
	}
	if s.HostNetwork {
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if s.Node != "" {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{s.Node}}},
			}}},
		}}
	}
	return pod, nil
}

// container is the Kubernetes container of sidecar sc, from image (the
// pod's) unless it names its own.
func (sc Sidecar) container(image string, pull corev1.PullPolicy) (corev1.Container, error) {
	res, err := resources(sc.Requests, sc.Limits)
	if err != nil {
		return corev1.Container{}, fmt.Errorf("sidecar %s: %w", sc.Name, err)
	}
	if sc.Image != "" {
		image = sc.Image
	}
	return corev1.Container{Name: sc.Name, Image: image, Args: sc.Args, Env: envVars(sc.Env), ImagePullPolicy: pull, Resources: res,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}, nil
}

// envVars are a container's environment, in the order of their names.
func envVars(env map[string]string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, corev1.EnvVar{Name: k, Value: env[k]})
	}
	return out
}

// probe is the Kubernetes readiness probe of p (nil for nil).
func (p *Probe) probe() *corev1.Probe {
	if p == nil {
		return nil
	}
	period := int32(p.Period / time.Second)
	if period < 1 {
		period = 1
	}
	// Ready at the first answer; not ready after three missed in a row
	// (Kubernetes' default), so one slow answer of a loaded server does
	// not take it out of its Service mid-trial.
	pr := &corev1.Probe{PeriodSeconds: period, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1}
	switch {
	case p.TCPPort != 0 && p.HTTPPath != "":
		pr.HTTPGet = &corev1.HTTPGetAction{Path: p.HTTPPath, Port: intstr.FromInt32(p.TCPPort)}
	case p.TCPPort != 0:
		pr.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.TCPPort)}
	default:
		pr.Exec = &corev1.ExecAction{Command: p.Exec}
	}
	return pr
}

// resources parses requests and limits, naming the quantity that is not
// one.
func resources(requests, limits map[string]string) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	var err error
	if r.Requests, err = resourceList("request", requests); err != nil {
		return r, err
	}
	r.Limits, err = resourceList("limit", limits)
	return r, err
}

func resourceList(what string, m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	l := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s=%q is not a quantity (e.g. 500m, 64Mi): %w", what, k, v, err)
		}
		l[corev1.ResourceName(k)] = q
	}
	return l, nil
}
