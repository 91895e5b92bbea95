#!/usr/bin/env bash
# k8s-test.sh: the Kubernetes tests on a test cluster of their own: build
# Kubernetes if it is not cached (scripts/k8s.sh build), bring a cluster
# up, run the packages' tests on it (go test -json on stdout, for
# scripts/gotest-summary.py), bring it down — also when a test fails or
# this script is interrupted — and fail if anything of it is left.
# CTRBENCH_BIN names the ctrbench binary (the cluster's addresses come from
# its subnet pool).
#
#   scripts/k8s-test.sh [PACKAGE…]    (default: the Kubernetes packages),
#                                      then the end-to-end tests TestKubernetes*
# CTRBENCH_K8S_PKGS=none skips the packages; CTRBENCH_K8S_E2E is the
# end-to-end tests' -run pattern (make chaos: its Kubernetes faults; none
# skips them). The cluster has four nodes (CTRBENCH_K8S_UP overrides
# scripts/k8s.sh up's arguments): nodes 1 and 2 run kube-proxy in iptables
# mode and the bridge CNI, which the tests on one node or two use; node 3
# runs kube-proxy in nftables mode, node 4 the ptp CNI and the kubelet's
# static CPU manager policy (the kube_proxy, cni and cpu_manager factors'
# tests).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${CTRBENCH_BIN:?CTRBENCH_BIN names the ctrbench binary}"
export CTRBENCH_BIN
K8S="bash scripts/k8s.sh"
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./internal/kube ./internal/platform/kubernetes)

$K8S build >&2 || exit 1
if $K8S status >/dev/null 2>&1; then
	echo "k8s-test: a test cluster is up already (scripts/k8s.sh status): the tests bring up their own; scripts/k8s.sh down ends it" >&2
	exit 1
fi
up=0
trap '[ $up -eq 0 ] || $K8S down >&2' EXIT
trap 'exit 130' INT TERM
up=1
$K8S up ${CTRBENCH_K8S_UP:---nodes 4 --proxy-mode iptables,iptables,nftables,iptables --cni bridge,bridge,bridge,ptp --cpu-manager none,none,none,static} >&2 || exit 1
export KUBECONFIG=/var/lib/ctrbench/k8s/admin.kubeconfig CTRBENCH_K8S_TEST=1
CTRBENCH_KUBECTL=$($K8S kubectl-path) || exit 1
export CTRBENCH_KUBECTL
rc=0
# The packages' tests and the end-to-end tests run at once (each campaign
# and test has a namespace of its own; their checks hold on a busy
# machine): the packages' output is kept apart and printed after.
pkgout=$(mktemp)
pk=
if [ "${CTRBENCH_K8S_PKGS:-}" != none ]; then
	"$GO" test -json -count=1 -p 1 -timeout 10m "${pkgs[@]}" >"$pkgout" &
	pk=$!
fi
# The end-to-end tests of `ctrbench run` on the cluster (e2e/kubernetes_test.go;
# make chaos: CTRBENCH_K8S_E2E=Chaos, e2e/chaos_kubernetes_test.go).
if [ "${CTRBENCH_K8S_E2E:-}" != none ]; then
	"$GO" test ${CTRBENCH_K8S_E2E_FLAGS:--json} -count=1 -timeout 30m -run "${CTRBENCH_K8S_E2E:-^TestKubernetes}" ./e2e || rc=1
fi
if [ -n "$pk" ]; then
	wait "$pk" || rc=1
fi
cat "$pkgout"
rm -f "$pkgout"
up=0
# Down, and nothing of the cluster may be left: a leftover fails the run.
$K8S down >&2 || rc=1
exit $rc
