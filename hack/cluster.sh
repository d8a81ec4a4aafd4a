#!/usr/bin/env bash
# A real two-node Kubernetes on this machine, for nap's end-to-end tests: Debian's etcd,
# containerd and runc, the Kubernetes binaries of `make kube-bins`, images written by
# hack/images (no registry, no Docker engine), Traefik as the ingress. Needs root.
#
# Node 1 (nap-node) is the host's network namespace: the control plane, a kubelet and a
# kube-proxy of hack/kube-version. Node 2 (nap-node2) is a network namespace of its own,
# joined to the host by a veth, with its own containerd, kubelet (of the older
# hack/kube-version-node2: mixed kubelet versions are real), containerd 2.x
# (hack/containerd-version-node2: it mounts image volumes; node 1's Debian 1.6 does not)
# and kube-proxy (its own iptables). The load balancer (nap-lb) is a third network
# namespace: one HAProxy per Service of type LoadBalancer, configured by hack/lb, which
# sends to the nodes' NodePorts and health-checks them as a cloud load balancer does, and
# one per Ingress of class alb, which sends to the pods as an AWS ALB in IP mode does.
# docs/testing.md draws it.
#
#   hack/cluster.sh up     start it (idempotent: a running cluster is left as it is)
#   hack/cluster.sh down   stop it and remove everything it made (idempotent)
#   hack/cluster.sh env    print KUBECONFIG=... for the running cluster
#   hack/cluster.sh contained   exit 0 when every cluster range routes to a local device
#   hack/cluster.sh slow-node2 [DURATION]   node 2's kube-proxy with that minSyncPeriod
#                          (none: its default, as up leaves it)
#   NAP_NODE2_KUBE_VERSION=v1.37.2 hack/cluster.sh up   node 2 on another kubelet
#   NAP_NODE2_EVICTION=hard hack/cluster.sh up   node 2's disk threshold a hard one
#   hack/cluster.sh node2-shutdown start|cancel   node 2's logind tells its kubelet that
#                          the node shuts down, or that the shutdown was cancelled
#                          (graceful node shutdown; the machine is never touched)
#
# Every setting here is one that was needed; docs/testing.md says why for each.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
D=${NAP_CLUSTER_DIR:-/tmp/nap-cluster}
NODE_IP=${NAP_NODE_IP:-10.77.0.1}        # a /32 on lo: the kubelet refuses loopback
POD_CIDR=10.78.0.0/16
NODE_POD_CIDR=10.78.0.0/24
SVC_CIDR=10.79.0.0/24
# Every range of the cluster is routed to the bridge before any component starts, so that
# an address nothing answers for yet (a ClusterIP kube-proxy has not programmed, a pod IP
# outside this node's /24) dies here instead of following the default route off the machine.
CONTAINED_CIDRS="$POD_CIDR $SVC_CIDR"
SVC_IP=10.79.0.1
DNS_IP=10.79.0.10                          # the cluster DNS's Service (hack/coredns.yaml)
NODE=nap-node
BRIDGE=nap0
# Node 2: a network namespace with no default route at all (nothing in it can leave the
# machine), a veth to the host, and routes for the pod ranges both ways.
NODE2=nap-node2
NETNS2=nap-node2
NODE2_IP=${NAP_NODE2_IP:-10.77.0.2}
NODE2_POD_CIDR=10.78.1.0/24
BRIDGE2=nap1    # inside the namespace
VETH2=nap-n2    # the host's end; the namespace's end is eth0
D2=$D/node2
# The load balancer: a network namespace with no default route, a veth to the host, its
# own address (the source of its checks and connections) and the Services' addresses,
# all in LB_CIDR, which the host and node 2 route to it.
LB_NETNS=nap-lb
LB_CIDR=10.77.1.0/24
LB_IP=10.77.1.1
VETH_LB=nap-lb  # the host's end; the namespace's end is eth0
ETCD_PORT=23790
# Image pulls stay on the machine: both nodes' containerd send every registry request
# through this proxy, on the node's loopback, where nothing listens. A pull of an image
# the lab did not load is refused there, and the registry it names is never looked up
# nor dialled (TestNoPullLeaves). Containerd 1.6 has no catch-all registry host
# (hosts.toml's _default came later), and its mirrors fall back to the registry itself;
# the proxy holds on both versions. Go never proxies loopback: a registry on it is
# dialled as it is.
REFUSING_REGISTRY=127.0.0.1:9
NO_PULL=(env HTTP_PROXY="http://$REFUSING_REGISTRY" HTTPS_PROXY="http://$REFUSING_REGISTRY" NO_PROXY= http_proxy= https_proxy= no_proxy=)
KCFG=$D/admin.kubeconfig
EGRESS_RULE=(-s "$POD_CIDR" ! -o "nap+" -m comment --comment "nap-lab: pods stay on this machine" -j DROP)

log() { echo "cluster: $*" >&2; }

