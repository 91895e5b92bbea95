#!/usr/bin/env bash
# engine-tests.sh: the tests of what depends on the Docker Engine, run
# again on another engine — inside scripts/docker-engine.sh's emulated
# machine, by `make test`:
#
#   scripts/docker-engine.sh run [--store containerd] -- scripts/engine-tests.sh [containerd]
#
# go test -json on stdout (make test pipes it into scripts/gotest-summary.py);
# CTRBENCH_BIN names the ctrbench binary. The exit status is the first
# failing go test's.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

# What depends on the engine: its networks and firewall (routed and
# nat-unprotected, direct access from ctrbench's other bridges, published
# ports), capabilities (nested parents), saving and loading images (nested
# parents, podman, users' images), its image store; and every address
# configured, checked against the pool; a virtual machine with an engine
# inside, and a user's swarm reached through its manager's engine. ONLY
# runs here alone in make test
# (scripts/test.sh skips it on the machine's engine; make test-full runs
# it there too): Docker Engine 28 is the engine users run; the machine's
# older engine runs the same code through every other end-to-end test.
# BOTH runs on both engines (quick, or, for the addresses, a check of
# everything the run configured). PKGS run here alone in make test too:
# the engine's, and the platforms built on it (Docker,
# nested parents, swarm nodes), and the virtual machines' (which run an
# engine inside too): their conformance suites, here on an engine whose
# machine is its own, so they run beside the machine's end-to-end tests.
ONLY='TestVMAndContainersAcrossBridges|TestNestedWiredByLab|TestNestedParentLimit|TestPublishedPorts|TestExecEverywhere|TestVMWithEngineInside|TestSwarmDockerHost'
BOTH='TestMachineEngineFound|TestGatewayModes|TestImageStore|TestZZAddressesInPool'
PKGS=(./internal/engine ./internal/platform/docker ./internal/platform/nested ./internal/platform/swarm ./internal/platform/vm)
# scripts/test.sh asks what runs here alone (the end-to-end tests'
# pattern, then the packages, one per line).
if [ "${1:-}" = --only ]; then
	printf '%s\n' "$ONLY" "${PKGS[@]}"
	exit 0
fi
E2E="$BOTH|$ONLY"
# With containerd's image store: what saves and loads images (the agent's
# into a nested parent, a user's from the engine); TestImageStore above
# builds the agent's in it.
if [ "${1:-}" = containerd ]; then
	E2E='TestMachineEngineFound|TestNestedHostParentLeavesTheMachineAlone|TestOwnImageFromEngine|TestZZAddressesInPool'
	PKGS=()
fi

# Each package's name says which engine it ran on, so the summary's lines
# and its recap of failures tell the two runs of a test apart.
engine=$(docker version --format 'docker {{.Server.Version}}' 2>/dev/null || echo 'docker ?')
label() { sed -u "s#\"Package\":\"\([^\"]*\)\"#\"Package\":\"\1 [$engine, ${1:-overlay2}]\"#g"; }

# A temporary directory of their own: make test runs them beside the
# machine's end-to-end tests, whose checks look at the machine's.
TMPDIR=$(mktemp -d /tmp/ctbe-tmp.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

rc=0
"$GO" test -json -count=1 -p 1 -timeout 10m -run "$E2E" ./e2e | label "${1:-}" || rc=$?
if [ ${#PKGS[@]} -gt 0 ]; then
	"$GO" test -json -count=1 -p 1 -timeout 8m "${PKGS[@]}" | label "${1:-}" || { r=$?; [ $rc -eq 0 ] && rc=$r; }
fi
exit $rc
