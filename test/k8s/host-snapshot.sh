#!/usr/bin/env bash
# Prints what up.sh may change on the host, in a stable order: links, addresses, routes, every
# iptables and ip6tables table, mounts, netfilter accounting objects, the kernel settings and host
# paths of lib.sh, kubepods cgroups, and processes that run a cluster binary. Taken before up.sh
# and after down.sh, the two must be equal (`diff` them).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
section() { printf '== %s\n' "$1"; }
section links; ip -o link show | sed -E 's/^[0-9]+: //; s/ qlen [0-9]+//; s/link\/ether [0-9a-f:]+ brd [0-9a-f:]+//' | awk '{ print $1, $2 }' | sort
section addresses; ip -o addr show | awk '{ print $2, $3, $4 }' | sort
section routes; ip route show table all | sort
for tool in iptables ip6tables; do
  for table in filter nat mangle raw; do section "$tool $table"; "$tool" -t "$table" -S 2>/dev/null; done
done
section mounts; awk '{ print $5, $9 }' /proc/self/mountinfo | sort
section nfacct; command -v nfacct >/dev/null && nfacct list 2>/dev/null | sed -n 's/.*= \(.*\);$/\1/p' | sort
section sysctls; for name in $SYSCTLS; do echo "$name=$(sysctl -n "$name" 2>/dev/null)"; done
section paths; for path in $HOST_PATHS; do [ -e "$path" ] && echo "$path"; done
section cgroups; find /sys/fs/cgroup/*/kubepods* -maxdepth 0 -type d 2>/dev/null
section processes
ps -eo args= | grep -E "^($K8S_BIN|$K8S_CACHE|containerd|etcd --name $NODE_NAME|kube|coredns|local-path)" | grep -v grep | sort
true
