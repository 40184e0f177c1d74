#!/usr/bin/env bash
# Prints the Java classpath of test/support/kafka-message-codec/KafkaMessageCodec.java (Kafka's own
# serializers as a process, for the byte-for-byte tests of libs/kafka-protocol): the pinned
# kafka-clients jar (ensure-kafka-clients.sh), Jackson for its JSON converters, and the program's
# classes compiled with javac. The jars come from Maven Central with the machine's Maven and are
# checked against pinned SHA-256s; jars and classes are cached outside the clone, under
# ${SPOOL_TOOLS_DIR:-~/.cache/spool/tools}, and compiled again only when the source changes.
set -euo pipefail
cd "$(dirname "$0")/../.."

tools_dir="${SPOOL_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spool/tools}"
# Jackson 2, which kafka-clients' generated JSON converters are compiled against (the jar does not
# bring it: Kafka's own tools do). Any 2.x works; 2.21 is one that Maven Central serves here.
jackson=(
  "com.fasterxml.jackson.core:jackson-databind:2.21.3 f397563d8e67630c10cab8c2334ca0e55af832fa3ebde160a379c2c96d43bf25"
  "com.fasterxml.jackson.core:jackson-core:2.21.3 baf8b739e9d9b93bcdb33f25046bfdb8dbd74c97de2a8698539fbe0c7eeac0bb"
  "com.fasterxml.jackson.core:jackson-annotations:2.21 53ca085f4a150f703f49e1aabd935bd03b43e1ea3d55d135438292af22cef56b"
)

for tool in javac java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ensure-kafka-message-codec: $tool is missing (install-test-tools.sh installs a JDK and Maven)" >&2
    exit 1
  fi
done

classpath=$(bash test/support/ensure-kafka-clients.sh)
for entry in "${jackson[@]}"; do
  artifact=${entry% *}
  sha256=${entry#* }
  name=${artifact#*:}
  jar="$tools_dir/jackson/${name%%:*}-${name##*:}.jar"
  if [ ! -f "$jar" ]; then
    echo "ensure-kafka-message-codec: fetching $artifact with mvn (first time only)" >&2
    mkdir -p "$tools_dir/jackson"
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      "-Dartifact=$artifact:jar" "-DoutputDirectory=$tools_dir/jackson" >&2
  fi
  actual=$(sha256sum "$jar" | cut -d' ' -f1)
  if [ "$actual" != "$sha256" ]; then
    echo "ensure-kafka-message-codec: $jar has SHA-256 $actual, pinned $sha256; removing it" >&2
    rm -f "$jar"
    exit 1
  fi
  classpath="$classpath:$jar"
done

source=test/support/kafka-message-codec/KafkaMessageCodec.java
key=$( (cat "$source"; echo "$classpath") | sha256sum | cut -c1-16)
classes="$tools_dir/kafka-message-codec-$key"
if [ ! -f "$classes/KafkaMessageCodec.class" ]; then
  echo "ensure-kafka-message-codec: compiling $source" >&2
  rm -rf "$classes.tmp"
  mkdir -p "$classes.tmp"
  javac -nowarn -d "$classes.tmp" -cp "$classpath" "$source" >&2
  rm -rf "$classes"
  mv "$classes.tmp" "$classes"
fi
echo "$classes:$classpath"
