#!/usr/bin/env bash
# k8s-test.sh: the Kubernetes tests on a test cluster of their own: build
# Kubernetes if it is not cached (scripts/k8s.sh build), bring a cluster
# up, run the packages' tests on it (go test -json on stdout, for
# scripts/gotest-summary.py), bring it down — also when a test fails or
# this script is interrupted — and fail if anything of it is left.
# CTRBENCH_BIN names the ctrbench binary (the cluster's addresses come from
# its subnet pool).
#
#   scripts/k8s-test.sh [PACKAGE…]    (default: the Kubernetes packages)
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${CTRBENCH_BIN:?CTRBENCH_BIN names the ctrbench binary}"
export CTRBENCH_BIN
K8S="bash scripts/k8s.sh"
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./internal/kube/...)

$K8S build >&2 || exit 1
$K8S up >&2 || { $K8S down >&2; exit 1; }
trap '$K8S down >&2' EXIT
trap 'exit 130' INT TERM
KUBECONFIG=/var/lib/ctrbench/k8s/admin.kubeconfig "$GO" test -json -count=1 -p 1 -timeout 10m "${pkgs[@]}"
