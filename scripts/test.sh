#!/usr/bin/env bash
# test.sh: make test's tests, in the order that keeps CI within its
# budget; go test -json on stdout (make test pipes it into
# scripts/gotest-summary.py). CTRBENCH_BIN names the ctrbench binary. The
# exit status is 0 when every part passed.
#
#  1. Docker Engine 28 is built (scripts/docker-engine.sh build: once, from
#     the Go module proxy; a few minutes on a fresh machine) in the
#     background at the lowest priority, and make lint runs, while
#  2. the end-to-end tests run one at a time (-p 1: they time real
#     workloads on the machine's cores; they hold with a core busy). About
#     16 minutes on CI's machine; 28 and more on a slower one with a core
#     busy, so their timeout (45 minutes) is for a hang, not the budget.
#  3. Then, side by side, the other packages two at a time, and the tests
#     of what depends on the engine again on Docker Engine 28 (run as an
#     emulated machine's engine, scripts/engine-tests.sh), with its classic
#     image store and then with containerd's. Their logs are kept apart
#     and printed in turn. The other packages' timeout is 8 minutes: a
#     package that hangs fails soon enough to keep CI within its budget.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${CTRBENCH_BIN:?CTRBENCH_BIN names the ctrbench binary}"
export CTRBENCH_BIN
ENGINE="bash scripts/docker-engine.sh"

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

nice -n 19 $ENGINE build >"$logs/build" 2>&1 &
build=$!
# staticcheck and gofmt (make lint) beside them, on the core the
# end-to-end tests leave idle most of the time.
nice -n 10 make --no-print-directory lint >"$logs/lint" 2>&1 &
lint=$!

"$GO" test -json -count=1 -p 1 -timeout 45m ./e2e
e2e=$?

wait "$build"
built=$?
cat "$logs/build" >&2
wait "$lint"
linted=$?
if [ $linted -ne 0 ]; then
	echo "make lint failed:" >&2
	cat "$logs/lint" >&2
fi

legs() {
	[ "$built" -eq 0 ] || { echo "Docker Engine 28 was not built: its tests did not run" >"$logs/d"; return 1; }
	local rc=0
	$ENGINE run -- bash scripts/engine-tests.sh >"$logs/d" 2>&1 || rc=1
	$ENGINE run --store containerd -- bash scripts/engine-tests.sh containerd >"$logs/c" 2>&1 || rc=1
	return $rc
}
legs &
docker28=$!

# The slowest packages first (slowest first), so that two at a time end
# together.
slow="nested swarm docker vm podman"
others=$(for p in $slow; do echo ./internal/platform/$p; done
	echo ./internal/workloads ./internal/schedule ./internal/netlab
	"$GO" list ./... | grep -v '/e2e$' | grep -vE "/platform/(${slow// /|})$|/(workloads|schedule|netlab)$")
# shellcheck disable=SC2086 # one argument per package
"$GO" test -json -count=1 -p 2 -timeout 8m $others >"$logs/o" 2>&1
other=$?
wait "$docker28"
d28=$?

cat "$logs/o" "$logs/d" "$logs/c" 2>/dev/null
[ $linted -ne 0 ] && echo "make lint failed (its output is above the tests')" >&2
[ $e2e -eq 0 ] && [ $other -eq 0 ] && [ $d28 -eq 0 ] && [ $linted -eq 0 ]