# node2_version: node 2's kubelet and kube-proxy, hack/kube-version-node2 unless
# NAP_NODE2_KUBE_VERSION names another (an experiment on another kubelet: the
# terminations it starts, docs/downtime.md; make test runs the pinned one).
node2_version() { echo "${NAP_NODE2_KUBE_VERSION:-$(cat "$here/kube-version-node2")}"; }

bins() {
  out=$(bash "$here/kube-bins.sh" | tail -1)
  B=$out/bin
}

# more_bins: node 2's kubelet, kube-proxy and containerd 2.x, the ingress controller, and
# the third-party servers.
more_bins() {
  local out
  out=$(KUBE_VERSION=$(node2_version) KUBE_BINS="kubelet kube-proxy" bash "$here/kube-bins.sh" | tail -1)
  B2=$out/bin
  out=$(bash "$here/ingress-bins.sh" | tail -1)
  TRAEFIK=$out/bin/traefik
  out=$(bash "$here/dns-bins.sh" | tail -1)
  COREDNS=$out/bin/coredns
  out=$(bash "$here/containerd-bins.sh" | tail -1)
  C2=$out/bin
  NGINX=$(bash "$here/server-bins.sh" | tail -1)
  out=$(bash "$here/tool-bins.sh" | tail -1)
  HTTPBIN=$out/go-httpbin-$(awk '$1 == "go-httpbin" {print $3}' "$here/tool-versions")/go-httpbin
}

