// Proves every service process has the operational surface a Kafka operator expects before it
// does anything else: it starts on free loopback ports, answers the standard gRPC health service
// with SERVING, lists its services through gRPC reflection, serves Prometheus metrics with the
// default process metrics and /readyz 200, exits 0 within 5 s of SIGTERM, refuses a bad
// configuration value with a non-zero exit and a message naming the setting, and exits 1 with
// the address, setting and errno when a port it must listen on is taken.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as net from 'node:net';
import * as path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/controller-client';
import {
  spawnService,
  startServiceProcess,
  workspaceRoot,
  type ServiceName,
  type ServiceProcess,
} from './support/service-process';

const services: ServiceName[] = ['controller', 'storage-node', 'coordinator', 'gateway'];
// The Spool gRPC services each process registers; reflection must list exactly these.
const servedServices: Record<ServiceName, string[]> = {
  controller: ['spool.v1.ControllerService'],
  'storage-node': ['spool.v1.StorageService'],
  coordinator: ['spool.v1.CoordinatorService'],
  gateway: ['spool.v1.GatewayService', 'spool.v1.RecordService'],
};

const loaderOptions = { keepCase: true, longs: String, enums: String, defaults: true };
const healthPackage = grpc.loadPackageDefinition(
  protoLoader.loadSync(
    path.join(workspaceRoot, 'node_modules/grpc-health-check/proto/health/v1/health.proto'),
    loaderOptions,
  ),
) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } };
const reflectionPackage = grpc.loadPackageDefinition(
  protoLoader.loadSync(
    path.join(
      workspaceRoot,
      'node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto',
    ),
    loaderOptions,
  ),
) as unknown as {
  grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
};

function checkHealth(port: number, service = ''): Promise<string> {
  const client = new healthPackage.grpc.health.v1.Health(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  );
  return new Promise((resolve, reject) => {
    (
      client as unknown as {
        check: (r: object, o: object, cb: (e: Error | null, v: { status: string }) => void) => void;
      }
    ).check({ service }, { deadline: Date.now() + 5_000 }, (error, response) => {
      client.close();
      if (error) reject(error);
      else resolve(response.status);
    });
  });
}

function listServices(port: number): Promise<string[]> {
  const client = new reflectionPackage.grpc.reflection.v1.ServerReflection(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  );
  return new Promise((resolve, reject) => {
    const stream = (
      client as unknown as { serverReflectionInfo: () => grpc.ClientDuplexStream<object, never> }
    ).serverReflectionInfo();
    stream.on(
      'data',
      (response: { list_services_response?: { service: Array<{ name: string }> } }) => {
        resolve(response.list_services_response?.service.map((entry) => entry.name) ?? []);
        stream.end();
        client.close();
      },
    );
    stream.on('error', reject);
    stream.write({ list_services: '' });
  });
}

// A storage node, a coordinator and a gateway are ready only once they have the controller's
// metadata, so they get a controller.
let controller: ServiceProcess | undefined;
beforeAll(async () => {
  controller = await startServiceProcess('controller');
});
afterAll(async () => {
  controller?.child.kill('SIGTERM');
  await controller?.exited;
});

function argsFor(name: ServiceName): string[] {
  if (name === 'gateway')
    return ['--controller-addresses', `127.0.0.1:${controller!.grpcPort}`, '--kafka-port', '0'];
  if (name === 'coordinator')
    return ['--controller-addresses', `127.0.0.1:${controller!.grpcPort}`];
  if (name !== 'storage-node') return [];
  return [
    '--controller-addresses',
    `127.0.0.1:${controller!.grpcPort}`,
    '--data-port',
    '0',
    '--broker-id',
    '0',
    '--data-dir',
    mkdtempSync(path.join(tmpdir(), 'spool-lifecycle-')),
  ];
}

describe.each(services)('%s process', (name) => {
  it('serves health, reflection, metrics and readiness, then stops cleanly on SIGTERM', async () => {
    const service = await startServiceProcess(name, argsFor(name));
    await eventually(async () => {
      expect((await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`)).status).toBe(200);
    }, 10_000);
    try {
      expect(await checkHealth(service.grpcPort)).toBe('SERVING');
      for (const served of servedServices[name]) {
        expect(await checkHealth(service.grpcPort, served)).toBe('SERVING');
      }
      const listed = await listServices(service.grpcPort);
      expect(listed).toContain('grpc.health.v1.Health');
      expect(listed).toContain('grpc.reflection.v1.ServerReflection');
      expect(listed.filter((entry) => entry.startsWith('spool.')).sort()).toEqual(
        servedServices[name],
      );

      const metrics = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(
        /^process_cpu_seconds_total\{service="[a-z-]+"\} [\d.e+-]+$/m,
      );
      expect((await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).status).toBe(200);
    } finally {
      const stoppedAt = Date.now();
      service.child.kill('SIGTERM');
      const exitCode = await service.exited;
      expect(exitCode).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    }
  });

  it('exits 1 at once, naming the address and the setting, when its port is taken', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      for (const setting of ['grpc', 'metrics'] as const) {
        const flags =
          setting === 'grpc'
            ? ['--grpc-port', String(port), '--metrics-port', '0']
            : ['--grpc-port', '0', '--metrics-port', String(port)];
        const startedAt = Date.now();
        const { exited, stdout } = spawnService(name, [...argsFor(name), ...flags]);
        expect(await exited).toBe(1);
        expect(Date.now() - startedAt).toBeLessThan(15_000);
        const fatal = stdout.find((line) => line.includes('"level":"fatal"'));
        expect(fatal).toContain(`127.0.0.1:${port} (setting ${setting}.port): EADDRINUSE`);
      }
    } finally {
      taken.close();
    }
  });

  it('refuses a bad configuration value naming the setting', async () => {
    const { exited, stderr } = spawnService(name, ['--grpc-port', 'seventy']);
    expect(await exited).not.toBe(0);
    expect(stderr.join('\n')).toMatch(
      /grpc\.port \(--grpc-port from flag\): "seventy"; expected an integer from 0 to 65535/,
    );

    const fromEnvironment = spawnService(name, [], { SPOOL_LOG_LEVEL: 'loud' });
    expect(await fromEnvironment.exited).not.toBe(0);
    expect(fromEnvironment.stderr.join('\n')).toMatch(
      /log\.level \(SPOOL_LOG_LEVEL from environment\): "loud"/,
    );
  });
});
