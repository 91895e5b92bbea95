# k8s-cluster.sh: the test cluster's up, load, status and down, sourced by
# scripts/k8s.sh (which sets VERSION, CACHE, BIN, log and die). It follows
# ../shared/KUBERNETES-OFFLINE.md, with every node in a network namespace
# of its own and the API server on the node network's gateway (no
# forwarder), so kube-proxy's rules live in the nodes' namespaces and the
# machine's iptables gets one accept rule for the node bridge.

STATE=${CTRBENCH_K8S_STATE:-/var/lib/ctrbench/k8s} # etcd, PKI, configs, node data
RUN=/run/ctrbench-k8s                              # sockets, PID files, runc state
BRIDGE=ctrk8s0
NS_PREFIX=ctrbench-k8s-node
CG_PREFIX=ctrbench-k8s-node
APISERVER_PORT=6443
ETCD_CLIENT=127.0.0.1:23790
ETCD_PEER=127.0.0.1:23800
PAUSE_IMAGE=ctrbench.local/pause:3.10
BUSYBOX_IMAGE=ctrbench.local/busybox:1 # kube's tests run it
CONTAINERD_ANNOTATION=ctrbench.io/containerd # kubernetes.ContainerdAnnotation
# The node's network namespace, whose eth0 (its link to the other nodes)
# an underlay rate shapes (kubernetes.NetNSAnnotation).
NETNS_ANNOTATION=ctrbench.io/netns
# The machine's bridge and the node's port in it, "BRIDGE/PORT": a delay
# line is spliced in between (kubernetes.LinkAnnotation).
LINK_ANNOTATION=ctrbench.io/link
# A registry on the machine's node-network address, which the nodes'
# containerd pull from over plain HTTP (the kubernetes platform's
# --registry test runs Debian's docker-registry there; nothing listens
# otherwise).
REGISTRY_PORT=5000
REGISTRY_ANNOTATION=ctrbench.io/http-registry
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
FWD_RULE=(-i "$BRIDGE" -o "$BRIDGE" -j ACCEPT -m comment --comment ctrbench-k8s)

ctrbench_bin() {
	local b=${CTRBENCH_BIN:-}
	[ -n "$b" ] || b=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/ctrbench
	[ -x "$b" ] || die "no ctrbench binary at $b (make build, or set CTRBENCH_BIN): its subnet pool gives the cluster's addresses"
	echo "$b"
}

# plan reads the address plan from ctrbench's layout (a fact written once).
plan() {
	local b vars
	b=$(ctrbench_bin)
	vars=$("$b" subnets --shell --nodes "$NODES" ${CTRBENCH_SUBNET_POOL:+--subnet-pool "$CTRBENCH_SUBNET_POOL"}) ||
		die "$b subnets refused the plan (its message is above; an older ctrbench has no subnets command: make build)"
	eval "$vars"
	APISERVER=$K8S_GATEWAY
}

node_name() { echo "ctrbench-node$1"; }
# nth LIST N: element N (1-based) of the comma-separated LIST, taken
# round: a list shorter than the nodes repeats.
nth() {
	local -a l
	IFS=, read -r -a l <<<"$1"
	echo "${l[$((($2 - 1) % ${#l[@]}))]}"
}
# node_proxy_mode N, node_cni N, node_cpu_manager N: node N's kube-proxy
# mode, CNI plugin and the kubelet's CPU manager policy, as up was given
# them (--proxy-mode, --cni, --cpu-manager: one for every node, or a list).
node_proxy_mode() { nth "$(cat "$STATE/proxy-mode")" "$1"; }
node_cni() { nth "$(cat "$STATE/cni")" "$1"; }
node_cpu_manager() { nth "$(cat "$STATE/cpu-manager")" "$1"; }
node_ip() { local v="K8S_NODE$1_IP"; echo "${!v}"; }
node_pods() { local v="K8S_NODE$1_PODS"; echo "${!v}"; }
holder() { cat "$RUN/node$1/holder.pid"; }

# holder_ready N: node N's holder is in a mount namespace of its own and
# in the node's network namespace.
holder_ready() {
	local pid
	pid=$(holder "$1")
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] &&
		[ "$(readlink "/proc/$pid/ns/net")" = "$(stat -L -c 'net:[%i]' "/run/netns/$NS_PREFIX$1")" ]
}

