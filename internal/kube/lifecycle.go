package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Stage is a step of a pod's way to Ready, in the order the steps happen.
type Stage int

const (
	Created   Stage = iota // the API server stored it
	Scheduled              // bound to a node
	// Initialized: its init containers (if any) done — with none, the
	// kubelet says so at its first status, before the sandbox is made.
	Initialized
	SandboxReady    // its sandbox and network made (PodReadyToStartContainers)
	ContainersReady // its containers running and ready
	Ready           // the pod ready: a Service sends it traffic
	stages
)

// Stages lists the stages in order.
func Stages() []Stage {
	return []Stage{Created, Scheduled, Initialized, SandboxReady, ContainersReady, Ready}
}

func (s Stage) String() string {
	return [...]string{"created", "scheduled", "initialized", "sandbox-ready", "containers-ready", "ready"}[s]
}

// condition is the pod condition that marks stage s (Created has none).
func (s Stage) condition() corev1.PodConditionType {
	return [...]corev1.PodConditionType{"", corev1.PodScheduled, corev1.PodInitialized, corev1.PodReadyToStartContainers, corev1.ContainersReady, corev1.PodReady}[s]
}

// Lifecycle is when a pod reached each stage.
//
// Observed is when the watch event that first showed the stage reached
// this process (time.Now, nanoseconds; the watch begins before the pod is
// created, so none is missed): what a benchmark measures. API is the
// server's own record, kept beside as a cross-check: the creation
// timestamp and each condition's lastTransitionTime, both whole seconds.
// A stage not reached is the zero time.
type Lifecycle struct {
	Observed [stages]time.Time
	API      [stages]time.Time
}

// Since is how long after creation (as observed) the pod reached stage s,
// 0 when it did not.
func (l *Lifecycle) Since(s Stage) time.Duration {
	if l.Observed[s].IsZero() || l.Observed[Created].IsZero() {
		return 0
	}
	return l.Observed[s].Sub(l.Observed[Created])
}

// observe records the stages pod shows that were not seen before, as
// reached at at. Events arrive in order, so the stamps are too.
func (l *Lifecycle) observe(pod *corev1.Pod, at time.Time) {
	if l.Observed[Created].IsZero() {
		l.Observed[Created], l.API[Created] = at, pod.CreationTimestamp.Time
	}
	for _, s := range Stages()[1:] {
		if !l.Observed[s].IsZero() {
			continue
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == s.condition() && cond.Status == corev1.ConditionTrue {
				l.Observed[s], l.API[s] = at, cond.LastTransitionTime.Time
			}
		}
	}
}
