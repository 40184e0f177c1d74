#!/usr/bin/env bash
# Prints the path of a grpcurl binary at the pinned version, building it first when it is
# missing. grpcurl is the command-line gRPC client the record-level API's shell tests and the
# README use; it is a Go program, built from the Go module proxy with `go install` (under a
# minute the first time, then cached under ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}), as
# ensure-helm.sh builds helm. install-test-tools.sh calls this before the tests.
set -euo pipefail

grpcurl_version=v1.9.4
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
install_dir="$tools_dir/grpcurl-$grpcurl_version"
grpcurl="$install_dir/grpcurl"

# The Go toolchain's standard place, for shells whose PATH lacks it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi

if [ ! -x "$grpcurl" ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "ensure-grpcurl: grpcurl $grpcurl_version is missing and there is no go to build it with" >&2
    exit 1
  fi
  echo "ensure-grpcurl: building grpcurl $grpcurl_version with go install (first time only)" >&2
  mkdir -p "$install_dir"
  GOFLAGS=-mod=mod GOBIN="$install_dir" \
    go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$grpcurl_version" >&2
fi
echo "$grpcurl"