kubectl_() { KUBECACHEDIR=$STATE/kube-cache "$BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# wait_for TRIES WHAT CMD…: run CMD every 0.25 s until it succeeds.
wait_for() {
	local tries=$1 what=$2 i
	shift 2
	for ((i = 0; i < tries; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.25
	done
	return 1
}

# ---- PKI: openssl only, EC P-256 keys ------------------------------------

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# cert NAME SUBJECT EXTENSIONS: a key and a certificate signed by the CA.
cert() {
	local d=$STATE/pki
	key "$d/$1.key"
	openssl req -new -key "$d/$1.key" -subj "$2" -out "$d/$1.csr" 2>/dev/null
	printf '%b\n' "$3" >"$d/$1.ext"
	openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
		-days 30 -sha256 -extfile "$d/$1.ext" -out "$d/$1.crt" 2>/dev/null || die "signing $1's certificate failed"
	rm -f "$d/$1.csr" "$d/$1.ext"
}

client_ext='keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
server_ext='keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth'

pki() {
	local d=$STATE/pki n svc
	mkdir -p "$d"
	key "$d/ca.key"
	openssl req -x509 -new -key "$d/ca.key" -subj /CN=ctrbench-k8s-ca -days 30 -sha256 \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out "$d/ca.crt" 2>/dev/null ||
		die "making the cluster's CA failed"
	key "$d/sa.key"
	openssl pkey -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
	svc=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1])[1])" "$K8S_SERVICE_NET")
	cert apiserver /CN=kube-apiserver "$server_ext\nsubjectAltName=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$APISERVER,IP:$svc"
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client_ext"
	cert admin "/O=system:masters/CN=ctrbench-admin" "$client_ext"
	cert controller-manager /CN=system:kube-controller-manager "$client_ext"
	cert scheduler /CN=system:kube-scheduler "$client_ext"
	cert kube-proxy /CN=system:kube-proxy "$client_ext"
	for ((n = 1; n <= NODES; n++)); do
		cert "node$n" "/O=system:nodes/CN=system:node:$(node_name "$n")" "$client_ext"
		cert "node$n-serving" "/CN=$(node_name "$n")" "$server_ext\nsubjectAltName=DNS:$(node_name "$n"),IP:$(node_ip "$n")"
	done
}

# kubeconfig NAME CERT: a kubeconfig for the identity CERT.
kubeconfig() {
	cat >"$STATE/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ctrbench-k8s
  cluster:
    certificate-authority: $STATE/pki/ca.crt
    server: https://$APISERVER:$APISERVER_PORT
users:
- name: $2
  user:
    client-certificate: $STATE/pki/$2.crt
    client-key: $STATE/pki/$2.key
contexts:
- name: ctrbench-k8s
  context: {cluster: ctrbench-k8s, user: $2}
current-context: ctrbench-k8s
EOF
}

# ---- the machine's side of the network -----------------------------------

net_up() {
	ip link add "$BRIDGE" type bridge || die "making bridge $BRIDGE failed (is a cluster up? scripts/k8s.sh down)"
	ip addr add "$APISERVER/${K8S_NODE_NET#*/}" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	# Docker sets FORWARD's policy to DROP and bridged frames pass it
	# (bridge-nf-call-iptables): let the nodes' bridge forward between its
	# ports, as Docker does for its own bridges.
	if command -v iptables >/dev/null; then
		iptables -w -C FORWARD "${FWD_RULE[@]}" 2>/dev/null || iptables -w -I FORWARD 1 "${FWD_RULE[@]}"
	fi
}

