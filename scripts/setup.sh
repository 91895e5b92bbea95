#!/usr/bin/env bash
# Installs what ctrbench needs on Debian/Ubuntu and starts dockerd when none answers.
# Idempotent: safe to run again; installs only what is missing.
#
# The machine's Docker Engine is used as it is: when one answers, its
# packages, its daemon.json and the way it was started are left alone, and
# Debian's docker.io is installed only where no engine answers and none is
# installed. An install that would remove or downgrade a package of an
# installed engine (docker-ce, moby-engine, containerd.io…) is refused,
# with what apt would have done.
set -euo pipefail

log() { printf 'setup: %s\n' "$*" >&2; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		log "must run as root (installs packages, starts dockerd)"
		exit 1
	fi
}

# Packages and the command each provides; only missing commands trigger an install.
PKGS=(
	"ip:iproute2"
	"gcc:gcc"
	"iperf3:iperf3"
	"sysbench:sysbench"
	"fio:fio"
	"bonnie++:bonnie++"
	"pbzip2:pbzip2"
	"sockperf:sockperf"
	"wrk:wrk"
	"/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h:libopenblas-dev"
	"/usr/lib/x86_64-linux-gnu/libgomp.so.1:libgomp1"
	"chromium:chromium"
	"ovs-vsctl:openvswitch-switch"
	"podman:podman"
	"crun:crun"
	"lxc-execute:lxc"
	"qemu-system-x86_64:qemu-system-x86"
	"mkfs.ext4:e2fsprogs"
	"/boot/vmlinuz-*-cloud-amd64:linux-image-cloud-amd64"
	# Real servers nobody here wrote, for users' services in the tests and
	# in experiments/own-service.yaml (scripts/images.sh packs them).
	"/usr/sbin/nginx:nginx-light"
	"redis-server:redis-server"
	"redis-benchmark:redis-tools"
	"/bin/busybox:busybox-static"
	"skopeo:skopeo"
	# SQLite's own shell: the tests hold a results file's lock with it, as
	# a user's shell left in a transaction does.
	"sqlite3:sqlite3"
	# Readers of ctrbench's exports nobody here wrote: the Prometheus
	# client's OpenMetrics parser, a JUnit XML parser, a JSON Schema
	# validator (docs/schema).
	"/usr/lib/python3/dist-packages/prometheus_client/openmetrics/parser.py:python3-prometheus-client"
	"/usr/lib/python3/dist-packages/junitparser/__init__.py:python3-junitparser"
	"/usr/lib/python3/dist-packages/jsonschema/__init__.py:python3-jsonschema"
)

