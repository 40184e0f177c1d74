#!/usr/bin/env bash
# `npm run k8s:down`: stops what up.sh started, by the pids it recorded, and puts the host back as
# up.sh found it: pods torn down through CNI (which frees their veths), the containerd shims
# killed, every mount under .k8s/ unmounted, the node interface and the pods' bridge deleted, the
# iptables rules and chains added since up.sh removed, host paths and kernel settings restored.
# Idempotent, and safe when nothing runs. The cluster's data stays in .k8s/ (the next up.sh
# starts on it); `down.sh --purge` deletes it too. Binaries and images stay in the cache.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || die "needs root"

## Pods first, while kubelet runs: it tears each sandbox down through CNI DEL. No controller
## or scheduler may bring them back meanwhile.
if running kube-apiserver && running kubelet; then
  stop kube-controller-manager
  stop kube-scheduler
  kctl delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1
  for second in $(seq 90); do
    [ -z "$(ctr_k8s tasks ls -q 2>/dev/null)" ] && [ -z "$(kctl get pods -A -o name 2>/dev/null)" ] && break
    sleep 1
  done
  log "pods gone after ${second} s"
fi

## The processes, then kube-proxy's own clean-up of its rules.
for name in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver; do stop "$name"; done
[ -x "$K8S_BIN/kube-proxy" ] && "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1

## A container kubelet did not stop (it was not running): killed through containerd. Its network
## namespace goes with the mounts below, and its veth with it.
if running containerd; then
  for id in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks kill --signal SIGKILL "$id" >/dev/null 2>&1; done
  sleep 1
  for id in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks rm --force "$id" >/dev/null 2>&1; done
fi
stop containerd
# containerd leaves its shims running when it stops; each wrote its pid under containerd's state.
for file in "$RUN"/containerd/io.containerd.runtime.v2.task/*/*/shim.pid "$RUN"/containerd/io.containerd.runtime.v2.task/*/*/init.pid; do
  [ -f "$file" ] || continue
  pid=$(cat "$file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; log "killed ${file#"$RUN"/} ($pid)"; fi
done
stop etcd

## Mounts under .k8s/ (kubelet's, volumes, container root filesystems, shm, network
## namespaces), deepest first.
for mount in $(awk -v work="$K8S_WORK" '$5 == work || index($5, work "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
  umount "$mount" 2>/dev/null || umount -l "$mount"
done

## Network: the pods' bridge, the node interface (its route goes with it), the guard chain, and
## any KUBE-/CNI- rule or chain that was not there before up.sh.
ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && ip link del "$CNI_BRIDGE"
ip link show "$NODE_IF" >/dev/null 2>&1 && ip link del "$NODE_IF"
if iptables -t mangle -S "$GUARD_CHAIN" >/dev/null 2>&1; then
  iptables -t mangle -D FORWARD -j "$GUARD_CHAIN" 2>/dev/null
  iptables -t mangle -F "$GUARD_CHAIN"
  iptables -t mangle -X "$GUARD_CHAIN"
fi
# remove_new_rules TOOL TABLE RECORD: deletes the rules and chains of ours that RECORD lacks.
remove_new_rules() {
  local tool=$1 table=$2 record=$3 new chains rule chain
  new=$("$tool" -t "$table" -S 2>/dev/null | grep -E "KUBE-|CNI-|$CNI_BRIDGE" | grep -vxF -f "$record")
  [ -n "$new" ] || return 0
  chains=$(sed -n 's/^-N //p' <<<"$new")
  # A rule in a chain of ours goes with its chain; the others (jumps from built-in chains) one
  # by one, -A turned into -D.
  while read -r rule; do
    chain=$(awk '{ print $2 }' <<<"$rule")
    grep -qxF "$chain" <<<"$chains" && continue
    eval "$tool -t $table ${rule/#-A/-D}"
  done < <(grep '^-A ' <<<"$new")
  for chain in $chains; do "$tool" -t "$table" -F "$chain"; done
  for chain in $chains; do "$tool" -t "$table" -X "$chain"; done
}
if [ -f "$STATE/recorded" ]; then
  for tool in iptables ip6tables; do
    for table in filter nat mangle raw; do
      [ -f "$STATE/$tool-$table" ] && remove_new_rules "$tool" "$table" "$STATE/$tool-$table"
    done
  done

  ## Host paths, kube-proxy's accounting objects, kernel settings, kubelet's cgroups.
  for path in $HOST_PATHS; do
    if [ -e "$path" ] && ! grep -qxF "$path" "$STATE/host-paths"; then rm -rf "$path"; log "removed $path"; fi
  done
  find /var/log/containers -maxdepth 1 -type l -lname "$VAR/*" -delete 2>/dev/null
  rm -f /var/lib/cni/results/spool-k8s-pods-* 2>/dev/null
  # Deletable only once no rule uses them (kube-proxy's are gone by now). Through the netlink
  # tool of Debian's nfacct package when the machine has it.
  if command -v nfacct >/dev/null 2>&1; then
    for counter in $NFACCT_COUNTERS; do nfacct del "$counter" >/dev/null 2>&1; done
  fi
  while IFS== read -r name value; do
    [ "$(sysctl -n "$name" 2>/dev/null)" = "$value" ] || { sysctl -qw "$name=$value" && log "restored $name=$value"; }
  done <"$STATE/sysctls"
  find /sys/fs/cgroup/*/kubepods* -depth -type d 2>/dev/null | grep -vxF -f "$STATE/cgroups" | xargs -r rmdir 2>/dev/null
  rm -rf "$STATE"
fi

if [ "${1:-}" = --purge ]; then
  rm -rf "$K8S_WORK"
  log "deleted the cluster's data ($K8S_WORK)"
fi
log "down"