# node_net N: node N's namespace, its eth0 on the bridge, routes to every
# other node's pods over the bridge, and the machine's route to its pods.
node_net() {
	local n=$1 ns=$NS_PREFIX$1 host=ctrk8s-n$1 m
	ip netns add "$ns"
	ip link add "$host" type veth peer name eth0 netns "$ns"
	ip link set "$host" master "$BRIDGE" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$(node_ip "$n")/${K8S_NODE_NET#*/}" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "$APISERVER"
	for ((m = 1; m <= NODES; m++)); do
		[ "$m" = "$n" ] || ip -n "$ns" route add "$(node_pods "$m")" via "$(node_ip "$m")"
	done
	ip route add "$(node_pods "$n")" via "$(node_ip "$n")" dev "$BRIDGE"
	# The machine reaches ClusterIPs as a node does, through node 1's
	# kube-proxy: never by its default route, out of its real interface.
	[ "$n" != 1 ] || ip route add "$K8S_SERVICE_NET" via "$(node_ip 1)" dev "$BRIDGE"
	nsenter --net="/run/netns/$ns" sysctl -qw net.ipv4.ip_forward=1
}

# ---- cgroups --------------------------------------------------------------

hierarchies() {
	local d
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo /sys/fs/cgroup
		return
	fi
	for d in /sys/fs/cgroup/*/; do
		d=${d%/}
		[ -L "$d" ] || [ "${d##*/}" = unified ] || echo "$d"
	done
}

# every_hierarchy: hierarchies, and the unified one of a hybrid machine
# (where runc makes the node's cgroups too): what down looks through.
every_hierarchy() {
	hierarchies
	if [ -d /sys/fs/cgroup/unified ] && [ ! -L /sys/fs/cgroup/unified ]; then echo /sys/fs/cgroup/unified; fi
}

# node_cgroup N: the node's cgroup in every hierarchy, which its holder,
# containerd (and so its shims), kubelet and kube-proxy join; the kubelet
# makes its pods' cgroups under it (cgroupRoot). It has every CPU of the
# machine: the kubelet writes all the CPUs the machine has into its pods'
# cpuset (kubepods), which the kernel refuses under a parent pinned to fewer.
node_cgroup() {
	local n=$1 h c
	for h in $(hierarchies); do
		c=$h/$CG_PREFIX$n
		mkdir -p "$c"
		if [ -f "$h/cpuset.cpus" ] && [ ! -f "$h/cgroup.controllers" ]; then
			cat "$h/cpuset.mems" >"$c/cpuset.mems"
			cat "$h/cpuset.cpus" >"$c/cpuset.cpus"
		fi
	done
}

# join_cgroup N: put this shell (BASHPID) in node N's cgroup everywhere.
join_cgroup() {
	local h
	for h in $(hierarchies); do
		echo "$BASHPID" >"$h/$CG_PREFIX$1/cgroup.procs"
	done
}

# cgroup_pids N: every process in node N's cgroup tree.
cgroup_pids() {
	local h
	for h in $(every_hierarchy); do
		if [ -d "$h/$CG_PREFIX$1" ]; then find "$h/$CG_PREFIX$1" -name cgroup.procs -exec cat {} + 2>/dev/null || true; fi
	done | sort -u
}

# ---- a node ---------------------------------------------------------------

# in_node N LOG PIDFILE CMD…: start CMD in node N's namespaces and cgroup.
in_node() {
	local n=$1 log=$2 pidfile=$3
	shift 3
	(
		join_cgroup "$n"
		exec setsid nsenter -t "$(holder "$n")" -m -n -- "$@"
	) </dev/null >"$log" 2>&1 &
	echo $! >"$pidfile"
}

# node_mounts N: the node's private mounts — what containerd 1.6 and the
# kubelet write to fixed paths goes to the node's own directories: shim
# sockets and FIFOs (/run/containerd), the pods' network namespaces
# (/run/netns), the kubelet's root, libcni's cache, pod and container logs.
node_mounts() {
	local n=$1 d=$STATE/node$1 p
	mkdir -p "$d/run-containerd" "$d/kubelet" "$d/var-log" "$d/var-lib-cni" "$d/netns"
	for p in /run/containerd /var/lib/kubelet /var/lib/cni; do
		if [ ! -d "$p" ]; then
			mkdir -p "$p"
			echo "$p" >>"$STATE/made-dirs"
		fi
	done
	holder_ready "$n" || die "node $n's holder is not in namespaces of its own: nothing is mounted"
	nsenter -t "$(holder "$n")" -m -- sh -ec "
		mount --bind '$d/run-containerd' /run/containerd
		mount --bind '$d/kubelet' /var/lib/kubelet
		mount --make-rshared /var/lib/kubelet
		mount --bind '$d/var-lib-cni' /var/lib/cni
		mount --bind '$d/var-log' /var/log
		mount --bind '$d/netns' /run/netns"
}

