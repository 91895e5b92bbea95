#!/usr/bin/env bash
# Builds the example images of "your own service as a workload" — busybox
# httpd, nginx, redis — FROM scratch out of the Debian packages installed on
# this machine, because no image registry may be reachable (here none is),
# and myjob, a benchmark of "yours" (examples/myjob, built with Go).
# Each is written as a `docker save` archive, httpd also as an OCI archive, so
# tests and experiments/own-service.yaml have both formats a user may hand us.
#
#   scripts/images.sh [--out DIR] [--keep]
#
# --out DIR  where the archives go (default: images/ at the repository root)
# --keep     leave the images in the Docker Engine (for `image: NAME:TAG`),
#            httpd and myjob also as local/httpd:1 and local/myjob:1, the
#            names the example in docs/own-services.md uses; without it, the
#            images this run put into the engine are removed on exit (tags
#            found there before the run are left alone)
#
# Idempotent and fast on a second run: an archive is rebuilt only when what
# would go into it changed (see inputs_hash), so a rerun copies a few
# megabytes, hashes them, and builds nothing.
set -euo pipefail

log() { printf 'images: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

usage() {
	sed -n '2,17s/^# \{0,1\}//p' "$0"
}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO/images
KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) [ $# -ge 2 ] || die "--out needs a directory"; OUT=$2; shift 2 ;;
	--out=*) OUT=${1#--out=}; shift ;;
	--keep) KEEP=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

# Every image carries this label, so `docker images --filter
# label=org.ctrbench.example=true` finds them all.
LABEL=org.ctrbench.example
# The hash of an image's inputs, stored in the image itself: the archive
# then says what it was built from, and no stamp file can drift from it.
INPUTS_LABEL=org.ctrbench.example.inputs

# The legacy builder: BuildKit (through buildx) keeps a build cache in the
# engine that `docker rmi` does not remove, and this script promises to leave
# nothing behind. (The CLI notes that the legacy builder is deprecated.)
export DOCKER_BUILDKIT=0

# Files each image is made from, with the Debian package that installs them.
NEEDS=(
	"/bin/busybox:busybox-static"
	"/usr/sbin/nginx:nginx-light"
	"/etc/nginx/mime.types:nginx-common"
	"/usr/bin/redis-server:redis-server"
	"/usr/bin/redis-benchmark:redis-tools"
	"/usr/bin/redis-cli:redis-tools"
	"/usr/bin/skopeo:skopeo"
)

check_needs() {
	local entry path missing=()
	for entry in "${NEEDS[@]}"; do
		path=${entry%%:*}
		[ -e "$path" ] || missing+=("$path (Debian package ${entry#*:})")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "missing: ${missing[*]}"
		die "run scripts/setup.sh (as root), which installs them"
	fi
	# busybox (the dynamic build) also installs /bin/busybox, but its
	# libraries would not be in the image.
	if ldd /bin/busybox >/dev/null 2>&1; then
		die "/bin/busybox is dynamically linked; install busybox-static (run scripts/setup.sh)"
	fi
	command -v "${GO:-go}" >/dev/null 2>&1 || die "no Go toolchain (${GO:-go}) to build examples/myjob: the one that builds ctrbench (set GO=/path/to/go)"
	command -v docker >/dev/null 2>&1 || die "no docker CLI; run scripts/setup.sh"
	timeout 10 docker version >/dev/null 2>&1 || die "no Docker Engine answers; run scripts/setup.sh (it starts dockerd)"
}

# put_file SRC CTX [DEST] copies SRC into the build context CTX at DEST (by
# default SRC's own path). A symbolic link is copied as the file it resolves
# to, under the link's name: the loader and programs look the name up, and
# a link into the host's tree would dangle in the image.
put_file() {
	local src=$1 ctx=$2 dest=${3:-$1}
	mkdir -p "$ctx/rootfs$(dirname "$dest")"
	cp -L --preserve=mode,timestamps "$src" "$ctx/rootfs$dest"
}