missing_pkgs() {
	local out=() entry cmd pkg
	for entry in "${PKGS[@]}"; do
		cmd=${entry%%:*}
		pkg=${entry#*:}
		# An entry is a command in PATH, or an absolute path of a file the
		# package installs (libraries and headers).
		if [[ $cmd == /* ]]; then
			# shellcheck disable=SC2086
			compgen -G $cmd >/dev/null || out+=("$pkg")
		else
			command -v "$cmd" >/dev/null 2>&1 || out+=("$pkg")
		fi
	done
	echo "${out[@]:-}"
}

install_pkgs() {
	local pkgs
	pkgs=$(missing_pkgs)
	if [ -z "$pkgs" ]; then
		log "packages present"
		return
	fi
	log "installing: $pkgs"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# Servers' packages start their service when installed (nginx on port
	# 80, redis on 6379): a policy of "no" keeps anything from running
	# that ctrbench did not start.
	local policy=/usr/sbin/policy-rc.d made=""
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\nexit 101\n' >$policy
		chmod 755 $policy
		made=1
	fi
	# shellcheck disable=SC2086
	refuse_removals $pkgs
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
	if [ -n "$made" ]; then rm -f $policy; fi
}

# refuse_removals stops setup when installing the packages would remove or
# downgrade an installed one (apt's simulation says "Remv" or "Inst … [old]"
# with an older version): an engine installed from Docker's repository
# conflicts with Debian's docker.io, containerd and runc.
refuse_removals() {
	local sim kind pkg rest old new bad=()
	sim=$(apt-get install -s --no-install-recommends "$@" 2>&1) || {
		log "apt cannot install $*:"
		printf '%s\n' "$sim" | tail -n 5 >&2
		exit 1
	}
	while read -r kind pkg rest; do
		case $kind in
		Remv) bad+=("removes $pkg") ;;
		Inst)
			# "Inst pkg [old] (new …)": an installed package replaced.
			[[ $rest == \[* ]] || continue
			old=${rest%%]*} old=${old#[}
			new=${rest#*(} new=${new%% *}
			if dpkg --compare-versions "$new" lt "$old"; then
				bad+=("downgrades $pkg from $old to $new")
			fi
			;;
		esac
	done <<<"$sim"
	if [ ${#bad[@]} -gt 0 ]; then
		log "refusing to install $*: apt would change what is installed:"
		printf '  %s\n' "${bad[@]}" >&2
		log "setup never removes or downgrades a package: install the missing tools another way, or start the machine's Docker Engine so that docker.io is not needed"
		exit 1
	fi
}

docker_answers() {
	timeout 5 docker version >/dev/null 2>&1 ||
		timeout 5 curl -fsS --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1
}

# stale_pidfile FILE PROGRAM removes FILE unless the pid in it is a
# running PROGRAM (a killed one that nobody reaped is a zombie: gone).
stale_pidfile() {
	[ -f "$1" ] || return 0
	pid=$(cat "$1" 2>/dev/null || true)
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
	if [ -z "$pid" ] || [ "$state" = Z ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "$2" ]; then
		log "removing $1: no $2 runs as pid ${pid:-?} (left by one that was killed)"
		rm -f "$1"
	fi
}

# engine_installed names an installed Docker Engine package, "" when none.
engine_installed() {
	local p
	for p in docker-ce moby-engine docker.io docker-engine; do
		if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			echo "$p"
			return
		fi
	done
}

# use_engine: an engine that answers is the machine's, used as it is; one
# installed but not running is started as its package installs it; Debian's
# docker.io is installed only where there is none at all.
use_engine() {
	if docker_answers; then
		log "a Docker Engine answers ($(docker version --format '{{.Server.Version}}, API {{.Server.APIVersion}}' 2>/dev/null || echo 'version unknown')): using it, its packages and configuration left alone"
		return
	fi
	if ! command -v dockerd >/dev/null 2>&1; then
		local pkg
		pkg=$(engine_installed)
		if [ -n "$pkg" ]; then
			log "the package $pkg is installed but no dockerd is on PATH and no engine answers: start your engine, then run make setup again"
			exit 1
		fi
		log "no Docker Engine here: installing Debian's docker.io"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		refuse_removals docker.io
		apt-get install -y -qq --no-install-recommends docker.io >/dev/null
		INSTALLED_ENGINE=1
	fi
	start_dockerd
}

start_dockerd() {
	if docker_answers; then
		log "dockerd answers"
		return
	fi
	log "starting dockerd"
	# A dockerd that was killed leaves its pid file, and its containerd's:
	# a new dockerd refuses to start while the first names a live process,
	# and waits in vain for a containerd the second names (a pid since
	# reused by another program). Remove each whose process is not the
	# program it names.
	stale_pidfile /var/run/docker.pid dockerd
	stale_pidfile /var/run/docker/containerd/containerd.pid containerd
	# setsid: the daemon must outlive this script and the shell that ran it.
	setsid dockerd >/var/log/dockerd.log 2>&1 </dev/null &
	for _ in $(seq 1 60); do
		if docker_answers; then
			log "dockerd up"
			return
		fi
		sleep 0.5
	done
	log "dockerd did not answer within 30 s; see /var/log/dockerd.log"
	tail -n 20 /var/log/dockerd.log >&2 || true
	exit 1
}

# register_crun tells the Docker Engine about crun (the runtime factor's
# second level) only when this script installed the engine: an engine that
# was here before is the user's, and so is its daemon.json; setup then
# says how to register crun (the documented way: a "runtimes" entry in
# daemon.json, which dockerd reloads on SIGHUP; removing it and sending
# SIGHUP again undoes it).
register_crun() {
	local conf=/etc/docker/daemon.json crun
	crun=$(command -v crun) || return 0
	if [ -z "${INSTALLED_ENGINE:-}" ] || [ -e "$conf" ]; then
		if ! grep -qs '"crun"' "$conf"; then
			log "note: the Docker Engine has no crun runtime (the runtime factor's second level); to add it: put \"runtimes\": {\"crun\": {\"path\": \"$crun\"}} in $conf and send dockerd SIGHUP (remove it and SIGHUP again to undo)"
		fi
		return 0
	fi
	mkdir -p /etc/docker
	printf '{\n  "runtimes": {"crun": {"path": "%s"}}\n}\n' "$crun" >"$conf"
	log "registered crun with the Docker Engine setup installed ($conf; remove the file and send dockerd SIGHUP to undo)"
	# A running daemon reloads its runtimes on SIGHUP.
	pkill -HUP -x dockerd || true
}

need_root
use_engine
install_pkgs
register_crun