# ingress runs Traefik in the cluster (hack/ingress.yaml): the IngressClass "traefik",
# its controller in namespace nap-ingress on node 1, and the Service nap-ingress/traefik
# whose ClusterIP the tests send to. Waits until it answers.
ingress() {
  # The Gateway API's CRDs (standard channel) of the version Traefik implements
  # (hack/gateway-api-version), from the Go module proxy, before Traefik watches them.
  local gw
  gw=$(cd /tmp && go mod download -json "sigs.k8s.io/gateway-api@$(cat "$here/gateway-api-version")" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  [ -n "$gw" ] || { log "cannot download the Gateway API's CRDs"; exit 1; }
  "$B/kubectl" --kubeconfig "$KCFG" apply --server-side -f "$gw/config/crd/standard" >&2
  "$B/kubectl" --kubeconfig "$KCFG" wait --for=condition=Established --timeout=60s crd/gateways.gateway.networking.k8s.io crd/httproutes.gateway.networking.k8s.io >&2
  "$B/kubectl" --kubeconfig "$KCFG" apply -f "$here/ingress.yaml" >&2
  wait_for "the ingress controller" 90 "$B/kubectl" --kubeconfig "$KCFG" -n nap-ingress rollout status deployment/traefik --timeout=1s
}

# dns runs the cluster DNS, CoreDNS, in the cluster (hack/coredns.yaml): kubeadm's
# Deployment and Service kube-system/kube-dns at DNS_IP, the kubelets' clusterDNS. Waits
# until it is ready.
dns() {
  "$B/kubectl" --kubeconfig "$KCFG" apply -f "$here/coredns.yaml" >&2
  wait_for "the cluster DNS" 90 "$B/kubectl" --kubeconfig "$KCFG" -n kube-system rollout status deployment/coredns --timeout=1s
}

# put FILE writes stdin to FILE only when it differs: kube-proxy exits when its
# configuration file changes, so an `up` over a running cluster must not touch it.
put() {
  local tmp; tmp=$(mktemp)
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

running() { [ -f "$D/pids/$1" ] && kill -0 "$(cat "$D/pids/$1")" 2>/dev/null; }

# ctr_for SOCKET: the ctr of the containerd behind it (node 2's is containerd 2.x's).
ctr_for() {
  if [ "$1" = "$D2/containerd.sock" ] && [ -x "${C2:-}/ctr" ]; then echo "$C2/ctr"; else echo ctr; fi
}

start() { # name command...
  local name=$1; shift
  if running "$name"; then return; fi
  nohup "$@" >"$D/logs/$name.log" 2>&1 &
  echo $! >"$D/pids/$name"
}

# in2 runs a command in node 2's network namespace. Not `ip netns exec`: that also
# unshares the mount namespace and remounts /sys without its cgroup mounts, which the
# kubelet needs; nsenter switches the network namespace only.
IN2=(nsenter --net="/run/netns/$NETNS2")
in2() { "${IN2[@]}" "$@"; }
INLB=(nsenter --net="/run/netns/$LB_NETNS")
inlb() { "${INLB[@]}" "$@"; }

wait_for() { # what seconds command...
  local what=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  log "timed out after ${secs}s waiting for $what; logs in $D/logs"
  return 1
}

certs() {
  mkdir -p "$D/pki" && cd "$D/pki"
  [ -f ca.crt ] || openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3 -subj "/CN=nap-e2e-ca" 2>/dev/null
  sign() { # name subject [sans]; a certificate that exists is kept
    [ -f "$1.crt" ] && return
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    if [ -n "${3:-}" ]; then
      printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
    else
      printf 'extendedKeyUsage=clientAuth\n' >"$1.ext"
    fi
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3 -extfile "$1.ext" 2>/dev/null
  }
  sign apiserver "/CN=kube-apiserver" "IP:$NODE_IP,IP:127.0.0.1,IP:$SVC_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
  sign admin "/O=system:masters/CN=admin"
  sign controller-manager "/CN=system:kube-controller-manager"
  sign scheduler "/CN=system:kube-scheduler"
  sign kube-proxy "/CN=system:kube-proxy"
  sign kubelet "/O=system:nodes/CN=system:node:$NODE"
  sign kubelet-serving "/CN=$NODE" "IP:$NODE_IP,DNS:$NODE"
  sign kubelet2 "/O=system:nodes/CN=system:node:$NODE2"
  sign kubelet2-serving "/CN=$NODE2" "IP:$NODE2_IP,DNS:$NODE2"
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  [ -f sa.key ] || openssl genrsa -out sa.key 2048 2>/dev/null
  [ -f sa.pub ] || openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  cd - >/dev/null
}

kubeconfig() { # name cert
  "$B/kubectl" config set-cluster nap --server="https://$NODE_IP:6443" --certificate-authority="$D/pki/ca.crt" --embed-certs --kubeconfig="$D/$1.kubeconfig" >/dev/null
  "$B/kubectl" config set-credentials "$1" --client-certificate="$D/pki/$2.crt" --client-key="$D/pki/$2.key" --embed-certs --kubeconfig="$D/$1.kubeconfig" >/dev/null
  "$B/kubectl" config set-context nap --cluster=nap --user="$1" --kubeconfig="$D/$1.kubeconfig" >/dev/null
  "$B/kubectl" config use-context nap --kubeconfig="$D/$1.kubeconfig" >/dev/null
}

# contain makes the bridge (CNI's bridge plugin adopts an existing one) and routes every
# cluster range to it (up checks the result with contained, once node 2 is there too). Not a blackhole route: a host connect to a ClusterIP is routed
# before kube-proxy's DNAT, so the first look-up must find a device. An address that is
# not DNATed goes out on a bridge with no one behind it and times out locally.
contain() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  local cidr
  for cidr in $CONTAINED_CIDRS; do
    ip route replace "$cidr" dev "$BRIDGE"
  done
  # Node 1's pods have a default route (to the bridge, i.e. this host). Whatever they send
  # that would leave by another device than the cluster's own is dropped here.
  iptables -C FORWARD "${EGRESS_RULE[@]}" 2>/dev/null || iptables -I FORWARD 1 "${EGRESS_RULE[@]}"
}

# neigh_gc lets the kernel forget the pods that are gone. host-local hands an address
# out again once it has gone round the node's /24, to a pod with another MAC. Linux
# keeps a neighbour entry, with the old pod's MAC, for every address it has talked to,
# in every network namespace (the host, the ingress's pod), and collects the stale ones
# only when its table holds gc_thresh1 (128) entries. Below that, the new pod is
# unreachable from whoever remembers the old one until the entry is probed and fails:
# 22 s measured from the host (docs/testing.md); the bridge plugin announces no new
# pod. With gc_thresh1 0 an entry goes gc_stale_time (60 s) after its last use. The
# table is the machine's one; down restores its value.
neigh_gc() {
  [ -f "$D/gc_thresh1.before" ] || sysctl -n net.ipv4.neigh.default.gc_thresh1 > "$D/gc_thresh1.before"
  sysctl -qw net.ipv4.neigh.default.gc_thresh1=0
}

# contained says whether the last usable address of every cluster range routes to a
# device of this cluster (the bridge or lo). `ip route get` sends nothing.
contained() {
  local cidr last dev
  for cidr in $CONTAINED_CIDRS; do
    last=$(python3 -c 'import ipaddress,sys; n=ipaddress.ip_network(sys.argv[1]); print(n.network_address+n.num_addresses-2)' "$cidr")
    dev=$(ip route get "$last" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -1)
    case "$dev" in "$BRIDGE"|lo) ;; *) log "$last ($cidr) routes to '${dev:-nothing}'"; return 1 ;; esac
  done
  # Node 2's pods are reached through its veth; from inside node 2 every address outside
  # the cluster is unreachable (no default route).
  if ip netns list 2>/dev/null | grep -qw "$NETNS2"; then
    dev=$(ip route get "${NODE2_POD_CIDR%.*}.254" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -1)
    [ "$dev" = "$VETH2" ] || { log "$NODE2_POD_CIDR routes to '${dev:-nothing}', not $VETH2"; return 1; }
    if in2 ip route get 192.0.2.1 >/dev/null 2>&1; then log "node 2 has a route off the machine"; return 1; fi
  fi
  # The load balancers' range goes to their namespace, which has no route off the machine.
  if ip netns list 2>/dev/null | grep -qw "$LB_NETNS"; then
    last=$(python3 -c 'import ipaddress,sys; n=ipaddress.ip_network(sys.argv[1]); print(n.network_address+n.num_addresses-2)' "$LB_CIDR")
    dev=$(ip route get "$last" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -1)
    [ "$dev" = "$VETH_LB" ] || { log "$LB_CIDR routes to '${dev:-nothing}', not $VETH_LB"; return 1; }
    if inlb ip route get 192.0.2.1 >/dev/null 2>&1; then log "the load balancer has a route off the machine"; return 1; fi
  fi
  return 0
}

