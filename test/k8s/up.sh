#!/usr/bin/env bash
# `npm run k8s:up`: a real single-node Kubernetes on this machine, for test/k8s/suite and for
# anyone who wants to try the chart: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd + runc, kubelet, kube-proxy (iptables), a bridge CNI, CoreDNS and
# the local-path volume provisioner. Every process runs from this script with a pid file under
# .k8s/run; every file it writes is under .k8s/ except the few paths in HOST_PATHS (lib.sh).
# Idempotent: what already runs is left alone. down.sh undoes all of it.
# The last line printed (stdout) is the kubeconfig's path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
started=$SECONDS
[ "$(id -u)" = 0 ] || die "needs root (it creates interfaces, iptables rules, mounts and cgroups)"

## Debian packages, Go binaries (built once, cached outside the clone) and the add-on images.
packages=()
for pair in containerd:containerd runc:runc ctr:containerd etcd:etcd-server buildah:buildah \
  iptables:iptables ip6tables:iptables ip:iproute2 openssl:openssl conntrack:conntrack \
  debootstrap:debootstrap nfacct:nfacct \
  "$CNI_BIN_DIR/bridge:containernetworking-plugins"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "${pair%%:*}" ] || packages+=("${pair#*:}")
done
if [ "${#packages[@]}" -gt 0 ]; then
  mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
  log "apt-get install ${packages[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
fi
"$K8S_SRC/build-binaries.sh"
"$K8S_SRC/images.sh"
mkdir -p "$RUN" "$LOGS" "$ETC/cni" "$VAR" "$PKI"

