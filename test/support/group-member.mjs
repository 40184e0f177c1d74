// One consumer-group member as its own process, for tests that SIGKILL members. It joins the
// group through the gateway with the SDK (at-least-once: process, then auto commit), and prints
// one JSON line per event on stdout with the wall-clock time:
//   {"event":"assigned"|"revoked"|"lost","partitions":[{"topic","partition"}],"atMs"}
//   {"event":"record","partition","offset","value","atMs"}
// SIGTERM closes the consumer (commit, leave the group) and exits 0.
// Usage: node group-member.mjs <gateway host:port> <group> <topic> [sessionTimeoutMs]
import { Spool } from '@spool/client';

const [gateway, groupId, topic, sessionTimeoutMs = '6000'] = process.argv.slice(2);
if (gateway === undefined || groupId === undefined || topic === undefined) {
  console.error('usage: group-member.mjs <gateway> <group> <topic> [sessionTimeoutMs]');
  process.exit(2);
}

function emit(event) {
  process.stdout.write(`${JSON.stringify({ ...event, atMs: Date.now() })}\n`);
}

const partitionsOf = (partitions) =>
  partitions.map(({ topic: name, partition }) => ({ topic: name, partition }));

const spool = new Spool({ brokers: [gateway], clientId: `member-${process.pid}` });
const consumer = spool.consumer({
  groupId,
  autoOffsetReset: 'earliest',
  sessionTimeoutMs: Number(sessionTimeoutMs),
  autoCommitIntervalMs: 300,
});
await consumer.subscribe({
  topic,
  onPartitionsAssigned: (partitions) =>
    emit({ event: 'assigned', partitions: partitionsOf(partitions) }),
  onPartitionsRevoked: (partitions) =>
    emit({ event: 'revoked', partitions: partitionsOf(partitions) }),
  onPartitionsLost: (partitions) => emit({ event: 'lost', partitions: partitionsOf(partitions) }),
});

let closing = false;
process.on('SIGTERM', () => {
  if (closing) return;
  closing = true;
  consumer
    .close()
    .then(() => process.exit(0))
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
});

await consumer.run({
  eachMessage: async ({ partition, message }) => {
    emit({
      event: 'record',
      partition,
      offset: message.offset.toString(),
      value: message.value?.toString() ?? '',
    });
  },
});
