#!/usr/bin/env bash
# test.sh: make test's tests, in the order that keeps CI within its
# budget; go test -json on stdout (make test pipes it into
# scripts/gotest-summary.py). CTRBENCH_BIN names the ctrbench binary. The
# exit status is 0 when every part passed.
#
#  1. The end-to-end tests run one at a time (-p 1: they time real
#     workloads on the machine's cores; they hold with a core busy; their
#     timeout, 45 minutes, is for a hang, not the budget), while, at a
#     lower priority on the core they leave idle most of the time,
#     make lint runs, and Docker Engine 28 is built (scripts/docker-engine.sh
#     build: once, from the Go module proxy; a few minutes on a fresh
#     machine) and the tests of what depends on the engine run again on
#     it (an emulated machine's engine, scripts/engine-tests.sh), with its
#     classic image store and then with containerd's.
#  2. Then the other packages, two at a time, the slowest first (their
#     timeout, 8 minutes, fails a package that hangs soon enough to keep
#     CI within its budget).
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

# Docker Engine 28's legs: the tests of what depends on the engine, on
# Docker Engine 28 (an emulated machine: its own network and mount
# namespaces, so nothing of theirs meets the end-to-end tests'), with its
# classic image store and then with containerd's. At a low priority: they
# take the core the end-to-end tests leave idle, not the one they use.
legs() {
	$ENGINE build >"$logs/build" 2>&1 || { echo "Docker Engine 28 was not built: its tests did not run" >"$logs/d"; return 1; }
	local rc=0
	$ENGINE run -- bash scripts/engine-tests.sh >"$logs/d" 2>&1 || rc=1
	$ENGINE run --store containerd -- bash scripts/engine-tests.sh containerd >"$logs/c" 2>&1 || rc=1
	return $rc
}
(renice -n 10 -p $BASHPID >/dev/null && legs) &
docker28=$!
# staticcheck and gofmt (make lint) beside them.
nice -n 10 make --no-print-directory lint >"$logs/lint" 2>&1 &
lint=$!

"$GO" test -json -count=1 -p 1 -timeout 45m ./e2e
e2e=$?

wait "$lint"
linted=$?
if [ $linted -ne 0 ]; then
	echo "make lint failed:" >&2
	cat "$logs/lint" >&2
fi

# The slowest packages first, slowest first, so that two at a time end
# together; then the rest.
slow=$("$GO" list ./internal/platform/nested ./internal/platform/swarm ./internal/platform/docker \
	./internal/platform/vm ./internal/platform/podman ./internal/workloads ./internal/schedule ./internal/netlab)
others="$slow $("$GO" list ./... | grep -v '/e2e$' | grep -vxF "$slow")"
# shellcheck disable=SC2086 # one argument per package
"$GO" test -json -count=1 -p 2 -timeout 8m $others >"$logs/o" 2>&1
other=$?
wait "$docker28"
d28=$?

cat "$logs/build" >&2
cat "$logs/o" "$logs/d" "$logs/c" 2>/dev/null
[ $linted -ne 0 ] && echo "make lint failed (its output is above the tests')" >&2
[ $e2e -eq 0 ] && [ $other -eq 0 ] && [ $d28 -eq 0 ] && [ $linted -eq 0 ]
