#!/usr/bin/env bash
# Prints the path of a Python interpreter with grpcio, grpcio-tools (protoc and the gRPC Python
# plugin) and grpcio-status from PyPI at pinned versions, in a virtual environment made the first
# time (seconds) and then cached under ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}. The record-level
# API's Python client test generates its stubs from proto/ with these and runs with this
# interpreter. install-test-tools.sh calls this before the tests.
set -euo pipefail

grpcio_version=1.85.1
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
venv="$tools_dir/python-grpc-$grpcio_version"
python="$venv/bin/python"

if [ ! -x "$python" ] || ! "$python" -c 'import grpc, grpc_tools, grpc_status' 2>/dev/null; then
  if ! command -v python3 >/dev/null 2>&1; then
    echo "ensure-python-grpc: python3 is missing" >&2
    exit 1
  fi
  echo "ensure-python-grpc: installing grpcio $grpcio_version into $venv (first time only)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$python" -m pip install --quiet --disable-pip-version-check \
    "grpcio==$grpcio_version" "grpcio-tools==$grpcio_version" "grpcio-status==$grpcio_version" \
    "protobuf==7.36.2" "googleapis-common-protos==1.76.0" >&2
fi
echo "$python"
