#!/usr/bin/env bash
# Prints the path of the k8s-strict checker (test/support/k8s-strict: strict decoding of rendered
# objects into the Kubernetes API's Go types), building it with the Go toolchain when the build
# for the current sources is missing. Its modules come from the Go module proxy (the ones helm
# already uses); the build is cached under ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}.
set -euo pipefail

source_dir="$(cd "$(dirname "$0")/k8s-strict" && pwd)"
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
source_hash="$(cat "$source_dir/main.go" "$source_dir/go.mod" "$source_dir/go.sum" | sha256sum | cut -c1-16)"
binary="$tools_dir/k8s-strict-$source_hash/k8s-strict"

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi

if [ ! -x "$binary" ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "ensure-k8s-strict: there is no go to build test/support/k8s-strict with" >&2
    exit 1
  fi
  echo "ensure-k8s-strict: building test/support/k8s-strict" >&2
  mkdir -p "$(dirname "$binary")"
  (cd "$source_dir" && GOFLAGS=-mod=mod go build -o "$binary.partial" . >&2)
  mv "$binary.partial" "$binary"
fi
echo "$binary"