containerd_config() {
	local n=$1 d=$STATE/node$1 r=$RUN/node$1
	mkdir -p "$d/cni" "$d/containerd"
	cat >"$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd"
state = "$r/containerd"
[grpc]
  address = "$r/containerd.sock"
[ttrpc]
  address = "$r/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$r/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$K8S_GATEWAY:$REGISTRY_PORT"]
    endpoint = ["http://$K8S_GATEWAY:$REGISTRY_PORT"]
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
    max_conf_num = 1
EOF
	cni_config "$n" >"$d/cni/10-ctrbench.conflist"
}

# cni_config N: node N's CNI network, of its plugin (--cni): bridge
# (the pods of a node on one Linux bridge, the node its gateway) or ptp (a
# veth pair per pod, routed by the node). Addresses: host-local, in the
# node's pod /24; no masquerade (every path stays inside the pool).
cni_config() {
	local n=$1 ipam
	ipam="{\"type\": \"host-local\", \"dataDir\": \"$STATE/node$n/ipam\", \"ranges\": [[{\"subnet\": \"$(node_pods "$n")\"}]], \"routes\": [{\"dst\": \"0.0.0.0/0\"}]}"
	case $(node_cni "$n") in
	bridge)
		echo "{\"cniVersion\": \"0.4.0\", \"name\": \"ctrbench-k8s\", \"plugins\": [{\"type\": \"bridge\", \"bridge\": \"cni0\", \"isGateway\": true, \"ipMasq\": false, \"hairpinMode\": true, \"ipam\": $ipam}]}"
		;;
	ptp)
		echo "{\"cniVersion\": \"0.4.0\", \"name\": \"ctrbench-k8s\", \"plugins\": [{\"type\": \"ptp\", \"ipMasq\": false, \"ipam\": $ipam}]}"
		;;
	esac
}

kubelet_config() {
	local n=$1 d=$STATE/node$1
	cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(node_ip "$n")
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $STATE/pki/node$n-serving.crt
tlsPrivateKeyFile: $STATE/pki/node$n-serving.key
containerRuntimeEndpoint: unix://$RUN/node$n/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$CG_PREFIX$n
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
podLogsDir: $d/pod-logs
volumePluginDir: $d/volume-plugins
staticPodPath: ""
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%", imagefs.inodesFree: "1%"}
EOF
	# The static policy gives a Guaranteed pod's container with whole CPUs
	# cores of its own (its cpuset); CPU 0 stays the shared pool's.
	if [ "$(node_cpu_manager "$n")" = static ]; then
		printf 'cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n' >>"$d/kubelet.yaml"
	fi
}

# scratch_image BINARY REF PATH OUT: an image FROM scratch holding the
# static BINARY at PATH, its entrypoint, tagged REF, written to OUT as a
# docker-archive tar (what ctr images import reads): no registry, no engine.
scratch_image() {
	python3 - "$@" <<'EOF'
import hashlib, io, json, sys, tarfile
binary, ref, path, out = sys.argv[1:]
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
    info = t.gettarinfo(binary, arcname=path.lstrip("/"))
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    with open(binary, "rb") as f:
        t.addfile(info, f)
data = layer.getvalue()
diff = "sha256:" + hashlib.sha256(data).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux",
    "config": {"Entrypoint": [path]},
    "rootfs": {"type": "layers", "diff_ids": [diff]}}).encode()
cname = hashlib.sha256(config).hexdigest() + ".json"
with tarfile.open(out, "w") as t:
    for name, body in ((cname, config), ("layer.tar", data),
                       ("manifest.json", json.dumps([{"Config": cname, "RepoTags": [ref], "Layers": ["layer.tar"]}]).encode())):
        info = tarfile.TarInfo(name)
        info.size = len(body)
        t.addfile(info, io.BytesIO(body))
EOF
}

# node_images writes the images every node gets: the pods' sandbox (the
# module's pause.c, static) and, for tests, busybox (Debian's static one;
# /bin/busybox its entrypoint, an applet its first argument).
node_images() {
	scratch_image "$CACHE/pause/pause" "$PAUSE_IMAGE" /pause "$STATE/pause.tar"
	local bb
	bb=$(command -v busybox) || die "busybox is not installed (Debian's busybox-static; make setup installs it): the test cluster's nodes get it as an image"
	scratch_image "$bb" "$BUSYBOX_IMAGE" /bin/busybox "$STATE/busybox.tar"
}