# node2net makes node 2's network namespace, its veth, its bridge and the routes between
# the nodes. Every route names its source address, so that a masqueraded connection
# between the nodes takes a node address, never one of the host's other interfaces.
node2net() {
  ip netns list | grep -qw "$NETNS2" || ip netns add "$NETNS2"
  ip link show "$VETH2" >/dev/null 2>&1 || ip link add "$VETH2" type veth peer name eth0 netns "$NETNS2"
  ip link set "$VETH2" up
  ip route replace "$NODE2_IP/32" dev "$VETH2" src "$NODE_IP"
  ip route replace "$NODE2_POD_CIDR" via "$NODE2_IP" dev "$VETH2" src "$NODE_IP"
  in2 ip link set lo up
  in2 ip -4 addr show dev eth0 | grep -q " $NODE2_IP/32" || in2 ip addr add "$NODE2_IP/32" dev eth0
  in2 ip link set eth0 up
  in2 ip link show "$BRIDGE2" >/dev/null 2>&1 || in2 ip link add "$BRIDGE2" type bridge
  in2 ip link set "$BRIDGE2" up
  in2 ip route replace "$NODE_IP/32" dev eth0 src "$NODE2_IP"
  in2 ip route replace "$NODE2_POD_CIDR" dev "$BRIDGE2"
  # The rest of the pod range and the Service range go to the host, which keeps them on
  # its own devices (contain). A ClusterIP needs a route before kube-proxy's DNAT.
  in2 ip route replace "$POD_CIDR" via "$NODE_IP" dev eth0 src "$NODE2_IP"
  in2 ip route replace "$SVC_CIDR" via "$NODE_IP" dev eth0 src "$NODE2_IP"
  in2 ip route replace "$LB_CIDR" via "$NODE_IP" dev eth0 src "$NODE2_IP"
  in2 sysctl -qw net.ipv4.ip_forward=1
}

# lbnet makes the load balancer's network namespace: its veth, its own address, routes
# to the nodes (node 2 through the host) and to the pods, and the host's route to LB_CIDR. hack/lb puts
# each Service's address on the namespace's lo.
lbnet() {
  ip netns list | grep -qw "$LB_NETNS" || ip netns add "$LB_NETNS"
  ip link show "$VETH_LB" >/dev/null 2>&1 || ip link add "$VETH_LB" type veth peer name eth0 netns "$LB_NETNS"
  ip link set "$VETH_LB" up
  ip route replace "$LB_CIDR" dev "$VETH_LB" src "$NODE_IP"
  inlb ip link set lo up
  inlb ip -4 addr show dev eth0 | grep -q " $LB_IP/32" || inlb ip addr add "$LB_IP/32" dev eth0
  inlb ip link set eth0 up
  inlb ip route replace "$NODE_IP/32" dev eth0 src "$LB_IP"
  inlb ip route replace "$NODE2_IP/32" via "$NODE_IP" dev eth0 src "$LB_IP"
  # Pod targets (an application load balancer, hack/lb/pods.go): the pods' addresses
  # through the host, which routes each node's range.
  inlb ip route replace "$POD_CIDR" via "$NODE_IP" dev eth0 src "$LB_IP"
}

# containerd_conf DIR POD_CIDR BRIDGE writes a node's containerd 1.6 configuration (v2):
# cgroupfs, runc, no negative oom_score_adj (no CAP_SYS_RESOURCE), and its CNI network.
containerd_conf() {
  local dir=$1 cidr=$2 bridge=$3
  put "$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
oom_score = 0
[grpc]
  address = "$dir/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/nap/pause:e2e"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
EOF
  put "$dir/cni/net.d/10-nap.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "nap", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$dir/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
EOF
}

# images NAME REF: NAME.new.tar, when there is one and it differs from NAME.tar, replaces
# it and is imported into both nodes' containerd; NAME.tar is imported into a node that
# lacks REF.
images() {
  local name=$1 ref=$2 sock fresh=0
  if [ -f "$name.new.tar" ] && ! cmp -s "$name.new.tar" "$name.tar"; then
    mv "$name.new.tar" "$name.tar"
    fresh=1
  fi
  rm -f "$name.new.tar"
  for sock in "$D/containerd.sock" "$D2/containerd.sock"; do
    local c; c=$(ctr_for "$sock")
    if [ $fresh -eq 1 ] || ! "$c" --address "$sock" -n k8s.io images ls -q | grep -q "$ref"; then
      "$c" --address "$sock" -n k8s.io images import "$name.tar" >&2
    fi
  done
}

