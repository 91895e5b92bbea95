package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The statuses below are as a v1.34 kubelet and scheduler write them.
func TestProblem(t *testing.T) {
	pod := func(st corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: st}
	}
	waiting := func(reason, msg string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Image: "img:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}}
	}
	terminated := corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}},
	}}}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		rtc    bool
		want   string // "" for no problem
		exited bool
		exit   int32
	}{
		{name: "pending", pod: pod(corev1.PodStatus{Phase: corev1.PodPending})},
		{name: "creating", pod: pod(waiting("ContainerCreating", ""))},
		{name: "unschedulable", pod: pod(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 Insufficient cpu.",
		}}}), want: "cannot be scheduled: 0/2 nodes are available: 2 Insufficient cpu."},
		{name: "image never pulled", pod: pod(waiting("ErrImageNeverPull", `Container image "img:1" is not present with pull policy of Never`)),
			want: "image img:1 is not on node n1 (ErrImageNeverPull: Container image \"img:1\" is not present with pull policy of Never); nothing is pulled: load it onto the nodes (on ctrbench's test cluster: scripts/k8s.sh load img:1)"},
		{name: "exited", pod: pod(terminated), want: "container main exited with code 3 (Error)", exited: true, exit: 3},
		{name: "exited, run to completion", pod: pod(terminated), rtc: true},
		{name: "bad config", pod: pod(waiting("CreateContainerConfigError", "no such secret")), want: "cannot start: CreateContainerConfigError: no such secret"},
	}
	for _, c := range cases {
		p := problem(c.pod, c.rtc)
		switch {
		case c.want == "" && p != nil:
			t.Errorf("%s: problem = %q, want none", c.name, p.msg)
		case c.want != "" && p == nil:
			t.Errorf("%s: no problem, want %q", c.name, c.want)
		case c.want != "" && (!strings.Contains(p.msg, c.want) || p.exited != c.exited || p.exit != c.exit):
			t.Errorf("%s: problem = %+v, want %q (exited %v, code %d)", c.name, *p, c.want, c.exited, c.exit)
		}
	}
}