ctr_() {
	local n=$1
	shift
	nsenter -t "$(holder "$n")" -m -n -- ctr --address "$RUN/node$n/containerd.sock" -n k8s.io "$@"
}

node_up() {
	local n=$1 d=$STATE/node$1 r=$RUN/node$1
	mkdir -p "$d" "$r"
	node_net "$n"
	node_cgroup "$n"
	# The holder keeps the node's mount namespace; nothing of it is seen
	# outside, and it ends with the node's last process.
	(
		join_cgroup "$n"
		exec setsid nsenter --net="/run/netns/$NS_PREFIX$n" -- unshare --mount --propagation private -- sleep infinity
	) </dev/null >/dev/null 2>&1 &
	echo $! >"$r/holder.pid"
	# Until it has unshared, the holder's PID is in the machine's mount
	# namespace: nothing enters it before its namespaces are its own.
	wait_for 40 "the holder" holder_ready "$n" || die "node $n's namespace holder did not start"
	node_mounts "$n"
	containerd_config "$n"
	kubelet_config "$n"
	node_containerd "$n"
	ctr_ "$n" images import "$STATE/pause.tar" >/dev/null && ctr_ "$n" images import "$STATE/busybox.tar" >/dev/null ||
		die "importing the pause and busybox images into node $n failed"
	node_kubelet "$n"
	in_node "$n" "$d/kube-proxy.log" "$r/kube-proxy.pid" env PATH="$BIN:$PATH" "$BIN/kube-proxy" \
		--proxy-mode "$(node_proxy_mode "$n")" --kubeconfig "$STATE/kube-proxy.kubeconfig" --hostname-override "$(node_name "$n")" \
		--cluster-cidr "$K8S_POD_NET" --nodeport-addresses "$K8S_NODE_NET" \
		--metrics-bind-address 127.0.0.1:10249 --healthz-bind-address "$(node_ip "$n"):10256" \
		--conntrack-max-per-core 0 --conntrack-min 0 \
		--conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0
}

# node_containerd N, node_kubelet N: start the node's containerd (and wait
# until it answers), its kubelet; up starts them, and restart after a fault
# (make chaos kills them).
node_containerd() {
	local n=$1 d=$STATE/node$1 r=$RUN/node$1
	in_node "$n" "$d/containerd.log" "$r/containerd.pid" containerd --config "$d/containerd.toml"
	wait_for 80 "containerd" ctr_ "$n" version || { tail -n 20 "$d/containerd.log" >&2; die "node $n's containerd did not answer"; }
}

node_kubelet() {
	local n=$1 d=$STATE/node$1 r=$RUN/node$1
	in_node "$n" "$d/kubelet.log" "$r/kubelet.pid" "$BIN/kubelet" --config "$d/kubelet.yaml" \
		--kubeconfig "$STATE/node$n.kubeconfig" --hostname-override "$(node_name "$n")" --node-ip "$(node_ip "$n")" \
		--root-dir /var/lib/kubelet
}

# cluster_restart N containerd|kubelet: start node N's daemon again where
# it is not running (after it was killed), and wait for the node to be
# Ready.
cluster_restart() {
	local n=${1:-} daemon=${2:-}
	[ -n "$n" ] && [ -d "$RUN/node$n" ] || die "usage: restart N containerd|kubelet (no node $n is up)"
	case $daemon in
	containerd | kubelet) ;;
	*) die "usage: restart N containerd|kubelet" ;;
	esac
	local pid
	pid=$(cat "$RUN/node$n/$daemon.pid" 2>/dev/null)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		log "node $n's $daemon runs already (pid $pid)"
		return 0
	fi
	"node_$daemon" "$n"
	wait_for 120 "node $n Ready" node_ready "$n" || die "node $n is not Ready after its $daemon was started again"
	log "node $n's $daemon started again; the node is Ready"
}

# ---- the control plane ----------------------------------------------------

start() {
	local name=$1
	shift
	setsid "$@" </dev/null >"$STATE/$name.log" 2>&1 &
	echo $! >"$RUN/$name.pid"
}

