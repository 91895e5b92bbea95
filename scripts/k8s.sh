#!/usr/bin/env bash
# k8s.sh: a real Kubernetes of a pinned version, built offline from
# the Go module proxy and Debian's packages, for the kubernetes platform's
# tests (issue 41; ../shared/KUBERNETES-OFFLINE.md is the recipe it follows).
#
#   scripts/k8s.sh build     build the cluster's binaries once (cached)
#   scripts/k8s.sh up [--nodes N] [--proxy-mode iptables|nftables[,…]] [--cni bridge|ptp[,…]]
#                            start a cluster of N nodes (2 by default)
#   scripts/k8s.sh load IMAGE…  copy images from the machine's Docker Engine
#                            into every node's containerd (as kind load does)
#   scripts/k8s.sh status    what runs; the kubeconfig to use
#   scripts/k8s.sh down      stop it and remove everything it made (also
#                            what a killed up left)
#   scripts/k8s.sh restart N containerd|kubelet
#                            start node N's daemon again after it was killed
#   scripts/k8s.sh version   the version it builds
#   scripts/k8s.sh kubectl-path  where the kubectl it built is
#
# The cluster (scripts/k8s-cluster.sh does the work): etcd and the control
# plane run on the machine, the API server on the node network's gateway
# address; each node is a network namespace (ctrbench-k8s-nodeN: not ctb…,
# which `ctrbench clean` would take for a leftover of its own) with a
# mount namespace of its own, its own containerd, kubelet and kube-proxy,
# and a cgroup (ctrbench-k8s-nodeN) pinned to a core of its own where the
# machine has one per node. The nodes' eth0 are ports of the machine's
# bridge ctrk8s0, the emulated underlay between them. Every address comes
# from ctrbench's subnet pool (`ctrbench subnets`): nodes 198.18.240.0/24,
# Services 198.18.241.0/24, pods 198.18.244.0/22 by default. The kubelet's
# three host sysctls are saved before it starts and restored by down.
#
# What build makes, in $CACHE (/var/cache/ctrbench/kubernetes/<version>):
#   bin/kube-apiserver kube-controller-manager kube-scheduler kubelet
#       kube-proxy kubectl   static, CGO_ENABLED=0, from k8s.io/kubernetes at
#                            VERSION with its staging modules pinned by a
#                            replace block (the module's zip has no staging/)
#   bin/etcd bin/etcdctl     Debian's etcd-server and etcd-client, unpacked
#                            (not installed: no service is registered)
#   bin/nft                  Debian's nftables' nft, unpacked: kube-proxy's
#                            nftables mode execs it
#   bin/registry             Debian's docker-registry, unpacked: the
#                            kubernetes platform's --registry test runs it
#   pause/pause              the module's pause.c, static (the pods' sandbox)
# Nothing is installed on the machine; the build's own Go cache (about
# 3.6 GB) is removed after it. The first build took 5 to 8 minutes here
# (304 s and 470 s, two cores).
set -euo pipefail

VERSION=${KUBERNETES_VERSION:-v1.34.4}
STAGING=v0.${VERSION#v1.}
CACHE=${CTRBENCH_CACHE:-/var/cache/ctrbench}/kubernetes/$VERSION
BIN=$CACHE/bin
CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
# The k8s.io modules kubernetes' own go.mod requires at v0.0.0 and
# replaces with its staging tree: here, the proxy's release of each.
STAGED=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
	cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
	cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
	kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
	mount-utils pod-security-admission sample-apiserver)

