// Exactly once into a partition, end to end: an SDK producer with enableIdempotence sends
// numbered records through a proxy that loses a share of the gateway's answers (it cuts the
// connection instead of forwarding them), so batches the leader already wrote are sent again.
// Real processes: a controller, three storage nodes (RF 3), a coordinator handing out producer
// ids, a gateway. Every send must succeed in the end, the gateway must have seen more Produce
// calls than batches (retries happened), and each partition's log must hold every record
// exactly once, in the order sent.
import { Spool } from '@spool/client';
import { decodeRecordBatches } from '@spool/record-batch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayTestClient, startGatewayProcess } from './support/gateway-client';
import { ResponseDroppingProxy } from './support/response-dropping-proxy';
import { startServiceProcess, type ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

const topic = 'payments';
const partitionCount = 3;
const seed = Number(process.env.SPOOL_PROXY_SEED ?? Math.floor(Math.random() * 2 ** 31));
let cluster: StorageTestCluster;
const processes: ServiceProcess[] = [];
let gateway: ServiceProcess;
let proxy: ResponseDroppingProxy;

beforeAll(async () => {
  console.log(`response-dropping proxy seed ${seed} (SPOOL_PROXY_SEED replays it)`);
  cluster = await StorageTestCluster.start(3);
  const controllerAddress = `127.0.0.1:${cluster.controller.grpcPort}`;
  processes.push(
    await startServiceProcess('coordinator', ['--controller-addresses', controllerAddress]),
  );
  gateway = await startGatewayProcess(cluster.controller.grpcPort);
  processes.push(gateway);
  await cluster.createTopic(topic, partitionCount, 3);
  proxy = await ResponseDroppingProxy.start(
    { host: '127.0.0.1', port: gateway.grpcPort },
    { dropProbability: 0.2, seed },
  );
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  for (const service of processes) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
  await cluster?.stop();
});

async function produceCallsSeen(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.metricsPort}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (candidate) =>
        candidate.startsWith('spool_requests_total{') && candidate.includes('api="Produce"'),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('an idempotent producer through lost answers', () => {
  it('writes every record exactly once, in order', async () => {
    const spool = new Spool({ brokers: [proxy.address], clientId: 'exactly-once' });
    const producer = spool.producer({
      enableIdempotence: true,
      acks: 'all',
      lingerMs: 2,
      retries: 1_000,
      retryBackoffMs: 20,
      retryBackoffMaxMs: 200,
      requestTimeoutMs: 5_000,
    });
    const sent: string[][] = Array.from({ length: partitionCount }, () => []);
    const batches = 60;
    // One send at a time, so each batch is one Produce call and the gateway's count of Produce
    // calls above `batches` is the number of retries.
    for (let batch = 0; batch < batches; batch++) {
      const partition = batch % partitionCount;
      const values = Array.from({ length: 10 }, (_, index) => `pay-${batch}-${index}`);
      await producer.send({ topic, messages: values.map((value) => ({ value, partition })) });
      sent[partition]!.push(...values);
    }
    await producer.disconnect();
    proxy.stopDropping();
    console.log(
      `proxy cut ${proxy.dropped} connections with an answer lost, forwarded ${proxy.forwarded} chunks`,
    );
    expect(proxy.dropped).toBeGreaterThan(3);
    expect(await produceCallsSeen()).toBeGreaterThan(batches);

    const reader = new GatewayTestClient(`127.0.0.1:${gateway.grpcPort}`);
    try {
      for (let partition = 0; partition < partitionCount; partition++) {
        const fetched = await reader.call(reader.client.fetch, {
          partitions: [{ topic, partition, fetchOffset: 0n, partitionMaxBytes: 8 * 1024 * 1024 }],
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: 8 * 1024 * 1024,
        });
        const values = decodeRecordBatches(fetched.partitions[0]!.records).flatMap((decoded) =>
          decoded.records.map((record) => record.value!.toString()),
        );
        expect(values, `partition ${partition}`).toEqual(sent[partition]);
      }
    } finally {
      reader.close();
    }
  }, 180_000);
});