# kubelet_conf DIR ADDRESS POD_CIDR CERT CGROUP_ROOT writes a node's kubelet configuration.
# syncFrequency 10s (the default is 1m): a pod's ConfigMap volume takes a change at the
# pod's next sync, and the live-wait tests wait for it (up to 89 s at the default).
kubelet_conf() {
  put "$1/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $2
authentication:
  x509: {clientCAFile: "$D/pki/ca.crt"}
  webhook: {enabled: true}
  anonymous: {enabled: false}
authorization: {mode: Webhook}
tlsCertFile: "$D/pki/$4-serving.crt"
tlsPrivateKeyFile: "$D/pki/$4-serving.key"
cgroupDriver: cgroupfs
cgroupRoot: $5
failCgroupV1: false
failSwapOn: false
seccompDefault: true
podCIDR: $3
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "${NODEFS_HARD:-1%}", imagefs.available: "1%"}
staticPodPath: "$1/manifests"
healthzBindAddress: 127.0.0.1
syncFrequency: 10s
resolvConf: ""
clusterDNS: ["$DNS_IP"]
clusterDomain: cluster.local
containerRuntimeEndpoint: "unix://$1/containerd.sock"${6:+
$6}
EOF
}

# proxy_conf DIR NODE_ADDRESS [MIN_SYNC] writes a node's kube-proxy configuration
# (iptables mode); MIN_SYNC sets minSyncPeriod (kube-proxy's default: 1s).
proxy_conf() {
  local slow=""
  [ -z "${3:-}" ] || slow=$'\n'"iptables: {minSyncPeriod: $3}"
  put "$1/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: $POD_CIDR
nodePortAddresses: ["$2/32"]
bindAddress: 127.0.0.1
healthzBindAddress: $2:10256
metricsBindAddress: 127.0.0.1:10249
clientConnection: {kubeconfig: "$D/kube-proxy.kubeconfig"}
conntrack: {maxPerCore: 0}$slow
EOF
}

# Node 2's kubelet keeps its pods' volumes on a file system of its own, NODE2_FS_MB
# big, in a file under the cluster folder (a loop device): its soft eviction threshold on
# it (kubelet_conf below) is then reached by a pod the tests control, filling an
# emptyDir, and never by the machine's own disk (TestKubeletTerminations).
NODE2_FS_MB=1024
node2fs() {
  mountpoint -q "$D2/kubelet" && return
  running kubelet-node2 && { log "node 2's kubelet runs without its file system: make cluster-down first"; exit 1; }
  truncate -s "${NODE2_FS_MB}M" "$D/node2-nodefs.img"
  mkfs.ext4 -q -F -m 0 "$D/node2-nodefs.img"
  mount -o loop "$D/node2-nodefs.img" "$D2/kubelet"
}

