#!/usr/bin/env bash
# Prints the path of a helm binary at the pinned version, building it first when it is missing.
# Helm is a Go program and this machine reaches only package registries, so it is built from the
# Go module proxy with `go install` (a few minutes the first time, then cached under
# ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}). .ci/run calls this before the tests; the chart
# tests call it too, so a developer needs nothing but Go.
set -euo pipefail

helm_version=v3.22.0
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
install_dir="$tools_dir/helm-$helm_version"
helm="$install_dir/helm"

# The Go toolchain's standard place, for shells whose PATH lacks it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi

if [ ! -x "$helm" ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "ensure-helm: helm $helm_version is missing and there is no go to build it with" >&2
    exit 1
  fi
  echo "ensure-helm: building helm $helm_version with go install (first time only)" >&2
  mkdir -p "$install_dir"
  GOFLAGS=-mod=mod GOBIN="$install_dir" go install "helm.sh/helm/v3/cmd/helm@$helm_version" >&2
fi
echo "$helm"
