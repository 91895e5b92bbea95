package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// LoadHint is how to put an image on the nodes of ctrbench's test cluster,
// which has no registry.
const LoadHint = "scripts/k8s.sh load IMAGE"

// podProblem is why a pod will not become Ready, from its status alone.
type podProblem struct {
	msg    string
	exited bool // its container ended: its log tail helps
	exit   int32
}

// imageReasons are the container waiting reasons of an image the node
// does not have and will not get.
var imageReasons = map[string]bool{
	"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
}

// configReasons are the container waiting reasons of a container the
// runtime cannot make or start.
var configReasons = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "CrashLoopBackOff": true,
}

// problem says why pod cannot get Ready (for a run-to-completion pod: why
// it cannot start), or nil while it still may. An unschedulable pod is a
// problem at once: the scheduler retries, but a trial's placement that
// does not fit now is a spec to fix, not a wait.
func problem(pod *corev1.Pod, runToCompletion bool) *podProblem {
	name := pod.Namespace + "/" + pod.Name
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return &podProblem{msg: fmt.Sprintf("pod %s cannot be scheduled: %s", name, cond.Message)}
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch {
			case imageReasons[w.Reason]:
				return &podProblem{msg: fmt.Sprintf("pod %s: image %s is not on node %s (%s: %s); nothing is pulled: load it onto the nodes (on ctrbench's test cluster: %s)",
					name, cs.Image, pod.Spec.NodeName, w.Reason, w.Message, strings.Replace(LoadHint, "IMAGE", cs.Image, 1))}
			case configReasons[w.Reason]:
				p := &podProblem{msg: fmt.Sprintf("pod %s: container %s cannot start: %s: %s", name, cs.Name, w.Reason, w.Message)}
				if t := cs.LastTerminationState.Terminated; t != nil {
					p.exited, p.exit = true, t.ExitCode
					p.msg = fmt.Sprintf("pod %s: container %s exited with code %d (%s)", name, cs.Name, t.ExitCode, t.Reason)
				}
				return p
			}
		}
		if t := cs.State.Terminated; t != nil && !runToCompletion {
			return &podProblem{msg: fmt.Sprintf("pod %s: container %s exited with code %d (%s)", name, cs.Name, t.ExitCode, t.Reason), exited: true, exit: t.ExitCode}
		}
	}
	if !runToCompletion && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
		return &podProblem{msg: fmt.Sprintf("pod %s ended (phase %s): %s %s", name, pod.Status.Phase, pod.Status.Reason, pod.Status.Message)}
	}
	return nil
}

// started says whether every container of a run-to-completion pod has
// started (runs, or already ended).
func started(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) < len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil && cs.State.Terminated == nil {
			return false
		}
	}
	return true
}

// ready says whether pod's Ready condition is true.
func ready(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exited is the exit code of pod's container name once it has ended.
func exited(pod *corev1.Pod, name string) (code int32, ok bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && cs.Name == name {
			return t.ExitCode, true
		}
	}
	return 0, false
}

// stateOf summarises where pod is on its way, for a timeout's message.
func stateOf(pod *corev1.Pod) string {
	if pod == nil {
		return "not seen"
	}
	var parts []string
	parts = append(parts, "phase "+string(pod.Status.Phase))
	if pod.Spec.NodeName != "" {
		parts = append(parts, "node "+pod.Spec.NodeName)
	}
	for _, cond := range pod.Status.Conditions {
		s := string(cond.Type) + "=" + string(cond.Status)
		if cond.Message != "" {
			s += " (" + cond.Message + ")"
		}
		parts = append(parts, s)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, "container "+cs.Name+" waiting: "+w.Reason+" "+w.Message)
		}
	}
	return strings.Join(parts, ", ")
}