up() {
  [ "$(id -u)" -eq 0 ] || { log "needs root"; exit 1; }
  bins
  more_bins
  mkdir -p "$D"/{logs,pids,etcd,containerd,kubelet,cni/net.d,manifests} "$D2"/{containerd,kubelet,cni/net.d,manifests,pod-logs}
  node2fs
  if ! ip -4 addr show dev lo | grep -q " $NODE_IP/32"; then
    if ip route get "$NODE_IP" 2>/dev/null | grep -qv ' dev lo'; then
      ip route | grep -q "^${NODE_IP%.*}" && { log "$NODE_IP collides with a route; set NAP_NODE_IP"; exit 1; }
    fi
    ip addr add "$NODE_IP/32" dev lo
  fi
  contain
  neigh_gc
  node2net
  lbnet
  contained || { log "a cluster range routes off the machine"; exit 1; }
  # Node 2's kubelet puts its pods under a cgroup of its own, beside node 1's /kubepods.
  for cg in /sys/fs/cgroup/*/; do
    [ -f "$cg/cgroup.procs" ] && [ ! -f "$cg/cgroup.controllers" ] && mkdir -p "$cg/$NODE2"
  done
  certs
  for k in admin controller-manager scheduler kube-proxy kubelet kubelet2; do
    [ -f "$D/$k.kubeconfig" ] || kubeconfig "$k" "$k"
  done

  start etcd etcd --name nap --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
    --initial-cluster "nap=http://127.0.0.1:$((ETCD_PORT + 10))"

  containerd_conf "$D" "$NODE_POD_CIDR" "$BRIDGE"
  containerd_conf "$D2" "$NODE2_POD_CIDR" "$BRIDGE2"
  start containerd "${NO_PULL[@]}" containerd --config "$D/containerd.toml"
  # Node 2: containerd 2.x, its shim found on PATH; it migrates the version 2 configuration.
  start containerd-node2 "${NO_PULL[@]}" PATH="$C2:$PATH" "${IN2[@]}" "$C2/containerd" --config "$D2/containerd.toml"
  wait_for containerd 20 ctr --address "$D/containerd.sock" version
  wait_for containerd-node2 20 "$C2/ctr" --address "$D2/containerd.sock" version
  # Rebuilt at every up (Go's build cache makes that quick), imported when they changed,
  # so that a running cluster always has this tree's napctl and app.
  (cd "$repo" && go run ./hack/images -nginx "$NGINX" -httpbin "$HTTPBIN" -o "$D/images.new.tar")
  # The ingress and DNS images only when their binaries changed: 178 MB to compress.
  if [ "$TRAEFIK" -nt "$D/ingress.tar" ]; then
    (cd "$repo" && go run ./hack/images -traefik "$TRAEFIK" -o "$D/ingress.new.tar")
  fi
  if [ "$COREDNS" -nt "$D/dns.tar" ]; then
    (cd "$repo" && go run ./hack/images -coredns "$COREDNS" -o "$D/dns.new.tar")
  fi
  images "$D/images" nap-k8s/napctl:
  images "$D/ingress" nap/traefik:e2e
  images "$D/dns" nap/coredns:e2e

  wait_for etcd 20 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
  start kube-apiserver "$B/kube-apiserver" --advertise-address="$NODE_IP" --bind-address="$NODE_IP" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --service-cluster-ip-range="$SVC_CIDR" \
    --client-ca-file="$D/pki/ca.crt" --tls-cert-file="$D/pki/apiserver.crt" --tls-private-key-file="$D/pki/apiserver.key" \
    --kubelet-client-certificate="$D/pki/apiserver-kubelet-client.crt" --kubelet-client-key="$D/pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$D/pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --service-account-key-file="$D/pki/sa.pub" --service-account-signing-key-file="$D/pki/sa.key" \
    --service-account-issuer="https://kubernetes.default.svc" --authorization-mode=Node,RBAC \
    --allow-privileged=true --enable-admission-plugins=NodeRestriction
  wait_for kube-apiserver 60 "$B/kubectl" --kubeconfig "$KCFG" get --raw /readyz

  start kube-controller-manager "$B/kube-controller-manager" --kubeconfig="$D/controller-manager.kubeconfig" \
    --leader-elect=false --use-service-account-credentials --service-account-private-key-file="$D/pki/sa.key" \
    --root-ca-file="$D/pki/ca.crt" --cluster-signing-cert-file="$D/pki/ca.crt" --cluster-signing-key-file="$D/pki/ca.key" \
    --allocate-node-cidrs=false --cluster-cidr="$POD_CIDR" --service-cluster-ip-range="$SVC_CIDR" \
    --bind-address=127.0.0.1
  start kube-scheduler "$B/kube-scheduler" --kubeconfig="$D/scheduler.kubeconfig" --leader-elect=false --bind-address=127.0.0.1

  kubelet_conf "$D" "$NODE_IP" "$NODE_POD_CIDR" kubelet /
  # Node 2's kubelet (1.34) mounts image volumes behind their beta gate (on by default
  # from 1.35), with its containerd 2.x.
  # Node 2: a soft eviction threshold on its own file system (node2fs), reached in 2 s,
  # pods given at most 60 s to stop, its DiskPressure cleared 5 s after the pressure.
  # Its pods' logs in a directory of its own: a kubelet's garbage collection removes
  # every pod log directory of a pod it does not run, so two kubelets sharing
  # /var/log/pods empty each other's pods' logs (kubectl logs then returns nothing).
  # NAP_NODE2_EVICTION=hard makes that threshold a hard one (pods get 1 s), for an
  # experiment (docs/downtime.md); make test runs the soft one.
  local soft="evictionSoft: {nodefs.available: \"50%\"}
evictionSoftGracePeriod: {nodefs.available: 2s}
evictionMaxPodGracePeriod: 60" hard=""
  case ${NAP_NODE2_EVICTION:-soft} in
    soft) ;;
    hard) soft="" hard=50% ;;
    *) log "NAP_NODE2_EVICTION=$NAP_NODE2_EVICTION: want soft or hard"; exit 2 ;;
  esac
  NODEFS_HARD=$hard kubelet_conf "$D2" "$NODE2_IP" "$NODE2_POD_CIDR" kubelet2 "/$NODE2" "featureGates: {ImageVolume: true}
podLogsDir: \"$D2/pod-logs\"${soft:+
$soft}
evictionPressureTransitionPeriod: 5s
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 10s"
  start kubelet "$B/kubelet" --config="$D/kubelet.yaml" --kubeconfig="$D/kubelet.kubeconfig" \
    --root-dir="$D/kubelet" --node-ip="$NODE_IP" --hostname-override="$NODE"
  # Node 2's graceful node shutdown talks to the lab's own logind (hack/logind: a bus of
  # its own, never the machine's), which a test tells to announce a shutdown and to
  # cancel it (TestKubeletTerminations). The kubelet only ever sees that bus: without it, it
  # fails to connect rather than reach the machine's.
  mkdir -p "$D/bin"
  (cd "$repo" && go build -o "$D/bin/logind" ./hack/logind)
  start logind-node2 "$D/bin/logind" --dir "$D2/logind" --dbus-daemon "$(command -v dbus-daemon || echo /usr/bin/dbus-daemon)" --max-delay 5m
  wait_for "node 2's logind" 30 test -S "$D2/logind/bus.sock"
  start kubelet-node2 env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$D2/logind/bus.sock" "${IN2[@]}" "$B2/kubelet" --config="$D2/kubelet.yaml" --kubeconfig="$D/kubelet2.kubeconfig" \
    --root-dir="$D2/kubelet" --node-ip="$NODE2_IP" --hostname-override="$NODE2"

  proxy_conf "$D" "$NODE_IP"
  proxy_conf "$D2" "$NODE2_IP"
  start kube-proxy "$B/kube-proxy" --config="$D/kube-proxy.yaml" --hostname-override="$NODE"
  start kube-proxy-node2 "${IN2[@]}" "$B2/kube-proxy" --config="$D2/kube-proxy.yaml" --hostname-override="$NODE2"

  local n
  for n in "$NODE" "$NODE2"; do
    wait_for "node $n Ready" 60 bash -c "'$B/kubectl' --kubeconfig '$KCFG' get node $n -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"
  done
  ingress
  dns
  wait_for "default ServiceAccount" 60 "$B/kubectl" --kubeconfig "$KCFG" -n default get serviceaccount default
  # The load balancers: hack/lb, built once per up, runs one HAProxy per Service of
  # type LoadBalancer and per Ingress of class alb in the load balancer's namespace.
  mkdir -p "$D/bin" "$D/lb"
  (cd "$repo" && go build -o "$D/bin/lb" ./hack/lb)
  start lb "$D/bin/lb" --kubeconfig "$KCFG" --netns "$LB_NETNS" --range "$LB_CIDR" --dir "$D/lb" --source "$LB_IP" \
    --haproxy "$(command -v haproxy || echo /usr/sbin/haproxy)"
  log "up: KUBECONFIG=$KCFG"
  echo "KUBECONFIG=$KCFG"
}

down() {
  [ "$(id -u)" -eq 0 ] || { log "needs root"; exit 1; }
  bins || true
  set +e +o pipefail # best effort, step by step; what is left is reported at the end
  # Pods first, through the kubelet, while it runs: their containers and netns go cleanly.
  local procs="lb kube-proxy kube-proxy-node2 kubelet kubelet-node2 logind-node2 kube-scheduler kube-controller-manager kube-apiserver"
  for p in $procs; do
    if running "$p"; then kill "$(cat "$D/pids/$p")" 2>/dev/null || true; fi
  done
  local v2 cache
  v2=$(cat "$here/containerd-version-node2")
  cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
  [ -x "$cache/containerd/$v2/bin/ctr" ] && C2="$cache/containerd/$v2/bin"
  for sock in "$D/containerd.sock" "$D2/containerd.sock"; do
    [ -S "$sock" ] || continue
    local ctl; ctl=$(ctr_for "$sock")
    for c in $("$ctl" --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      "$ctl" --address "$sock" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
    done
    sleep 1
    for c in $("$ctl" --address "$sock" -n k8s.io containers ls -q 2>/dev/null); do
      "$ctl" --address "$sock" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1 || true
      "$ctl" --address "$sock" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true
    done
  done
  for p in containerd containerd-node2 etcd; do
    if running "$p"; then kill "$(cat "$D/pids/$p")" 2>/dev/null || true; fi
  done
  for p in $procs containerd containerd-node2 etcd; do
    if [ -f "$D/pids/$p" ]; then
      pid=$(cat "$D/pids/$p")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io -id .* -address $D/containerd.sock" 2>/dev/null || true
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io -id .* -address $D2/containerd.sock" 2>/dev/null || true
  [ -n "${B:-}" ] && [ -x "$B/kube-proxy" ] && "$B/kube-proxy" --cleanup >/dev/null 2>&1 || true
  # The iptables chains that CNI's bridge/portmap and the kubelet made.
  for table in nat filter mangle; do
    iptables -t "$table" -S 2>/dev/null | grep -E 'CNI-|KUBE-' | grep '^-A' | sed 's/^-A/-D/' |
      while read -r rule; do eval iptables -t "$table" "$rule" 2>/dev/null || true; done
    iptables -t "$table" -S 2>/dev/null | grep -E '^-N (CNI-|KUBE-)' | awk '{print $2}' |
      while read -r ch; do iptables -t "$table" -F "$ch" 2>/dev/null || true; done
    iptables -t "$table" -S 2>/dev/null | grep -E '^-N (CNI-|KUBE-)' | awk '{print $2}' |
      while read -r ch; do iptables -t "$table" -X "$ch" 2>/dev/null || true; done
  done
  while iptables -D FORWARD "${EGRESS_RULE[@]}" 2>/dev/null; do :; done
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do ip netns del "$ns" 2>/dev/null || true; done
  # The load balancers (hack/lb stops its HAProxies when it stops; these are what a
  # killed one left), their namespace, veth and route.
  pkill -f "haproxy -f $D/lb/" 2>/dev/null || true
  ip netns del "$LB_NETNS" 2>/dev/null || true
  ip link del "$VETH_LB" 2>/dev/null || true
  ip route del "$LB_CIDR" 2>/dev/null || true
  # Node 2's namespace, and with it its iptables, its bridge and the veth's other end.
  ip netns del "$NETNS2" 2>/dev/null || true
  ip link del "$VETH2" 2>/dev/null || true
  ip route del "$NODE2_POD_CIDR" 2>/dev/null || true
  ip route del "$NODE2_IP/32" 2>/dev/null || true
  ip addr del "$NODE_IP/32" dev lo 2>/dev/null || true
  # What the kubelet and containerd mounted under the cluster folder, and their cgroups.
  if [ -d "$D" ]; then
    grep " $D" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/"$NODE2"; do
    [ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  [ -f "$D/gc_thresh1.before" ] && sysctl -qw net.ipv4.neigh.default.gc_thresh1="$(cat "$D/gc_thresh1.before")"
  rm -rf "$D" /var/lib/cni/networks/nap 2>/dev/null || true
  # Last, once nothing can send to the cluster's ranges any more: the bridge and with it
  # the routes that kept them on the machine.
  ip link del "$BRIDGE" 2>/dev/null || true
  left=()
  pgrep -f "$D" >/dev/null && left+=("processes: $(pgrep -f "$D" | tr '\n' ' ')")
  ip -4 addr show dev lo | grep -q " $NODE_IP/32" && left+=("$NODE_IP on lo")
  ip link show "$BRIDGE" >/dev/null 2>&1 && left+=("bridge $BRIDGE")
  ip link show "$VETH2" >/dev/null 2>&1 && left+=("veth $VETH2")
  ip netns list 2>/dev/null | grep -qw "$NETNS2" && left+=("network namespace $NETNS2")
  ip netns list 2>/dev/null | grep -qw "$LB_NETNS" && left+=("network namespace $LB_NETNS")
  ip link show "$VETH_LB" >/dev/null 2>&1 && left+=("veth $VETH_LB")
  pgrep -f "haproxy -f $D/lb/" >/dev/null && left+=("HAProxy")
  ls -d /sys/fs/cgroup/*/"$NODE2" >/dev/null 2>&1 && left+=("cgroups $NODE2")
  losetup -a 2>/dev/null | grep -q "$D/node2-nodefs.img" && left+=("a loop device on $D/node2-nodefs.img")
  for cidr in $CONTAINED_CIDRS $NODE2_POD_CIDR $NODE2_IP/32 $LB_CIDR; do
    ip route show "$cidr" | grep -q . && left+=("route $cidr")
  done
  iptables-save 2>/dev/null | grep -qE '(KUBE|CNI)-' && left+=("iptables chains")
  iptables-save 2>/dev/null | grep -q 'nap-lab' && left+=("iptables rule nap-lab")
  grep -q " $D" /proc/mounts && left+=("mounts under $D")
  [ -e "$D" ] && left+=("$D")
  if [ ${#left[@]} -gt 0 ]; then
    log "down, but left behind: ${left[*]}"
    exit 1
  fi
  log "down: nothing left behind"
}

# slow_node2 DURATION restarts node 2's kube-proxy with minSyncPeriod DURATION ("" for
# its default): a slowed traffic path, whose rules lag each change by up to DURATION.
# Waits until it serves again.
slow_node2() {
  [ "$(id -u)" -eq 0 ] || { log "needs root"; exit 1; }
  bins
  more_bins
  local pid; pid=$(cat "$D/pids/kube-proxy-node2" 2>/dev/null || true)
  proxy_conf "$D2" "$NODE2_IP" "$1"
  # It may exit by itself on a changed configuration; either way it must be gone before
  # start, which leaves a running one alone.
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  start kube-proxy-node2 "${IN2[@]}" "$B2/kube-proxy" --config="$D2/kube-proxy.yaml" --hostname-override="$NODE2"
  wait_for "node 2's kube-proxy" 30 in2 curl -sf "http://$NODE2_IP:10256/healthz"
  log "node 2's kube-proxy: minSyncPeriod ${1:-1s (default)}"
}

# node2_shutdown start|cancel: SIGUSR1 or SIGUSR2 to node 2's logind (hack/logind), which
# sends its kubelet PrepareForShutdown(true) or (false).
node2_shutdown() {
  local sig
  case "$1" in
    start) sig=USR1 ;;
    cancel) sig=USR2 ;;
    *) echo "usage: $0 node2-shutdown start|cancel" >&2; exit 2 ;;
  esac
  running logind-node2 || { log "node 2's logind is not running: make cluster-up"; exit 1; }
  kill -s "$sig" "$(cat "$D/pids/logind-node2")"
}

case "${1:-}" in
  up) up ;;
  slow-node2) slow_node2 "${2:-}" ;;
  node2-shutdown) node2_shutdown "${2:-}" ;;
  down) down ;;
  # What the lab's logs say went wrong, printed before a failed run tears it down: the
  # API server's failed webhook calls (a missed admission's cause), the last 40.
  failures) grep -h "Failed calling webhook" "$D/logs/kube-apiserver.log" 2>/dev/null | tail -n 40 || true ;;
  env) echo "KUBECONFIG=$KCFG" ;;
  contained) contained ;;
  *) echo "usage: $0 up|down|env|contained|failures|slow-node2 [DURATION]|node2-shutdown start|cancel" >&2; exit 2 ;;
esac
