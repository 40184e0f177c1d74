// Proves that any gRPC client understands the gateway without a copy of Spool's .proto files:
// grpcurl (a Go program on Go's protobuf runtime, which checks descriptors strictly; built by
// test/support/ensure-grpcurl.sh) lists every service a real gateway process serves, health and
// reflection included, describes each of them and calls grpc.health.v1.Health/Check and List.
// Before the fix the health descriptor served by reflection was malformed (a map entry named
// as protobufjs names it), so Go clients could neither describe nor call Health.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGatewayProcess } from './support/gateway-client';
import { ensureGrpcurl, grpcurl as runGrpcurl } from './support/grpcurl';
import type { ServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

let cluster: StorageTestCluster;
let gateway: ServiceProcess;

beforeAll(async () => {
  ensureGrpcurl();
  cluster = await StorageTestCluster.start(1);
  gateway = await startGatewayProcess(cluster.controller.grpcPort);
}, 300_000);

afterAll(async () => {
  gateway?.child.kill('SIGKILL');
  await gateway?.exited;
  await cluster?.stop();
});

function grpcurl(flags: string[], ...command: string[]): Promise<string> {
  return runGrpcurl(`127.0.0.1:${gateway.grpcPort}`, flags, ...command);
}

it('lists every service the gateway serves, health and reflection included', async () => {
  const listed = (await grpcurl([], 'list')).trim().split('\n').sort();
  expect(listed).toEqual(
    [
      'grpc.health.v1.Health',
      'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection',
      'spool.v1.GatewayService',
      'spool.v1.RecordService',
    ].sort(),
  );
  for (const service of listed) {
    const described = await grpcurl([], 'describe', service);
    expect(described).toContain(`${service} is a service:`);
  }
  // The type every error's status details carry (google.rpc.ErrorInfo) is described too.
  expect(await grpcurl([], 'describe', 'google.rpc.ErrorInfo')).toContain(
    'map<string, string> metadata = 3;',
  );
  expect(await grpcurl([], 'describe', 'grpc.health.v1.HealthListResponse')).toContain(
    'map<string, .grpc.health.v1.HealthCheckResponse> statuses = 1;',
  );
});

it('answers grpc.health.v1.Health/Check and List through reflection', async () => {
  expect(JSON.parse(await grpcurl([], 'grpc.health.v1.Health/Check'))).toEqual({
    status: 'SERVING',
  });
  expect(
    JSON.parse(
      await grpcurl(['-d', '{"service":"spool.v1.GatewayService"}'], 'grpc.health.v1.Health/Check'),
    ),
  ).toEqual({ status: 'SERVING' });
  const statuses = JSON.parse(await grpcurl([], 'grpc.health.v1.Health/List')) as {
    statuses: Record<string, { status: string }>;
  };
  expect(statuses.statuses['spool.v1.GatewayService']).toEqual({ status: 'SERVING' });
});