control_plane_up() {
	start etcd "$BIN/etcd" --name ctrbench-k8s --data-dir "$STATE/etcd" \
		--listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
		--listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
		--initial-cluster "ctrbench-k8s=http://$ETCD_PEER"
	local p=$STATE/pki
	start kube-apiserver "$BIN/kube-apiserver" --bind-address "$APISERVER" --secure-port "$APISERVER_PORT" \
		--advertise-address "$APISERVER" --etcd-servers "http://$ETCD_CLIENT" \
		--service-cluster-ip-range "$K8S_SERVICE_NET" \
		--client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
		--kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$p/ca.crt" --kubelet-preferred-address-types InternalIP \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true
	wait_for 240 "the API server" kubectl_ get --raw /readyz ||
		{ tail -n 20 "$STATE/kube-apiserver.log" "$STATE/etcd.log" >&2; die "the API server did not become ready in 60 s"; }
	start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$STATE/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$STATE/controller-manager.kubeconfig" --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
		--cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" --root-ca-file "$p/ca.crt" \
		--service-account-private-key-file "$p/sa.key" --use-service-account-credentials=true \
		--allocate-node-cidrs=false --flex-volume-plugin-dir "$STATE/kcm-volume-plugins"
	start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$STATE/scheduler.kubeconfig" \
		--authentication-kubeconfig "$STATE/scheduler.kubeconfig" --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port 0 --leader-elect=false
}

# node_ready N: node N is Ready and takes pods: the node controller has
# lifted the not-ready taint it starts with.
node_ready() {
	local out
	out=$(kubectl_ get node "$(node_name "$1")" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.spec.taints}' 2>/dev/null) || return 1
	[ "$out" = "True " ]
}

save_sysctls() {
	local k
	for k in "${SYSCTLS[@]}"; do
		echo "$k=$(sysctl -n "$k")"
	done >"$STATE/sysctl.orig"
}

