#!/usr/bin/env bash
# Installs or builds what `npm test` needs beyond Node.js, and does nothing where it is present:
# `npm test` runs it first, so the README's test command works on a fresh Debian machine, and
# .ci/run is nothing more than `npm ci && npm test`.
#
# What and why:
#   g++, make, python3   node-gyp builds the segment store's sendfile addon (its specs need it;
#                        `npm start` does not: without the addon the copy path is used)
#   etcd                 the metadata store's tests start real etcd processes on loopback ports
#   prometheus           promtool unit-tests deploy/prometheus/alerts.yaml, and the dashboard
#                        test runs every Grafana panel's query against a real Prometheus
#   openssl              the rack-lookup test's stand-in Kubernetes API needs a certificate
#   ip (iproute2)        the fault suite builds network namespaces
#   unshare (util-linux) the image-contents test gives each imitated pod a PID namespace
#   python3-venv         the record-level API's Python client runs in a virtual environment
#   kcat                 the Kafka listener's tests: an unmodified librdkafka client (metadata,
#                        produce, consume) against the gateway's Kafka port
#   grpcurl              the record-level API's reflection and shell tests; built like helm
#   python grpcio,       the record-level API's client tests: grpcio, grpcio-tools and
#   go grpc plugins      grpcio-status from PyPI in a cached virtual environment, protoc-gen-go
#                        and protoc-gen-go-grpc built like helm (google.golang.org/grpc itself
#                        comes from the Go module proxy when the Go client is built)
#   python               the Kafka listener's confluent-kafka test: confluent-kafka from PyPI (its
#   confluent-kafka      wheel bundles librdkafka) in a cached virtual environment
#   java, javac, mvn     the Kafka protocol codecs' byte-for-byte test runs Kafka's own serializers
#   (default-jdk-headless, from the pinned kafka-clients jar (Maven Central, with Maven), compiled by
#   maven)               ensure-kafka-message-codec.sh; Apache Kafka's tools and broker at the same
#                        version (ensure-kafka-tools.sh, every jar's SHA-256 pinned) for the Kafka
#                        listener's tests; both cached outside the clone
#   helm, k8s-strict     the chart tests; Go programs built from the Go module proxy at pinned
#                        versions (minutes the first time, then cached outside the clone)
#
# Debian packages need root (as CI and this project's machines run); elsewhere the script stops
# with the list of what is missing. Go 1.21 or later must be on PATH or in /usr/local/go: it
# fetches the newer toolchain the pinned tools ask for from the Go module proxy by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need g++ g++
need make make
need python3 python3
need etcd etcd-server
need promtool prometheus
need prometheus prometheus
need openssl openssl
need ip iproute2
need unshare util-linux
need java default-jdk-headless
need javac default-jdk-headless
need mvn maven
need kcat kcat
# Debian's python3 makes virtual environments only with python3-venv (ensurepip).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip' 2>/dev/null; then
  missing+=(python3-venv)
fi
# One package may provide two commands (promtool and prometheus).
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-tools: the tests need these Debian packages: ${missing[*]}" >&2
    echo "install-test-tools: install them (as root: apt-get install ${missing[*]}) and run again" >&2
    exit 1
  fi
  echo "install-test-tools: apt-get install ${missing[*]}" >&2
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi

# A machine that lacked the C toolchain at `npm ci` has no addon yet: build it now.
if [ ! -f libs/segment-store/build/Release/segment_store_native.node ]; then
  npm run build:native --workspace @spool/segment-store >&2
fi

bash test/support/ensure-helm.sh >/dev/null
bash test/support/ensure-k8s-strict.sh >/dev/null
bash test/support/ensure-grpcurl.sh >/dev/null
bash test/support/ensure-python-grpc.sh >/dev/null
bash test/support/ensure-python-kafka.sh >/dev/null
bash test/support/ensure-go-grpc-plugins.sh >/dev/null
bash test/support/ensure-kafka-message-codec.sh >/dev/null
bash test/support/ensure-kafka-tools.sh >/dev/null
echo "install-test-tools: every tool the tests need is here" >&2
