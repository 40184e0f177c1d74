#!/usr/bin/env bash
# Prints the path of the kafka-clients jar that libs/kafka-protocol/schemas/PINNED names, fetched
# from Maven Central with the machine's Maven (first time only) into a cache outside the clone,
# ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}/kafka-clients-<version>/, and checked against the
# pinned SHA-256 every time.
#   --extract-schemas  also replaces libs/kafka-protocol/schemas/*.json and README.md with the
#                      jar's common/message/ folder and prints the digest to pin in PINNED
#                      (what scripts/generate.mjs checks), for moving to another Kafka version.
# The generated codecs need none of this (the schemas are committed); the byte-for-byte tests
# against Kafka's own serializers do.
set -euo pipefail
cd "$(dirname "$0")/../.."

pinned=libs/kafka-protocol/schemas/PINNED
artifact=$(sed -n 's/^artifact=//p' "$pinned")
jar_sha256=$(sed -n 's/^jar-sha256=//p' "$pinned")
version=${artifact##*:}
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
install_dir="$tools_dir/kafka-clients-$version"
jar="$install_dir/kafka-clients-$version.jar"

if [ ! -f "$jar" ]; then
  if ! command -v mvn >/dev/null 2>&1; then
    echo "ensure-kafka-clients: $artifact is missing and there is no mvn to fetch it with" >&2
    exit 1
  fi
  echo "ensure-kafka-clients: fetching $artifact with mvn (first time only)" >&2
  mkdir -p "$install_dir"
  mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
    "-Dartifact=$artifact:jar" "-DoutputDirectory=$install_dir" >&2
fi
actual=$(sha256sum "$jar" | cut -d' ' -f1)
if [ "$actual" != "$jar_sha256" ]; then
  echo "ensure-kafka-clients: $jar has SHA-256 $actual, pinned $jar_sha256; removing it" >&2
  rm -f "$jar"
  exit 1
fi

if [ "${1:-}" = "--extract-schemas" ]; then
  schemas=libs/kafka-protocol/schemas
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  unzip -q -o "$(realpath "$jar")" 'common/message/*' -d "$scratch"
  rm -f "$schemas"/*.json
  cp "$scratch"/common/message/*.json "$scratch"/common/message/README.md "$schemas"/
  digest=$(cd "$schemas" && for file in $(ls -- *.json | LC_ALL=C sort); do
    echo "$(sha256sum "$file" | cut -d' ' -f1)  $file"
  done | sha256sum | cut -d' ' -f1)
  echo "ensure-kafka-clients: extracted $(ls "$schemas"/*.json | wc -l) schemas; pin schemas-sha256=$digest" >&2
fi
echo "$jar"
