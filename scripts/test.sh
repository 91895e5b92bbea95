#!/usr/bin/env bash
# test.sh: make test's tests, in the order that keeps CI within its
# budget; go test -json on stdout (make test pipes it into
# scripts/gotest-summary.py). CTRBENCH_BIN names the ctrbench binary. The
# exit status is 0 when every part passed.
#
#  1. The end-to-end tests run one at a time (-p 1: they time real
#     workloads on the machine's cores; they hold with a core busy; their
#     timeout, 45 minutes, is for a hang, not the budget). Beside them, at
#     a lower priority, on the core they leave idle most of the time:
#     make vet lint; Docker Engine 28 built (scripts/docker-engine.sh
#     build: once, from the Go module proxy; a few minutes on a fresh
#     machine) and the tests of what depends on the engine run on it (an
#     emulated machine's engine, scripts/engine-tests.sh), with its classic
#     image store and then with containerd's — those it names as its own
#     run there only (the end-to-end run skips them; make test-full runs
#     them on the machine's engine too); then the packages that make
#     nothing the end-to-end tests look at (QUIET below), in a temporary
#     directory of their own; and the test binaries of the rest are built.
#     Kubernetes is built meanwhile at the lowest priority (scripts/k8s.sh
#     build: once, from the Go module proxy; 5 to 8 minutes of both cores
#     on a fresh machine).
#  2. Then the rest, two at a time, the slowest first (their timeout, 8
#     minutes, fails a package that hangs soon enough to keep CI within
#     its budget).
#  3. Then the Kubernetes tests (K8S below, and the end-to-end tests of
#     `ctrbench run` on the cluster, e2e TestKubernetes*, at once) on a
#     four-node test cluster of their own, up for them alone and down
#     after (scripts/k8s-test.sh): no other test runs while its kubelets
#     are.
#  The logs of what ran beside the end-to-end tests are kept apart and
#  printed in turn.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${CTRBENCH_BIN:?CTRBENCH_BIN names the ctrbench binary}"
export CTRBENCH_BIN
ENGINE="bash scripts/docker-engine.sh"

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# The packages whose tests make nothing the end-to-end tests look at (no
# instance, network, cgroup, engine object or package of the machine;
# workloads' run host processes of their own): they run beside them. A
# package not named here runs after them.
QUIET="advice analysis archtest artifact browser cli delayline figure hdr htmlreport invocation
	outputs physics plan platform report result schedule spec stats store subnets tailbuf
	telemetry userkinds vminit vocab workload workloads"
quiet=$(for p in $QUIET; do echo "./internal/$p"; done | xargs "$GO" list)
# What Docker Engine 28's legs run alone: the end-to-end tests' pattern,
# then packages.
only=$(bash scripts/engine-tests.sh --only)
onlyE2E=$(head -1 <<<"$only")
onlyPkgs=$(tail -n +2 <<<"$only" | xargs "$GO" list)
# The rest after the end-to-end tests: the slowest first, so that two at
# a time end together.
slow=$("$GO" list ./internal/campaign ./internal/platform/podman ./internal/netlab ./internal/buildtest)
# The Kubernetes tests, on the test cluster, last.
K8S="./internal/kube ./internal/platform/kubernetes"
k8s=$("$GO" list $K8S)
rest="$slow $("$GO" list ./... | grep -v '/e2e$' | grep -vxF "$slow" | grep -vxF "$quiet" | grep -vxF "$onlyPkgs" | grep -vxF "$k8s")"

# Docker Engine 28's legs: the tests of what depends on the engine, on
# Docker Engine 28 (an emulated machine: its own network and mount
# namespaces, so nothing of theirs meets the end-to-end tests'), with its
# classic image store and then with containerd's.
legs() {
	$ENGINE build >"$logs/build" 2>&1 || { echo "Docker Engine 28 was not built: its tests did not run" >"$logs/d"; return 1; }
	local rc=0
	$ENGINE run -- bash scripts/engine-tests.sh >"$logs/d" 2>&1 || rc=1
	$ENGINE run --store containerd -- bash scripts/engine-tests.sh containerd >"$logs/c" 2>&1 || rc=1
	return $rc
}
# The quiet packages, in a temporary directory of their own (the end-to-end
# tests look for what ctrbench leaves in the machine's); then the rest's
# test binaries, built.
quietTests() {
	local rc=0 tmp
	tmp=$(mktemp -d /tmp/ctbq-tmp.XXXXXX)
	# shellcheck disable=SC2086 # one argument per package
	mkdir -p "$logs/bin"
	TMPDIR=$tmp "$GO" test -json -count=1 -p 2 -timeout 8m $quiet >"$logs/q" 2>&1 || rc=1
	rm -rf "$tmp"
	# shellcheck disable=SC2086
	"$GO" test -c -o "$logs/bin/" $rest >"$logs/compile" 2>&1
	return $rc
}
# At a low priority: they take the core the end-to-end tests leave idle,
# not the one they use.
(renice -n 10 -p $BASHPID >/dev/null && { legs; l=$?; quietTests; q=$?; [ $l -eq 0 ] && [ $q -eq 0 ]; }) &
beside=$!
# Kubernetes, built at the lowest priority from the start (once per
# machine; cached after; make test began it before its installs, and this
# waits for that one): it takes what CPU the others leave.
(renice -n 19 -p $BASHPID >/dev/null && bash scripts/k8s.sh build >"$logs/k8sbuild" 2>&1 ||
	echo "Kubernetes was not built: its tests fail" >>"$logs/k8sbuild") &
k8sbuild=$!
# go vet and staticcheck and gofmt (make vet lint) beside them.
nice -n 10 make --no-print-directory vet lint >"$logs/lint" 2>&1 &
lint=$!

"$GO" test -json -count=1 -p 1 -timeout 45m -skip "^($onlyE2E)\$" ./e2e
e2e=$?

wait "$lint"
linted=$?
if [ $linted -ne 0 ]; then
	echo "make vet lint failed:" >&2
	cat "$logs/lint" >&2
fi
wait "$beside"
besides=$?

# shellcheck disable=SC2086 # one argument per package
"$GO" test -json -count=1 -p 2 -timeout 8m $rest >"$logs/o" 2>&1
other=$?

wait "$k8sbuild"
# shellcheck disable=SC2086 # one argument per package
bash scripts/k8s-test.sh $K8S >"$logs/k" 2>"$logs/kstderr"
kube=$?

cat "$logs/build" /tmp/ctrbench-k8s-build.log "$logs/k8sbuild" "$logs/kstderr" >&2 2>/dev/null
rm -f /tmp/ctrbench-k8s-build.log
cat "$logs/q" "$logs/o" "$logs/d" "$logs/c" "$logs/k" 2>/dev/null
[ $linted -ne 0 ] && echo "make vet lint failed (its output is above the tests')" >&2
[ $e2e -eq 0 ] && [ $other -eq 0 ] && [ $besides -eq 0 ] && [ $linted -eq 0 ] && [ $kube -eq 0 ]