log() { printf 'k8s: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

built() {
	local c
	for c in "${CMDS[@]}"; do
		[ -x "$BIN/$c" ] || return 1
	done
	[ -x "$BIN/etcd" ] && [ -x "$BIN/nft" ] && [ -x "$CACHE/pause/pause" ] &&
		"$BIN/kubelet" --version 2>/dev/null | grep -qx "Kubernetes $VERSION"
}

# module writes the wrapper module that builds kubernetes' commands with
# upstream's dependency set: the staging modules at the matching release.
module() {
	local src=$1 m
	{
		echo "module ctrbench.local/k8sbuild"
		echo
		echo "go 1.24.0"
		echo
		echo "godebug default=go1.24"
		echo
		echo "require k8s.io/kubernetes $VERSION"
		echo
		echo "replace ("
		for m in "${STAGED[@]}"; do
			echo "	k8s.io/$m => k8s.io/$m $STAGING"
		done
		echo ")"
	} >"$src/go.mod"
	{
		echo "//go:build tools"
		echo
		echo "package tools"
		echo
		echo "import ("
		for m in "${CMDS[@]}"; do
			echo "	_ \"k8s.io/kubernetes/cmd/$m\""
		done
		echo ")"
	} >"$src/tools.go"
}

# debs unpacks Debian's packages the cluster needs into $CACHE/debs,
# without installing them.
debs() {
	local d=$CACHE/debs p
	mkdir -p "$d/root"
	for p in etcd-server etcd-client nftables docker-registry; do
		ls "$d"/"$p"_*.deb >/dev/null 2>&1 || (cd "$d" && apt-get download -o APT::Sandbox::User=root "$p" >/dev/null) ||
			die "apt-get download $p failed"
		dpkg-deb -x "$(ls "$d"/"$p"_*.deb | head -1)" "$d/root"
	done
	install -m 0755 "$d/root/usr/bin/etcd" "$BIN/etcd"
	install -m 0755 "$d/root/usr/bin/etcdctl" "$BIN/etcdctl"
	install -m 0755 "$d/root/usr/sbin/nft" "$BIN/nft"
	install -m 0755 "$d/root/usr/bin/docker-registry" "$BIN/registry"
}

build() {
	# One build at a time: a second waits for the first (make test starts
	# one in the background before its installs, scripts/test.sh asks
	# again before the Kubernetes tests).
	mkdir -p "$CACHE"
	exec 9>"$CACHE.lock"
	flock 9
	if built; then
		# Debian's docker-registry joined the build later: unpacked into
		# a cache that lacks it.
		[ -x "$BIN/registry" ] || debs
		log "Kubernetes $VERSION built already ($BIN)"
		return
	fi
	command -v go >/dev/null || die "go is not installed: Kubernetes is built with it"
	local start src ld c dir
	start=$(date +%s)
	log "building Kubernetes $VERSION from the Go module proxy (5 to 8 minutes here, once)"
	src=$CACHE/src
	mkdir -p "$src" "$BIN" "$CACHE/pause"
	module "$src"
	(cd "$src" && go mod tidy) >"$CACHE/build.log" 2>&1 ||
		{ tail -n 20 "$CACHE/build.log" >&2; die "go mod tidy failed (log: $CACHE/build.log)"; }
	ld="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld="$ld -X $p.gitVersion=$VERSION -X $p.gitMajor=1 -X $p.gitMinor=$(cut -d. -f2 <<<"$VERSION") -X $p.gitTreeState=clean"
	done
	# A build cache of its own (about 3.6 GB), removed once the binaries
	# are made: the machine's Go cache does not grow.
	export GOCACHE=$CACHE/gocache
	# One go build for every command: their packages compile once, in
	# parallel, and their links overlap.
	local pkgs=()
	for c in "${CMDS[@]}"; do
		pkgs+=("k8s.io/kubernetes/cmd/$c")
	done
	log "building ${CMDS[*]}"
	(cd "$src" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ld" -o "$BIN/" "${pkgs[@]}") >>"$CACHE/build.log" 2>&1 ||
		{ tail -n 20 "$CACHE/build.log" >&2; die "building ${CMDS[*]} failed (log: $CACHE/build.log)"; }
	dir=$(cd "$src" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
	gcc -Os -Wall -Werror -static -DVERSION="$VERSION-ctrbench" -o "$CACHE/pause/pause" "$dir/build/pause/linux/pause.c" ||
		die "compiling pause.c failed"
	debs
	rm -rf "$GOCACHE" "$src"
	built || die "the binaries built do not say Kubernetes $VERSION"
	log "built Kubernetes $VERSION in $(($(date +%s) - start)) s ($BIN)"
}

case "${1:-}" in
build) build ;;
version) echo "$VERSION" ;;
kubectl-path) echo "$BIN/kubectl" ;;
up | down | status | load | restart)
	# shellcheck source=scripts/k8s-cluster.sh
	. "$(dirname "$0")/k8s-cluster.sh"
	cmd=$1
	shift
	"cluster_$cmd" "$@"
	;;
*) die "usage: $0 build|up|load|status|down|restart|version|kubectl-path" ;;
esac