cluster_up() {
	NODES=2
	PROXY_MODE=iptables
	CNI=bridge
	CPU_MANAGER=none
	while [ $# -gt 0 ]; do
		case $1 in
		--nodes) NODES=$2 && shift 2 ;;
		--proxy-mode) PROXY_MODE=$2 && shift 2 ;;
		--cni) CNI=$2 && shift 2 ;;
		--cpu-manager) CPU_MANAGER=$2 && shift 2 ;;
		*) die "up: unknown argument $1 (want --nodes N, --proxy-mode iptables|nftables[,…], --cni bridge|ptp[,…], --cpu-manager none|static[,…])" ;;
		esac
	done
	local m
	for m in ${PROXY_MODE//,/ }; do
		case $m in
		iptables | nftables) ;;
		ipvs)
			[ -e /proc/net/ip_vs ] || die "up: --proxy-mode ipvs: kube-proxy's IPVS mode needs the kernel's ip_vs, which this kernel lacks"
			die "up: --proxy-mode ipvs: not offered yet (kube-proxy's IPVS mode also needs ipset)"
			;;
		*) die "up: --proxy-mode $PROXY_MODE: want iptables or nftables, or a list of them, one per node (iptables,nftables)" ;;
		esac
	done
	for m in ${CNI//,/ }; do
		case $m in
		bridge | ptp) ;;
		*) die "up: --cni $CNI: want bridge or ptp (Debian's CNI plugins), or a list of them, one per node (bridge,ptp)" ;;
		esac
	done
	for m in ${CPU_MANAGER//,/ }; do
		case $m in
		none) ;;
		static) [ "$(nproc)" -ge 2 ] || die "up: --cpu-manager static: the static policy keeps CPU 0 for the shared pool, and this machine has one CPU" ;;
		*) die "up: --cpu-manager $CPU_MANAGER: want none or static (the kubelet's CPU manager policy), or a list of them, one per node (none,static)" ;;
		esac
	done
	[ "$NODES" -ge 1 ] 2>/dev/null || die "up: --nodes $NODES: want a number of nodes"
	[ "$(id -u)" = 0 ] || die "up: run as root (the nodes are namespaces, cgroups and a bridge)"
	built || die "Kubernetes $VERSION is not built: make k8s"
	[ ! -e "$STATE/up" ] && [ ! -d "$RUN" ] || die "a cluster is up already (scripts/k8s.sh status; scripts/k8s.sh down ends it)"
	local start n
	start=$(date +%s.%N)
	plan
	mkdir -p "$STATE" "$RUN"
	echo "$NODES" >"$STATE/nodes"
	echo "$PROXY_MODE" >"$STATE/proxy-mode"
	echo "$CNI" >"$STATE/cni"
	echo "$CPU_MANAGER" >"$STATE/cpu-manager"
	touch "$STATE/up"
	save_sysctls
	pki
	kubeconfig admin admin
	kubeconfig controller-manager controller-manager
	kubeconfig scheduler scheduler
	kubeconfig kube-proxy kube-proxy
	for ((n = 1; n <= NODES; n++)); do
		kubeconfig "node$n" "node$n"
	done
	node_images
	net_up
	control_plane_up
	for ((n = 1; n <= NODES; n++)); do
		node_up "$n"
	done
	for ((n = 1; n <= NODES; n++)); do
		wait_for 240 "node $n" node_ready "$n" ||
			{ tail -n 30 "$STATE/node$n/kubelet.log" >&2; die "node $n did not become Ready in 60 s"; }
		wait_for 120 "kube-proxy" curl -sf "http://$(node_ip "$n"):10256/healthz" ||
			{ tail -n 20 "$STATE/node$n/kube-proxy.log" >&2; die "node $n's kube-proxy is not healthy in 30 s"; }
		# Where ctrbench on this machine finds the node's containerd, to
		# import its images into (as kind load does): no registry needed.
		# What the campaign's record says of the cluster (kubernetes.Info):
		# its kube-proxy mode, its CNI, and that its nodes are emulated.
		kubectl_ annotate node "$(node_name "$n")" --overwrite "$CONTAINERD_ANNOTATION=$RUN/node$n/containerd.sock" \
			"$REGISTRY_ANNOTATION=$K8S_GATEWAY:$REGISTRY_PORT" "$NETNS_ANNOTATION=/run/netns/$NS_PREFIX$n" "$LINK_ANNOTATION=$BRIDGE/ctrk8s-n$n" \
			"ctrbench.io/runc=$(runc --version | awk 'NR == 1 {print $3}')" \
			"ctrbench.io/cni-plugins=$(dpkg-query -W -f '${Version}' containernetworking-plugins 2>/dev/null || echo unknown)" \
			"ctrbench.io/emulated=network and mount namespaces on one machine (scripts/k8s.sh): the link between nodes is a veth pair and a bridge, not a NIC" >/dev/null
		# The node's kube-proxy mode, CNI and CPU manager policy, as labels:
		# the kubernetes platform's kube_proxy, cni and cpu_manager factors
		# place pods by them.
		kubectl_ label node "$(node_name "$n")" --overwrite "ctrbench.io/kube-proxy=$(node_proxy_mode "$n")" "ctrbench.io/cni=$(node_cni "$n")" \
			"ctrbench.io/cpu-manager=$(node_cpu_manager "$n")" >/dev/null
	done
	log "Kubernetes $VERSION up: $NODES nodes, kube-proxy $PROXY_MODE, CNI $CNI, CPU manager $CPU_MANAGER, in $(python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"
	log "KUBECONFIG=$STATE/admin.kubeconfig"
}

