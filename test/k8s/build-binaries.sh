#!/usr/bin/env bash
# Builds the Kubernetes binaries the harness runs, once, into a cache outside the clone
# (${SPOOL_K8S_CACHE:-~/.cache/spool/k8s}/bin), and does nothing for a binary already there.
# This machine reaches package registries only, so everything comes from the Go module proxy:
#   kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl
#       k8s.io/kubernetes at $K8S_VERSION, through a wrapper module (below)
#   coredns, local-path-provisioner   `go install pkg@version`
# Cold, on 2 cores, this takes about 15 minutes (kubelet alone about 7); afterwards 0 s.
# Usage: build-binaries.sh [name...]   (default: all of them)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Static binaries (they also go into scratch images: coredns, local-path-provisioner). Two
# compiles at a time and a lower priority keep a 2-core machine usable while they build.
export CGO_ENABLED=0 GOMAXPROCS=${GOMAXPROCS:-2} GOFLAGS="-p=2 -buildvcs=false"
all="kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl coredns local-path-provisioner"
mkdir -p "$K8S_BIN"

# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces the k8s.io/* staging modules
# with paths inside its own tree. A wrapper module requires it and points each of those modules
# at its published v0.<minor>.<patch> tag instead, which is the same source.
wrapper_module() {
  local dir=$K8S_CACHE/kbuild-$K8S_VERSION gomod
  if [ ! -f "$dir/go.sum" ]; then
    mkdir -p "$dir"
    gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -f "$gomod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"
    {
      printf 'module spool-k8s-build\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
      sed -n '/^replace (/,/^)/p' "$gomod" | grep '=>' |
        awk -v v="v0.${K8S_VERSION#v1.}" '{ print "\t" $1 " => " $1 " " v }'
      echo ')'
    } >"$dir/go.mod"
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for c in kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl; do
        printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"
      done
      echo ')'
    } >"$dir/tools.go"
    (cd "$dir" && GOFLAGS="$GOFLAGS -mod=mod" go mod tidy -e) || { rm -f "$dir/go.sum"; die "go mod tidy failed in $dir"; }
  fi
  echo "$dir"
}

build() {
  local name=$1 started=$SECONDS dir v=k8s.io/component-base/version minor
  case $name in
    kubelet | kube-apiserver | kube-controller-manager | kube-scheduler | kube-proxy | kubectl)
      dir=$(wrapper_module)
      minor=$(echo "$K8S_VERSION" | cut -d. -f2)
      # Without the version stamps the binaries call themselves v0.0.0 and kubelet's
      # registration is refused by the version skew check.
      (cd "$dir" && nice -n 10 go build -mod=mod -trimpath -tags providerless \
        -ldflags "-s -w -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" \
        -o "$K8S_BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name")
      mv "$K8S_BIN/$name.tmp" "$K8S_BIN/$name" ;;
    coredns)
      GOBIN=$K8S_BIN nice -n 10 go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION" ;;
    local-path-provisioner)
      GOBIN=$K8S_BIN nice -n 10 go install -trimpath -ldflags "-s -w" \
        "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION" ;;
    *) die "unknown binary '$name' (known: $all)" ;;
  esac
  log "built $name in $((SECONDS - started)) s"
}

for name in ${*:-$all}; do
  if [ -x "$K8S_BIN/$name" ]; then log "have $K8S_BIN/$name"; else build "$name"; fi
done
