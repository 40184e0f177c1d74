# Settings and helpers shared by the Kubernetes harness scripts. Sourced, never run.
# shellcheck shell=bash

K8S_VERSION=${K8S_VERSION:-v1.34.4}
COREDNS_VERSION=${COREDNS_VERSION:-v1.11.3}
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-v0.0.30}
# containerd looks for this sandbox image by name; it is built locally (images.sh), never pulled.
PAUSE_IMAGE=registry.k8s.io/pause:3.10

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_SRC=$REPO_ROOT/test/k8s
# Binaries, Go's caches and the add-on images outlive the clone (15 minutes of compiling);
# cluster state lives in the clone's .k8s/ (git-ignored), so a new clone starts from nothing.
K8S_CACHE=${SPOOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/k8s}
K8S_BIN=${K8S_BIN:-$K8S_CACHE/bin}
K8S_IMAGES=$K8S_CACHE/images
K8S_WORK=${K8S_WORK:-$REPO_ROOT/.k8s}
RUN=$K8S_WORK/run LOGS=$K8S_WORK/logs ETC=$K8S_WORK/etc VAR=$K8S_WORK/var PKI=$K8S_WORK/pki
STATE=$K8S_WORK/host-before-up
KUBECONFIG_FILE=$K8S_WORK/kubeconfig
CONTAINERD_SOCK=$RUN/containerd/containerd.sock
export PATH=$K8S_BIN:$PATH:/usr/local/go/bin

# Addresses. All from 198.18.0.0/15 (RFC 2544, for test networks), never a private range a real
# network may use. test/faults/harness/fault-network.ts keeps its networks out of all three.
NODE_NAME=spool-k8s-node
NODE_IF=spool-k8s0                    # the node's own interface (an empty bridge: no dummy driver)
NODE_IP=198.18.255.1
POD_CIDR=198.18.0.0/16                # the cluster's pod range
NODE_POD_CIDR=198.18.0.0/24           # this node's pods, on the CNI bridge
CNI_BRIDGE=spool-cni0
CNI_GATEWAY=198.18.0.1
SERVICE_CIDR=198.19.0.0/16
KUBERNETES_SERVICE_IP=198.19.0.1
DNS_SERVICE_IP=198.19.0.10
LOCAL_RANGE=198.18.0.0/15             # routed to the node interface: none of it leaves the host
# The cluster's etcd listens on loopback ports of its own: 2379/2380 belong to a user's or a
# test's etcd.
ETCD_CLIENT_PORT=12379
ETCD_PEER_PORT=12380
GUARD_CHAIN=SPOOL-K8S-LOCAL           # up.sh's own iptables chain (mangle FORWARD)
SMALL_VOLUMES_SIZE=96m                # the tmpfs behind the StorageClass spool-small
CNI_BIN_DIR=/usr/lib/cni              # Debian's containernetworking-plugins

# Paths containerd 1.6, kubelet and libcni use on the host whatever they are told (shim sockets in
# /run/containerd/s, /var/log/containers, /var/lib/cni). up.sh records which existed; down.sh
# removes the others.
HOST_PATHS="/run/containerd /var/log/pods /var/log/containers /var/lib/cni /var/lib/kubelet
/run/kubernetes /etc/kubernetes /opt/cni /opt/containerd /usr/libexec/kubernetes"
# Kernel settings kubelet, kube-proxy or the bridge plugin may change; down.sh puts them back.
SYSCTLS="net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet
net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables"
# Netfilter accounting objects kube-proxy creates and never deletes.
NFACCT_COUNTERS="ct_state_invalid_dropped_pkts localhost_nps_accepted_pkts"

log() { printf '%s [%s] %s\n' "$(date +%T)" "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# start NAME COMMAND...: runs COMMAND in the background, pid in $RUN/NAME.pid, output in
# $LOGS/NAME.log. Nothing happens while that pid lives, so up.sh can run again.
start() {
  local name=$1; shift
  if running "$name"; then return; fi
  nohup "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  log "started $name (pid $!)"
}
running() {
  local pid
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
# stop NAME: SIGTERM to the recorded pid, SIGKILL after 30 s.
stop() {
  local name=$1 pid i
  pid=$(cat "$RUN/$name.pid" 2>/dev/null) || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for i in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then log "$name (pid $pid) ignored SIGTERM for 30 s: SIGKILL"; kill -9 "$pid"; fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

# wait_for SECONDS WHAT COMMAND...: runs COMMAND once a second until it succeeds.
wait_for() {
  local limit=$1 what=$2 started=$SECONDS
  shift 2
  while [ $((SECONDS - started)) -lt "$limit" ]; do
    if "$@" >/dev/null 2>&1; then log "$what after $((SECONDS - started)) s"; return 0; fi
    sleep 1
  done
  die "no $what after ${limit} s"
}

kctl() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# buildah with its store in the cache (images survive a `k8s:down`; no mounts left: vfs).
buildah_cache() {
  buildah --root "$K8S_CACHE/buildah/root" --runroot "$K8S_CACHE/buildah/run" --storage-driver vfs "$@"
}

# debian_mirror: the URI this machine's apt sources use for its release (one-line .list files or
# deb822 .sources files), so debootstrap fetches from where apt-get does.
debian_mirror() {
  local suite
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk -v s="$suite" '$1 == "deb" { sub(/\[[^]]*\] */, ""); if ($3 == s) print $2 }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk -v s="$suite" 'function flush() { if (deb && ok && uri != "") print uri; deb = ok = 0; uri = "" }
        /^[ \t]*$/ { flush(); next }
        tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
        tolower($1) == "uris:" { uri = $2 }
        tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
        END { flush() }'
  } | head -1
}
