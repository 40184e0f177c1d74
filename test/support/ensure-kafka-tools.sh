#!/usr/bin/env bash
# Prints the Java classpath of Apache Kafka's own tools and broker at the pinned version
# (test/support/kafka-tools/pom.xml: kafka-tools and kafka_2.13, with every runtime dependency),
# fetched from Maven Central with the machine's Maven (first time only) into a cache outside the
# clone, ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}/kafka-tools-<pom digest>/, and checked jar by
# jar against test/support/kafka-tools/SHA256SUMS. The tests run the tools as
# `java -cp <classpath> <main class>` (test/support/kafka-tools.ts names the classes).
#   --update-sums  writes SHA256SUMS from a fresh resolution (after changing the pom's versions)
set -euo pipefail
cd "$(dirname "$0")/../.."

pom=test/support/kafka-tools/pom.xml
sums=test/support/kafka-tools/SHA256SUMS
tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
install_dir="$tools_dir/kafka-tools-$(sha256sum "$pom" | cut -c1-16)"

for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ensure-kafka-tools: $tool is missing (install-test-tools.sh installs a JDK and Maven)" >&2
    exit 1
  fi
done

if [ ! -f "$install_dir/complete" ] || [ "${1:-}" = "--update-sums" ]; then
  echo "ensure-kafka-tools: fetching Kafka's tools with mvn (first time only)" >&2
  rm -rf "$install_dir"
  mkdir -p "$install_dir"
  mvn -q -B -f "$pom" org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime "-DoutputDirectory=$install_dir/lib" >&2
  if [ "${1:-}" = "--update-sums" ]; then
    (cd "$install_dir/lib" && sha256sum -- *.jar | LC_ALL=C sort -k2) > "$sums"
    echo "ensure-kafka-tools: wrote $sums" >&2
  fi
  # Every jar pinned, and no jar that is not: a changed resolution must be looked at.
  actual=$(cd "$install_dir/lib" && ls -- *.jar | LC_ALL=C sort)
  expected=$(awk '{ print $2 }' "$sums" | LC_ALL=C sort)
  if [ "$actual" != "$expected" ]; then
    echo "ensure-kafka-tools: the resolved jars differ from $sums:" >&2
    diff <(echo "$expected") <(echo "$actual") >&2 || true
    rm -rf "$install_dir"
    exit 1
  fi
  if ! (cd "$install_dir/lib" && sha256sum --quiet -c "$OLDPWD/$sums" >&2); then
    echo "ensure-kafka-tools: a jar does not match $sums; removing the download" >&2
    rm -rf "$install_dir"
    exit 1
  fi
  touch "$install_dir/complete"
fi
awk -v lib="$install_dir/lib" '{ printf "%s%s/%s", (NR > 1 ? ":" : ""), lib, $2 } END { print "" }' "$sums"
