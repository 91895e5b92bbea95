#!/usr/bin/env bash
# docker-engine.sh: a Docker Engine of a pinned version, built from the Go
# module proxy, run as the engine of an emulated machine — so ctrbench is
# tested on the engine its users run without touching the machine's own.
#
#   scripts/docker-engine.sh build             build dockerd and docker-proxy once (cached)
#   scripts/docker-engine.sh run [--store S] -- CMD [ARGS…]
#                                              run CMD on a machine whose engine is this one
#   scripts/docker-engine.sh restart STORE     (inside the machine) restart its engine
#                                              with image store overlay2 or containerd
#   scripts/docker-engine.sh down              end what a killed run left
#   scripts/docker-engine.sh version           the version it builds
#
# The emulated machine is a network namespace (ctrbench-docker<major>: not
# ctb…, which `ctrbench clean` would take for a leftover of its own) and a mount
# namespace of their own. In them the engine is what a machine with this
# Docker Engine installed has: its dockerd and docker-proxy at Debian's
# paths (/usr/sbin), its socket at /var/run/docker.sock, its data root at
# /var/lib/docker, its daemon.json at /etc/docker, a /run of its own, and
# IPv4 forwarding off until the engine turns it on (so it sets FORWARD's
# policy as it does on a fresh machine). containerd, runc and everything
# else are the machine's. CMD runs there: ctrbench, go test, docker.
#
# --store overlay2|containerd picks the engine's image store (the
# containerd-snapshotter feature). CMD finds the command that restarts the
# engine with another store in CTRBENCH_ENGINE_RESTART (ctrbench's
# image_store factor uses it). Nothing of the machine's engine, its
# packages, its configuration or its iptables is touched; the namespace has
# no link out. The engine's default bridge and address pools are in
# RFC 5737's documentation ranges (never routed), outside ctrbench's pool.
set -euo pipefail

VERSION=${DOCKER_ENGINE_VERSION:-28.2.2}
CACHE=${CTRBENCH_CACHE:-/var/cache/ctrbench}/docker-engine/$VERSION
BIN=$CACHE/bin
NS=ctrbench-docker${VERSION%%.*}
STATE=/var/lib/ctrbench/docker-engine-$VERSION
MODULE=github.com/docker/docker

log() { printf 'docker-engine: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

built() {
	[ -x "$BIN/dockerd" ] && [ -x "$BIN/docker-proxy" ] &&
		"$BIN/dockerd" --version 2>/dev/null | grep -q "version $VERSION,"
}

# build compiles dockerd and docker-proxy of $VERSION from the module
# proxy's copy of the repository: its vendor.mod and vendor.sum are the
# go.mod and go.sum that pin every dependency, as upstream's build does.
build() {
	if built; then
		log "dockerd $VERSION built already ($BIN)"
		return
	fi
	command -v go >/dev/null || die "go is not installed: the engine is built with it"
	local start src dir
	start=$(date +%s)
	log "building Docker Engine $VERSION from the Go module proxy (a few minutes, once)"
	dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$MODULE@v$VERSION+incompatible" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
	[ -n "$dir" ] && [ -f "$dir/vendor.mod" ] || die "the module proxy has no $MODULE v$VERSION with a vendor.mod"
	src=$CACHE/src
	rm -rf "$src"
	mkdir -p "$src" "$BIN"
	cp -r "$dir"/. "$src"
	chmod -R u+w "$src"
	rm -rf "$src/vendor"
	cp "$src/vendor.mod" "$src/go.mod"
	cp "$src/vendor.sum" "$src/go.sum"
	local ld="-s -w -X $MODULE/dockerversion.Version=$VERSION -X $MODULE/dockerversion.GitCommit=v$VERSION-modproxy"
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath \
		-tags 'netgo osusergo static_build exclude_graphdriver_btrfs' -ldflags "$ld" \
		-o "$BIN/dockerd" ./cmd/dockerd) >"$CACHE/build.log" 2>&1 ||
		{ tail -n 20 "$CACHE/build.log" >&2; die "building dockerd failed (log: $CACHE/build.log)"; }
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' \
		-o "$BIN/docker-proxy" ./cmd/docker-proxy) >>"$CACHE/build.log" 2>&1 ||
		die "building docker-proxy failed (log: $CACHE/build.log)"
	rm -rf "$src"
	log "built dockerd $VERSION in $(($(date +%s) - start)) s ($BIN)"
}

# down ends every process in the emulated machine's namespace and removes
# the namespace and the engine's state.
down() {
	if [ -e "/run/netns/$NS" ]; then
		local ino sig
		ino=$(stat -L -c %i "/run/netns/$NS")
		for sig in TERM KILL; do
			in_ns "$ino" | xargs -r kill -s $sig 2>/dev/null || true
			for _ in $(seq 1 50); do
				[ -z "$(in_ns "$ino")" ] && break 2
				sleep 0.2
			done
		done
		ip netns delete "$NS" 2>/dev/null || true
		log "removed the emulated machine's namespace $NS"
	fi
	rm -rf "$STATE"
}

# in_ns lists the processes whose network namespace has inode $1.
in_ns() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(stat -L -c %i "$p/ns/net" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
	done
	return 0
}

