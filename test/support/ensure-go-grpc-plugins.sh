#!/usr/bin/env bash
# Prints the folder holding protoc-gen-go and protoc-gen-go-grpc at pinned versions, built from
# the Go module proxy with `go install` the first time (seconds), then cached under
# ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}. `buf generate` runs them to make the record-level
# API's Go client (test/clients/go) from proto/. install-test-tools.sh calls this before the tests.
set -euo pipefail

protoc_gen_go_version=v1.36.12
protoc_gen_go_grpc_version=v1.6.2
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
install_dir="$tools_dir/go-grpc-plugins-$protoc_gen_go_version-$protoc_gen_go_grpc_version"

# The Go toolchain's standard place, for shells whose PATH lacks it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi

if [ ! -x "$install_dir/protoc-gen-go" ] || [ ! -x "$install_dir/protoc-gen-go-grpc" ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "ensure-go-grpc-plugins: the plugins are missing and there is no go to build them" >&2
    exit 1
  fi
  echo "ensure-go-grpc-plugins: building protoc-gen-go and protoc-gen-go-grpc (first time only)" >&2
  mkdir -p "$install_dir"
  GOFLAGS=-mod=mod GOBIN="$install_dir" \
    go install "google.golang.org/protobuf/cmd/protoc-gen-go@$protoc_gen_go_version" >&2
  GOFLAGS=-mod=mod GOBIN="$install_dir" \
    go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$protoc_gen_go_grpc_version" >&2
fi
echo "$install_dir"