# put_program BIN CTX [DEST] copies BIN and every shared library ldd lists,
# the dynamic loader included, each at the path ldd prints (the loader's is
# the one written into the program as its interpreter). A static program
# ("not a dynamic executable") is copied alone.
put_program() {
	local bin=$1 ctx=$2 dest=${3:-$1} out line lib
	put_file "$bin" "$ctx" "$dest"
	if ! out=$(ldd "$bin" 2>&1); then
		case $out in
		*"not a dynamic executable"*) return 0 ;;
		*) die "ldd $bin: $out" ;;
		esac
	fi
	while IFS= read -r line; do
		line=${line#"${line%%[![:space:]]*}"}
		case $line in
		*"=> not found"*) die "$bin needs ${line%% *}, which is not installed" ;;
		# libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
		*"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
		# /lib64/ld-linux-x86-64.so.2 (0x...): the loader
		/*) lib=${line%% (*} ;;
		# linux-vdso.so.1 (0x...): the kernel's, in no file
		*) continue ;;
		esac
		put_file "$lib" "$ctx"
	done <<<"$out"
}

# put_text CTX DEST [MODE] writes stdin to DEST in the context.
put_text() {
	local ctx=$1 dest=$2 mode=${3:-0644}
	mkdir -p "$ctx/rootfs$(dirname "$dest")"
	cat >"$ctx/rootfs$dest"
	chmod "$mode" "$ctx/rootfs$dest"
}

# put_dir CTX MODE DIR... creates empty directories in the image.
put_dir() {
	local ctx=$1 mode=$2 d
	shift 2
	for d in "$@"; do
		mkdir -p "$ctx/rootfs$d"
		chmod "$mode" "$ctx/rootfs$d"
	done
}

# put_www CTX NAME puts the web root both HTTP servers serve: an index.html
# naming the server (a check can tell which answered) and a 4 KiB file whose
# size does not change with the server's version, for load tests.
put_www() {
	local ctx=$1 name=$2
	put_text "$ctx" /www/index.html <<EOF
<!doctype html>
<html><head><title>ctrbench-example $name</title></head>
<body><p>ctrbench-example $name: served from an image built offline by scripts/images.sh.</p></body></html>
EOF
	# 4096 bytes exactly: 64 lines of 63 characters and a newline.
	local i
	for i in $(seq 1 64); do
		printf '%-63s\n' "ctrbench-example 4 KiB file, line $i"
	done | put_text "$ctx" /www/4k.bin
}

# put_users CTX USER:UID:GID... writes /etc/passwd and /etc/group with root and
# the given users (each with a group of its own name).
put_users() {
	local ctx=$1 u name uid gid
	shift
	{
		echo "root:x:0:0:root:/root:/sbin/nologin"
		for u in "$@"; do
			IFS=: read -r name uid gid <<<"$u"
			echo "$name:x:$uid:$gid:$name:/nonexistent:/sbin/nologin"
		done
	} | put_text "$ctx" /etc/passwd
	{
		echo "root:x:0:"
		for u in "$@"; do
			IFS=: read -r name uid gid <<<"$u"
			echo "$name:x:$gid:"
		done
	} | put_text "$ctx" /etc/group
}

ctx_httpd() {
	local ctx=$1
	put_program /bin/busybox "$ctx"
	put_www "$ctx" httpd
	cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
LABEL org.ctrbench.example=true
EXPOSE 8080
# httpd installs no SIGTERM handler, and the kernel drops an unhandled
# SIGTERM sent to a namespace's PID 1: `docker stop` would wait its 10 s.
# The server keeps no state, so SIGKILL loses nothing.
STOPSIGNAL SIGKILL
CMD ["/bin/busybox","httpd","-f","-p","8080","-h","/www"]
EOF
}

ctx_nginx() {
	local ctx=$1
	put_program /usr/sbin/nginx "$ctx"
	put_file /etc/nginx/mime.types "$ctx"
	put_www "$ctx" nginx
	# Workers run as www-data, as in Debian's own package; nginx's compiled
	# default user is nobody with a group "nobody" that Debian does not have.
	put_users "$ctx" www-data:33:33
	# Found by starting the image without each (nginx exits with "emerg"):
	# nginx creates the temporary-file directories compiled in (`nginx -V`:
	# --http-*-temp-path=/var/lib/nginx/body, proxy, fastcgi, uwsgi, scgi)
	# at startup whatever the config says, but only their last component, so
	# /var/lib/nginx must exist; /tmp holds the pid file. /var/log/nginx is not
	# needed with this config (error log compiled to stderr, access_log off)
	# and is there so that turning the access log on at its compiled path
	# (/var/log/nginx/access.log) works.
	put_dir "$ctx" 0755 /var/lib/nginx /var/log/nginx
	put_dir "$ctx" 1777 /tmp
	put_text "$ctx" /etc/nginx/nginx.conf <<'EOF'
# ctrbench-example/nginx: a static file server for load tests.
# One worker: the same process count under any CPU limit, so results compare
# across platforms and cgroup settings.
worker_processes 1;
user www-data www-data;
daemon off;
error_log stderr;
pid /tmp/nginx.pid;

events {
    worker_connections 4096;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    # Load generators (wrk, hey, ab -k) keep their connections for the whole
    # run; nginx's default of 1000 requests would close them mid-run.
    keepalive_requests 10000000;
    keepalive_timeout 300s;

    server {
        listen 8080 default_server;
        root /www;
        index index.html;
    }
}
EOF
	cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
LABEL org.ctrbench.example=true
EXPOSE 8080
STOPSIGNAL SIGQUIT
CMD ["/usr/sbin/nginx","-c","/etc/nginx/nginx.conf"]
EOF
}

# myjob: a benchmark of "yours" with its own numbers (examples/myjob), a
# static Go program alone in its image, run as `/app/bench --json`.
ctx_myjob() {
	local ctx=$1
	mkdir -p "$ctx/rootfs/app"
	# -trimpath and no build ID: the same source gives the same bytes, so
	# the inputs hash changes only when the program does.
	(cd "$REPO" && CGO_ENABLED=0 "${GO:-go}" build -trimpath -ldflags=-buildid= -o "$ctx/rootfs/app/bench" ./examples/myjob) ||
		die "building examples/myjob failed"
	cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
LABEL org.ctrbench.example=true
WORKDIR /app
ENTRYPOINT ["/app/bench"]
CMD ["--json"]
EOF
}

# The redis image carries the client tools too (redis-benchmark, redis-cli):
# they need exactly the libraries redis-server needs, so they add under a
# megabyte, where a tools image of its own would repeat ~11 MB of libraries
# and be one more archive to load on every platform. A client container runs
# the same image with another command.
ctx_redis() {
	local ctx=$1
	# /usr/bin/redis-server is a link to redis-check-rdb, one program that
	# picks its role by the name it was started under: copied as
	# redis-server, it is the server.
	put_program /usr/bin/redis-server "$ctx"
	put_program /usr/bin/redis-benchmark "$ctx"
	put_program /usr/bin/redis-cli "$ctx"
	put_users "$ctx"
	put_dir "$ctx" 1777 /tmp
	put_dir "$ctx" 0755 /data
	cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
LABEL org.ctrbench.example=true
# docker build gives every image this PATH; said here so that the image does
# not depend on the builder (redis-server in CMD is found through it).
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /data
EXPOSE 6379
CMD ["redis-server","--port","6379","--save","","--appendonly","no","--protected-mode","no"]
EOF
}

# inputs_hash CTX TAG is a digest of everything an image is built from: the
# name, the Dockerfile and the files with their modes, not their times (a
# package reinstalled with the same content changes nothing).
inputs_hash() {
	local ctx=$1 tag=$2
	{
		printf '%s\n' "$tag"
		tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - -C "$ctx" .
	} | sha256sum | cut -d' ' -f1
}

# archive_inputs ARCHIVE prints the inputs label of the image a `docker save`
# archive holds, or nothing when it holds no such image or no such tag.
archive_inputs() {
	local archive=$1 tag=$2 manifest cfg
	manifest=$(tar -xOf "$archive" manifest.json 2>/dev/null) || return 0
	case $manifest in *"\"$tag\""*) ;; *) return 0 ;; esac
	cfg=$(grep -o '"Config":"[^"]*"' <<<"$manifest" | head -n1 | cut -d'"' -f4) || return 0
	[ -n "$cfg" ] || return 0
	{ tar -xOf "$archive" "$cfg" 2>/dev/null || true; } |
		{ grep -o "\"$INPUTS_LABEL\":\"[^\"]*\"" || true; } | head -n1 | cut -d'"' -f4
}

# engine_id TAG is the image ID the engine has under TAG, or nothing.
engine_id() {
	docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true
}

engine_inputs() {
	docker image inspect --format "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "$1" 2>/dev/null || true
}

# Tags this run put into the engine (and nobody had before it): removed on
# exit without --keep, also when the script fails half way.
PUT=()
STATE=

cleanup() {
	local rc=$? tag
	if [ "$KEEP" = 0 ] && [ ${#PUT[@]} -gt 0 ]; then
		for tag in "${PUT[@]}"; do
			docker rmi "$tag" >/dev/null 2>&1 || log "could not remove $tag from the engine (a container uses it?)"
		done
	fi
	rm -f "$OUT"/*.tmp.$$
	[ -n "${TMP:-}" ] && rm -rf "$TMP"
	exit "$rc"
}

# engine_changed TAG BEFORE notes what this run did to TAG in the engine:
# a tag nobody had before is ours to remove on exit; an image the tag named
# before, now untagged, was an older build of ours (it carries the label) and
# goes when nothing uses it.
engine_changed() {
	local tag=$1 before=$2 after
	after=$(engine_id "$tag")
	if [ -z "$before" ]; then
		PUT+=("$tag")
	elif [ "$before" != "$after" ]; then
		docker rmi "$before" >/dev/null 2>&1 || true
	fi
}

# make_image NAME TAG builds the image unless OUT/NAME.tar already holds it
# built from the same inputs, and writes the archive atomically (a test may
# be reading the old one). Sets STATE to "built" or "current".
make_image() {
	local name=$1 tag=$2 ctx=$TMP/$1 archive=$OUT/$1.tar hash before out
	mkdir -p "$ctx"
	"ctx_$name" "$ctx"
	hash=$(inputs_hash "$ctx" "$tag")
	before=$(engine_id "$tag")
	if [ -f "$archive" ] && [ "$(archive_inputs "$archive" "$tag")" = "$hash" ]; then
		if [ "$KEEP" = 1 ] && [ "$(engine_inputs "$tag")" != "$hash" ]; then
			docker load -q -i "$archive" >/dev/null
			engine_changed "$tag" "$before"
		fi
		STATE=current
		return
	fi
	if [ -n "$before" ] && [ "$(engine_inputs "$tag")" = "$hash" ]; then
		log "$tag: the engine has it built from the same inputs; saving that"
	else
		log "building $tag"
		out=$(docker build --label "$INPUTS_LABEL=$hash" -t "$tag" "$ctx" 2>&1) || {
			printf '%s\n' "$out" >&2
			die "docker build of $tag failed"
		}
		engine_changed "$tag" "$before"
	fi
	docker save -o "$archive.tmp.$$" "$tag"
	# docker save writes 0600; the OCI archive and any tarball are 0644.
	chmod 0644 "$archive.tmp.$$"
	mv -f "$archive.tmp.$$" "$archive"
	STATE=built
}

# make_oci NAME TAG writes OUT/NAME-oci.tar, the OCI image layout of
# OUT/NAME.tar in a tar, naming the image TAG inside
# (org.opencontainers.image.ref.name); remade when older than its source.
# Sets STATE.
make_oci() {
	local tag=$2 src=$OUT/$1.tar dst=$OUT/$1-oci.tar
	if [ -f "$dst" ] && [ "$dst" -nt "$src" ]; then
		STATE=current
		return
	fi
	rm -f "$dst.tmp.$$"
	skopeo copy -q "docker-archive:$src" "oci-archive:$dst.tmp.$$:$tag" >/dev/null
	mv -f "$dst.tmp.$$" "$dst"
	STATE=built
}

human() { numfmt --to=iec-i --suffix=B --format='%.1f' "$1"; }

main() {
	check_needs
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd)
	# One run at a time per output directory: two would race on the same
	# tags and archives.
	exec 9<"$OUT"
	flock 9
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctrbench-images.XXXXXX")
	trap cleanup EXIT
	# A signal ends the script through exit, so cleanup runs then too.
	trap 'exit 130' INT
	trap 'exit 143' TERM

	local name tag state
	local -a made=()
	for name in httpd nginx redis myjob; do
		tag=ctrbench-example/$name:1
		make_image "$name" "$tag"
		made+=("$name.tar|$tag|$STATE")
	done
	make_oci httpd ctrbench-example/httpd:1
	made+=("httpd-oci.tar|ctrbench-example/httpd:1 (OCI)|$STATE")

	local entry file
	printf '%s:\n' "$OUT"
	for entry in "${made[@]}"; do
		IFS='|' read -r file tag state <<<"$entry"
		printf '  %-14s %9s  %-34s %s\n' "$file" "$(human "$(stat -c %s "$OUT/$file")")" "$tag" "$state"
	done
	if [ "$KEEP" = 1 ]; then
		for name in httpd myjob; do
			docker tag "ctrbench-example/$name:1" "local/$name:1"
		done
		log "kept in the Docker Engine: docker images --filter label=$LABEL=true (httpd and myjob also as local/httpd:1, local/myjob:1)"
	else
		local -a left=()
		for name in httpd nginx redis myjob; do
			tag=ctrbench-example/$name:1
			[ -z "$(engine_id "$tag")" ] || [[ " ${PUT[*]} " == *" $tag "* ]] || left+=("$tag")
		done
		if [ ${#left[@]} -gt 0 ]; then
			# Put there by an earlier --keep or a docker load: someone may be
			# about to run them, so they are not this run's to remove.
			log "left in the Docker Engine, where they were before this run (rebuilt ones updated): ${left[*]}; docker rmi to remove"
		fi
	fi
}

main