## What the host looks like before anything is changed, recorded once: down.sh restores it.
if [ ! -f "$STATE/recorded" ]; then
  mkdir -p "$STATE"
  for path in $HOST_PATHS; do [ -e "$path" ] && echo "$path"; done >"$STATE/host-paths" || true
  for name in $SYSCTLS; do value=$(sysctl -n "$name" 2>/dev/null) && echo "$name=$value"; done >"$STATE/sysctls" || true
  find /sys/fs/cgroup/*/kubepods* -type d >"$STATE/cgroups" 2>/dev/null || true
  for tool in iptables ip6tables; do
    for table in filter nat mangle raw; do "$tool" -t "$table" -S >"$STATE/$tool-$table" 2>/dev/null || true; done
  done
  touch "$STATE/recorded"
fi

## The node's address, on an interface of its own. This kernel has no dummy driver; an empty
## bridge does the same. All of 198.18.0.0/15 is routed to it, so a pod or Service address that
## nothing owns dies here instead of going to the default gateway. (The pods' /24 on the CNI
## bridge and a fault run's /24 have longer prefixes and win.)
if ! ip link show "$NODE_IF" >/dev/null 2>&1; then
  ip link add "$NODE_IF" type dummy 2>/dev/null || ip link add "$NODE_IF" type bridge
  ip addr add "$NODE_IP/32" dev "$NODE_IF"
  ip link set "$NODE_IF" up
  ip route add "$LOCAL_RANGE" dev "$NODE_IF" src "$NODE_IP"
fi
# Pods talk to each other and to this machine, and nothing is forwarded between the pods' bridge
# and any other interface. In mangle, because kube-proxy puts ACCEPT rules first in filter.
if ! iptables -t mangle -S "$GUARD_CHAIN" >/dev/null 2>&1; then
  iptables -t mangle -N "$GUARD_CHAIN"
  iptables -t mangle -A "$GUARD_CHAIN" -i "$CNI_BRIDGE" -o "$CNI_BRIDGE" -j RETURN
  iptables -t mangle -A "$GUARD_CHAIN" -i "$CNI_BRIDGE" -j DROP
  iptables -t mangle -A "$GUARD_CHAIN" -o "$CNI_BRIDGE" -j DROP
  iptables -t mangle -I FORWARD 1 -j "$GUARD_CHAIN"
fi

## Certificates and kubeconfigs, once: a CA, a serving certificate for the apiserver, a client
## certificate per component.
certificate() { # NAME COMMON_NAME [ORGANIZATION] [SUBJECT_ALT_NAMES]
  local subject="/CN=$2" extensions="basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth,serverAuth"
  [ -n "${3:-}" ] && subject="/O=$3/CN=$2"
  [ -n "${4:-}" ] && extensions="$extensions\nsubjectAltName=$4"
  openssl genrsa -out "$PKI/$1.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$1.key" -subj "$subject" -out "$PKI/$1.csr"
  openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -out "$PKI/$1.crt" -extfile <(printf "$extensions") 2>/dev/null
}
if [ ! -f "$KUBECONFIG_FILE" ]; then
  openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -nodes -key "$PKI/ca.key" -subj /CN=spool-k8s-ca -days 3650 -out "$PKI/ca.crt"
  openssl genrsa -out "$PKI/service-accounts.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/service-accounts.key" -pubout -out "$PKI/service-accounts.pub" 2>/dev/null
  certificate apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:$NODE_NAME,IP:127.0.0.1,IP:$NODE_IP,IP:$KUBERNETES_SERVICE_IP"
  certificate apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  certificate admin spool-k8s-admin system:masters
  certificate controller-manager system:kube-controller-manager
  certificate scheduler system:kube-scheduler
  certificate proxy system:kube-proxy
  certificate kubelet "system:node:$NODE_NAME" system:nodes
  for user in controller-manager scheduler proxy kubelet admin; do
    file=$ETC/$user.kubeconfig
    [ "$user" = admin ] && file=$KUBECONFIG_FILE.tmp
    kctl config --kubeconfig="$file" set-cluster spool-k8s --server="https://$NODE_IP:6443" \
      --certificate-authority="$PKI/ca.crt" --embed-certs=true >/dev/null
    kctl config --kubeconfig="$file" set-credentials "$user" --client-certificate="$PKI/$user.crt" \
      --client-key="$PKI/$user.key" --embed-certs=true >/dev/null
    kctl config --kubeconfig="$file" set-context spool-k8s --cluster=spool-k8s --user="$user" >/dev/null
    kctl config --kubeconfig="$file" use-context spool-k8s >/dev/null
    chmod 600 "$file"
  done
  # Last, so a kubeconfig on disk means every certificate is there.
  mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"
fi

## Configuration files.
# Bridge CNI: a pod's only route is to 198.18.0.0/15 (no default route, so nothing it sends can
# leave the machine) and nothing is masqueraded.
cat >"$ETC/cni/10-spool-bridge.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "spool-k8s-pods", "plugins": [
  {"type": "bridge", "bridge": "$CNI_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$VAR/cni-ipam",
            "ranges": [[{"subnet": "$NODE_POD_CIDR", "gateway": "$CNI_GATEWAY"}]],
            "routes": [{"dst": "$LOCAL_RANGE"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
# containerd: its root and state in .k8s/; restrict_oom_score_adj because this host denies
# CAP_SYS_RESOURCE (no lowering of oom_score_adj), disable_apparmor because it has no AppArmor,
# runc because crun refuses this host's hybrid cgroup v1.
containerd config default 2>/dev/null | sed \
  -e "s#^root = .*#root = \"$VAR/containerd\"#" \
  -e "s#^state = .*#state = \"$RUN/containerd\"#" \
  -e "/^\[grpc\]/,/^\[/ s#^  address = .*#  address = \"$CONTAINERD_SOCK\"#" \
  -e 's#disable_apparmor = false#disable_apparmor = true#' \
  -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' \
  -e 's#netns_mounts_under_state_dir = false#netns_mounts_under_state_dir = true#' \
  -e "s#sandbox_image = .*#sandbox_image = \"$PAUSE_IMAGE\"#" \
  -e "s#bin_dir = \"/opt/cni/bin\"#bin_dir = \"$CNI_BIN_DIR\"#" \
  -e "s#conf_dir = \"/etc/cni/net.d\"#conf_dir = \"$ETC/cni\"#" \
  -e "s#            Root = \"\"#            Root = \"$RUN/runc\"#" \
  -e "s#path = \"/opt/containerd\"#path = \"$VAR/containerd-opt\"#" >"$ETC/containerd.toml"
grep -q "disable_apparmor = true" "$ETC/containerd.toml" || die "containerd's default configuration changed shape; check $ETC/containerd.toml"
cat >"$ETC/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
# No systemd on this host.
cgroupDriver: cgroupfs
# No CAP_SYS_RESOURCE: kubelet may not give itself -999.
oomScoreAdj: 0
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
clusterDNS: [$DNS_SERVICE_IP]
clusterDomain: cluster.local
# Pods never see the host's resolvers, so no name lookup leaves the machine.
resolvConf: ''
failSwapOn: false
podLogsDir: $VAR/pod-logs
volumePluginDir: $VAR/kubelet-plugins
# Images cannot be pulled again: never garbage-collect them.
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
YAML

## etcd (Debian's; 3.4 serves kube-apiserver 1.34) and containerd.
mkdir -p "$VAR/etcd"
start etcd etcd --name "$NODE_NAME" --data-dir "$VAR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT"
start containerd containerd --config "$ETC/containerd.toml"
wait_for 30 "containerd's socket" ctr --address "$CONTAINERD_SOCK" version

## The add-on images, imported when containerd lacks them.
present=$(ctr_k8s images ls -q)
for archive in "$K8S_IMAGES"/*.oci.tar; do
  ref=$(tar -xOf "$archive" index.json | sed -n 's/.*"org.opencontainers.image.ref.name":"\([^"]*\)".*/\1/p')
  grep -qxF "$ref" <<<"$present" || ctr_k8s images import "$archive" >/dev/null