# lock takes the machine's lock for the rest of this process, or stops:
# one run at a time (down would end another's).
lock() {
	exec 9>"/run/ctrbench-docker-engine-$VERSION.lock"
	flock -n 9 || die "another run of the Docker $VERSION machine ($NS) is under way; wait for it, or end it and run '$0 down'"
}

# inner runs inside the machine's namespaces: the engine's files in place,
# the engine started, CMD run, the engine stopped.
inner() {
	local store=$1
	shift
	# /sys of this network namespace (LXC finds a bridge by
	# /sys/class/net/<name>/bridge), the machine's cgroup tree kept.
	mkdir -p /tmp/ctbe-cgroup
	mount --rbind /sys/fs/cgroup /tmp/ctbe-cgroup
	mount -t sysfs sysfs /sys
	mount --move /tmp/ctbe-cgroup /sys/fs/cgroup
	rmdir /tmp/ctbe-cgroup
	mount -t tmpfs -o mode=755 ctbe-run /run
	mkdir -p /run/lock
	# Open vSwitch of its own, as a machine has: its database and logs
	# (ctrbench starts it when a cell needs it).
	local d
	for d in /etc/openvswitch /var/lib/openvswitch /var/log/openvswitch; do
		[ -d "$d" ] && mount -t tmpfs -o mode=755 ctbe-ovs "$d"
	done
	mount --bind "$BIN/dockerd" /usr/sbin/dockerd
	mount --bind "$BIN/docker-proxy" /usr/sbin/docker-proxy
	mkdir -p "$STATE/data" "$STATE/etc"
	mount --bind "$STATE/data" /var/lib/docker
	write_config "$store"
	mount --bind "$STATE/etc" /etc/docker
	start_engine
	log "Docker Engine $VERSION answers in $NS (image store $store, FORWARD policy $(iptables -w -S FORWARD | sed -n 's/^-P FORWARD //p'))"
	local rc=0
	env -u DOCKER_HOST -u DOCKER_CONTEXT CTRBENCH_ENGINE_RESTART="$(readlink -f "$0") restart" "$@" 9>&- || rc=$?
	stop_engine
	return $rc
}

# write_config writes the engine's daemon.json with image store $1.
write_config() {
	local snap=false
	[ "$1" = containerd ] && snap=true
	cat >"$STATE/etc/daemon.json" <<EOF
{
  "bip": "203.0.113.1/24",
  "default-address-pools": [{"base": "198.51.100.0/24", "size": 28}],
  "features": {"containerd-snapshotter": $snap}
}
EOF
}

# start_engine starts dockerd (inside the machine) and waits until it
# answers.
start_engine() {
	setsid /usr/sbin/dockerd >>"$STATE/dockerd.log" 2>&1 </dev/null 9>&- &
	local pid=$!
	echo "$pid" >"$STATE/dockerd.pid"
	for _ in $(seq 1 120); do
		if curl -fsS --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { tail -n 20 "$STATE/dockerd.log" >&2; die "dockerd $VERSION exited"; }
		sleep 0.25
	done
	die "dockerd $VERSION did not answer within 30 s (log: $STATE/dockerd.log)"
}

# stop_engine ends dockerd (inside the machine): SIGTERM, then SIGKILL.
stop_engine() {
	local pid
	pid=$(cat "$STATE/dockerd.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# restart, inside the machine, restarts its engine with image store $1.
restart() {
	[ -n "${CTRBENCH_ENGINE_MACHINE:-}" ] || die "restart: only inside the machine (scripts/docker-engine.sh run -- …)"
	case ${1:-} in overlay2 | containerd) ;; *) die "restart: want overlay2 or containerd" ;; esac
	stop_engine
	write_config "$1"
	start_engine
	log "Docker Engine $VERSION restarted with image store $1"
}

run() {
	local store=overlay2
	while [ $# -gt 0 ]; do
		case $1 in
		--store) store=$2; shift 2 ;;
		--) shift; break ;;
		*) die "run: unknown option $1 (want --store overlay2|containerd, then -- CMD)" ;;
		esac
	done
	case $store in overlay2 | containerd) ;; *) die "--store $store: want overlay2 or containerd" ;; esac
	[ $# -gt 0 ] || die "run: no command (scripts/docker-engine.sh run -- CMD)"
	[ "$(id -u)" = 0 ] || die "must run as root (namespaces, mounts, an engine)"
	built || build
	lock
	down
	mkdir -p "$STATE"
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	# As on a machine where nothing has forwarded yet: the engine turns
	# forwarding on itself, and then sets FORWARD's policy.
	nsenter --net="/run/netns/$NS" sysctl -qw net.ipv4.ip_forward=0
	local rc=0
	trap 'down; exit 130' INT TERM
	nsenter --net="/run/netns/$NS" unshare --mount --propagation private -- \
		env CTRBENCH_ENGINE_MACHINE="$NS" "$0" __inner "$store" "$@" || rc=$?
	trap - INT TERM
	down
	return $rc
}

case ${1:-} in
build) build ;;
run) shift; run "$@" ;;
down) lock; down ;;
version) echo "$VERSION" ;;
restart) shift; restart "$@" ;;
__inner) shift; inner "$@" ;;
*) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
