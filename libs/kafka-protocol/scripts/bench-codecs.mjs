#!/usr/bin/env node
// Times the hot paths of the Kafka listener's codecs on the built package (build it first):
// reading a ProduceRequest, writing a ProduceResponse frame (size prefix, header, body), and
// writing a FetchResponse frame for a few partition counts and record sizes, in microseconds of
// CPU per message.
//   node libs/kafka-protocol/scripts/bench-codecs.mjs
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const kafka = require('../dist/index.js');
const iterationsTarget = 2_000_000; // partitions handled per case: enough for a steady figure

function produceRequest(partitions, recordsSizeBytes) {
  const request = kafka.defaultProduceRequest();
  request.acks = -1;
  request.timeoutMs = 30_000;
  request.topicData = [
    {
      ...kafka.defaultTopicProduceData(),
      name: 'orders',
      partitionData: Array.from({ length: partitions }, (_, index) => ({
        index,
        records: Buffer.alloc(recordsSizeBytes, index),
      })),
    },
  ];
  return request;
}

function fetchResponse(partitions, recordsSizeBytes) {
  const response = kafka.defaultFetchResponse();
  response.responses = [
    {
      ...kafka.defaultFetchableTopicResponse(),
      topic: 'orders',
      partitions: Array.from({ length: partitions }, (_, index) => ({
        ...kafka.defaultFetchResponsePartitionData(),
        partitionIndex: index,
        highWatermark: 1000n,
        lastStableOffset: 1000n,
        logStartOffset: 0n,
        records: Buffer.alloc(recordsSizeBytes, index),
      })),
    },
  ];
  return response;
}

function time(label, count, run) {
  for (let index = 0; index < count / 10; index++) run();
  // CPU time, not wall time: on a shared machine the process waits for a core now and then.
  const started = process.cpuUsage();
  for (let index = 0; index < count; index++) run();
  const used = process.cpuUsage(started);
  const microseconds = (used.user + used.system) / count;
  console.log(`${label.padEnd(44)} ${microseconds.toFixed(2).padStart(8)} µs/message`);
}

const produceResponse = kafka.defaultProduceResponse();
produceResponse.responses = [
  {
    ...kafka.defaultTopicProduceResponse(),
    name: 'orders',
    partitionResponses: [{ ...kafka.defaultPartitionProduceResponse(), baseOffset: 100n }],
  },
];
time('ProduceResponse v11 frame write, 1 partition', 500_000, () => {
  const writer = new kafka.KafkaWriter();
  const size = writer.reserveInt32();
  kafka.writeResponseHeader(writer, { correlationId: 5 }, 1);
  kafka.writeProduceResponse(writer, produceResponse, 11);
  writer.setInt32(size, writer.sizeBytes - 4);
  return writer.toBuffers();
});

for (const [partitions, recordsSizeBytes] of [
  [6, 200],
  [6, 16_384],
  [100, 1_000],
]) {
  const count = Math.round(iterationsTarget / partitions / 10);
  for (const version of [9, 12]) {
    const writer = new kafka.KafkaWriter();
    kafka.writeProduceRequest(writer, produceRequest(partitions, recordsSizeBytes), version);
    const bytes = writer.toBuffer();
    time(`ProduceRequest v${version} read, ${partitions} × ${recordsSizeBytes} B`, count, () =>
      kafka.readProduceRequest(new kafka.KafkaReader(bytes), version),
    );
  }
  for (const version of [12, 17]) {
    const response = fetchResponse(partitions, recordsSizeBytes);
    time(`FetchResponse v${version} write, ${partitions} × ${recordsSizeBytes} B`, count, () => {
      const writer = new kafka.KafkaWriter();
      const size = writer.reserveInt32();
      kafka.writeFetchResponse(writer, response, version);
      writer.setInt32(size, writer.sizeBytes - 4);
      return writer.toBuffers();
    });
  }
}
