#!/usr/bin/env bash
# The record-level API from the shell, with nothing but grpcurl and reflection (the README's
# commands): publishes keyed records, subscribes to the partition the first landed on and reads
# them back, and shows a bad call's status. record-clients.spec.ts runs it and checks its output.
#
# usage: record-api.sh GRPCURL GATEWAY TOPIC
set -euo pipefail
grpcurl="$1"
gateway="$2"
topic="$3"

echo "== publish"
"$grpcurl" -plaintext -d @ "$gateway" spool.v1.RecordService/Publish <<JSON
{
  "topic": "$topic",
  "idempotency_key": "shell-1",
  "records": [
    {"key": "$(printf 'user-1' | base64)", "value": "$(printf 'signed up' | base64)"},
    {"key": "$(printf 'user-1' | base64)", "value": "$(printf 'logged in' | base64)",
     "headers": [{"key": "source", "value": "$(printf 'shell' | base64)"}]}
  ]
}
JSON

echo "== subscribe"
# The partition murmur2("user-1") picks among the topic's partitions, from the first answer.
partition=$("$grpcurl" -plaintext -emit-defaults -d @ "$gateway" spool.v1.RecordService/Publish <<JSON | sed -n 's/.*"partition": \([0-9]*\).*/\1/p' | head -1
{"topic": "$topic", "idempotency_key": "shell-1", "records": [
  {"key": "$(printf 'user-1' | base64)", "value": "$(printf 'signed up' | base64)"},
  {"key": "$(printf 'user-1' | base64)", "value": "$(printf 'logged in' | base64)",
   "headers": [{"key": "source", "value": "$(printf 'shell' | base64)"}]}
]}
JSON
)
# A subscription never ends by itself; -max-time ends this one after the records came.
"$grpcurl" -plaintext -max-time 3 \
  -d "{\"topic\": \"$topic\", \"partition\": $partition, \"offset\": 0}" \
  "$gateway" spool.v1.RecordService/Subscribe || true

echo "== bad call"
"$grpcurl" -plaintext -d '{"topic": "no-such-topic", "records": [{"value": "eA=="}]}' \
  "$gateway" spool.v1.RecordService/Publish 2>&1 || true