done

## The control plane, on the node's address or loopback, never on 0.0.0.0.
export GOMAXPROCS=2
start kube-apiserver kube-apiserver --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=6443 \
  --service-cluster-ip-range="$SERVICE_CIDR" --service-node-port-range=30000-32767 \
  --client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/service-accounts.pub" --service-account-signing-key-file="$PKI/service-accounts.key" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true
wait_for 90 "kube-apiserver ready" kctl get --raw /readyz
start kube-controller-manager kube-controller-manager --bind-address=127.0.0.1 \
  --kubeconfig="$ETC/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$ETC/controller-manager.kubeconfig" --authorization-kubeconfig="$ETC/controller-manager.kubeconfig" \
  --service-account-private-key-file="$PKI/service-accounts.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --use-service-account-credentials=true --cluster-cidr="$POD_CIDR" \
  --service-cluster-ip-range="$SERVICE_CIDR" --leader-elect=false
start kube-scheduler kube-scheduler --bind-address=127.0.0.1 --kubeconfig="$ETC/scheduler.kubeconfig" \
  --authentication-kubeconfig="$ETC/scheduler.kubeconfig" --authorization-kubeconfig="$ETC/scheduler.kubeconfig" \
  --leader-elect=false

## The node. kube-proxy leaves conntrack's sysctls alone (no CAP to set them anyway) and opens
## NodePorts on the node's address only, so it needs no route_localnet.
start kubelet kubelet --config="$ETC/kubelet.yaml" --kubeconfig="$ETC/kubelet.kubeconfig" \
  --root-dir="$VAR/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"
GOMAXPROCS=1 start kube-proxy kube-proxy --kubeconfig="$ETC/proxy.kubeconfig" \
  --hostname-override="$NODE_NAME" --bind-address="$NODE_IP" --cluster-cidr="$POD_CIDR" \
  --proxy-mode=iptables --oom-score-adj=0 --conntrack-max-per-core=0 \
  --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0 \
  --nodeport-addresses="$NODE_IP/32" --healthz-bind-address=127.0.0.1:10256 \
  --metrics-bind-address=127.0.0.1:10249
wait_for 120 "node $NODE_NAME Ready" kctl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s

## Add-ons: DNS and dynamically provisioned volumes.
mkdir -p "$VAR/local-path" "$VAR/small-volumes"
# The StorageClass spool-small's volumes live on a tmpfs of SMALL_VOLUMES_SIZE, so one can
# really fill up (local-path does not enforce a claim's size); down.sh unmounts it with the rest.
if ! mountpoint -q "$VAR/small-volumes"; then
  mount -t tmpfs -o "size=$SMALL_VOLUMES_SIZE,mode=0755" spool-k8s-small "$VAR/small-volumes"
fi
sed -e "s#@DNS_SERVICE_IP@#$DNS_SERVICE_IP#" -e "s#@COREDNS_VERSION@#$COREDNS_VERSION#" \
  "$K8S_SRC/manifests/coredns.yaml" | kctl apply -f - >/dev/null
sed -e "s#@LOCAL_PATH_DIR@#$VAR/local-path#" -e "s#@SMALL_VOLUMES_DIR@#$VAR/small-volumes#" \
  -e "s#@LOCAL_PATH_VERSION@#$LOCAL_PATH_VERSION#" \
  "$K8S_SRC/manifests/local-path-storage.yaml" | kctl apply -f - >/dev/null
wait_for 180 "CoreDNS available" kctl -n kube-system wait --for=condition=Available deploy/coredns --timeout=1s
wait_for 120 "local-path-provisioner available" kctl -n local-path-storage wait --for=condition=Available \
  deploy/local-path-provisioner --timeout=1s
log "cluster up in $((SECONDS - started)) s (kubectl: $K8S_BIN/kubectl)"
echo "$KUBECONFIG_FILE"