# cluster_load IMAGE…: the images, saved from the machine's Docker Engine,
# imported into every node's containerd.
cluster_load() {
	[ $# -gt 0 ] || die "load: name the images (from the machine's Docker Engine)"
	[ -e "$STATE/up" ] || die "load: no cluster is up (scripts/k8s.sh up)"
	NODES=$(cat "$STATE/nodes")
	local n tar=$STATE/load.tar
	docker save -o "$tar" "$@" || die "load: docker save $* failed"
	for ((n = 1; n <= NODES; n++)); do
		ctr_ "$n" images import "$tar" >/dev/null || { rm -f "$tar"; die "load: importing into node $n failed"; }
	done
	rm -f "$tar"
	log "loaded $* into $NODES nodes"
}

cluster_status() {
	if [ ! -e "$STATE/up" ]; then
		echo "no cluster"
		return 1
	fi
	NODES=$(cat "$STATE/nodes")
	echo "Kubernetes $VERSION, $NODES nodes, kube-proxy $(cat "$STATE/proxy-mode"), CNI $(cat "$STATE/cni"), CPU manager $(cat "$STATE/cpu-manager" 2>/dev/null || echo none)"
	echo "KUBECONFIG=$STATE/admin.kubeconfig"
	local f
	for f in "$RUN"/*.pid "$RUN"/node*/*.pid; do
		[ -e "$f" ] || continue
		if kill -0 "$(cat "$f")" 2>/dev/null; then
			echo "running  ${f#"$RUN"/}"
		else
			echo "EXITED   ${f#"$RUN"/}"
		fi
	done
	kubectl_ get nodes -o wide
}

# ---- down: also after a killed up ------------------------------------------

# stop PIDFILE: TERM, up to 5 s, then KILL.
stop() {
	local pid i
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# ours: processes whose command line names the cluster's directories
# (shims: -address $RUN/…), found by PID, never by name.
ours() {
	local p c
	for p in /proc/[0-9]*; do
		case ${p#/proc/} in "$$" | "$BASHPID") continue ;; esac
		c=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		case $c in *"$STATE/"* | *"$RUN/"*) echo "${p#/proc/}" ;; esac
	done
	return 0
}

kill_all() {
	local i pids n
	for ((i = 0; i < 20; i++)); do
		pids=$(
			ours
			for n in $(node_numbers); do cgroup_pids "$n"; done
			for n in "$RUN"/node*/holder.pid "$RUN"/*.pid; do if [ -f "$n" ]; then cat "$n"; fi; done
		)
		pids=$(echo "$pids" | sort -u | while read -r p; do if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then echo "$p"; fi; done)
		[ -z "$pids" ] && return 0
		kill -KILL $pids 2>/dev/null || true
		sleep 0.2
	done
	log "down: processes left: $pids"
}

# host_mounts: mounts of the cluster's directories in the machine's own
# mount namespace (a node's belong in the node's), deepest first.
host_mounts() {
	awk -v s="$STATE/" -v r="$RUN/" 'index($4, s) == 1 || index($5, s) == 1 || index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# node_numbers: the nodes there are traces of (state, namespaces, cgroups).
node_numbers() {
	{
		ls -d "$STATE"/node[0-9]* "$RUN"/node[0-9]* 2>/dev/null | sed 's/.*node//' || true
		ip netns list 2>/dev/null | sed -n "s/^$NS_PREFIX\([0-9]*\).*/\1/p"
		for h in $(every_hierarchy); do ls -d "$h/$CG_PREFIX"[0-9]* 2>/dev/null | sed "s|.*$CG_PREFIX||" || true; done
	} | sort -un
}

cluster_down() {
	local n h d
	# The kubelets and kube-proxies first (no kubelet restarts a pod), then
	# every process of the nodes' cgroups, containerd and its shims, the
	# holders, the control plane.
	for f in "$RUN"/node*/kubelet.pid "$RUN"/node*/kube-proxy.pid; do
		if [ -f "$f" ]; then stop "$f"; fi
	done
	kill_all
	for n in $(node_numbers); do
		for h in $(every_hierarchy); do
			if [ -d "$h/$CG_PREFIX$n" ]; then find "$h/$CG_PREFIX$n" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
		done
		ip netns del "$NS_PREFIX$n" 2>/dev/null || true
		ip link del "ctrk8s-n$n" 2>/dev/null || true
		# A delay line's pair a killed campaign left spliced into the link
		# (kubernetes: netlab.SpliceName).
		ip link del "ctbkd$n" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
	host_mounts | while read -r m; do umount -l "$m" && log "down: unmounted $m from the machine's mount namespace"; done
	if command -v iptables >/dev/null; then
		while iptables -w -D FORWARD "${FWD_RULE[@]}" 2>/dev/null; do :; done
	fi
	if [ -f "$STATE/sysctl.orig" ]; then
		sysctl -q -p "$STATE/sysctl.orig" >/dev/null || log "down: restoring $(tr '\n' ' ' <"$STATE/sysctl.orig") failed"
	fi
	if [ -f "$STATE/made-dirs" ]; then
		while read -r d; do rmdir "$d" 2>/dev/null || log "down: $d is not empty: left"; done <"$STATE/made-dirs"
	fi
	rm -rf "$STATE" "$RUN"
	local left
	left=$(
		for n in $(node_numbers); do echo "node $n"; done
		if ip link show "$BRIDGE" >/dev/null 2>&1; then echo "bridge $BRIDGE"; fi
		host_mounts
		ours
	)
	[ -z "$left" ] || die "down: left: $left"
	log "down: nothing of the cluster is left"
}
