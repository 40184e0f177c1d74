#!/usr/bin/env bash
# Prints the path of a Python interpreter with confluent-kafka from PyPI at a pinned version (its
# wheel bundles librdkafka), in a virtual environment made the first time (seconds) and then
# cached under ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}. The Kafka listener's confluent-kafka test
# (test/kafka/confluent-kafka.spec.ts) runs test/kafka/confluent_kafka_client.py with it.
# install-test-tools.sh calls this before the tests.
set -euo pipefail

confluent_kafka_version=2.16.1
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
venv="$tools_dir/python-confluent-kafka-$confluent_kafka_version"
python="$venv/bin/python"

if [ ! -x "$python" ] || ! "$python" -c 'import confluent_kafka' 2>/dev/null; then
  if ! command -v python3 >/dev/null 2>&1; then
    echo "ensure-python-kafka: python3 is missing" >&2
    exit 1
  fi
  echo "ensure-python-kafka: installing confluent-kafka $confluent_kafka_version into $venv (first time only)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$python" -m pip install --quiet --disable-pip-version-check \
    "confluent-kafka==$confluent_kafka_version" >&2
fi
echo "$python"
