// A coordinator and a gateway in front of a StorageTestCluster, and an SDK client on the
// gateway: what the specs that drive a storage cluster through the SDK and the CLI start. If
// either process fails to start, the other is stopped too, so a failed start leaves nothing
// running.
import { Spool, type Admin } from '@spool/client';
import { eventually } from './controller-client';
import { startServiceProcess, type ServiceProcess } from './service-process';
import type { StorageTestCluster } from './storage-cluster';

export interface FrontEnds {
  readonly coordinator: ServiceProcess;
  readonly gateway: ServiceProcess;
  readonly spool: Spool;
  readonly admin: Admin;
  /** host:port of the gateway's gRPC, for the CLI's --gateway. */
  readonly gatewayAddress: string;
  stop(): Promise<void>;
}

async function kill(processes: ReadonlyArray<ServiceProcess | undefined>): Promise<void> {
  for (const process of processes) {
    process?.child.kill('SIGKILL');
    await process?.exited;
  }
}

export async function startFrontEnds(
  storage: StorageTestCluster,
  clientId: string,
): Promise<FrontEnds> {
  const started = await Promise.allSettled([
    startServiceProcess('coordinator', [
      ...['--controller-addresses', storage.controllerAddresses],
      ...['--coordinator-id', 'coordinator-0', '--group-consumer-heartbeat-interval-ms', '500'],
    ]),
    startServiceProcess('gateway', ['--controller-addresses', storage.controllerAddresses]),
  ]);
  const [coordinator, gateway] = started.map((result) =>
    result.status === 'fulfilled' ? result.value : undefined,
  );
  const failed = started.find((result) => result.status === 'rejected');
  if (failed !== undefined || coordinator === undefined || gateway === undefined) {
    await kill([gateway, coordinator]);
    throw (failed as PromiseRejectedResult | undefined)?.reason ?? new Error('no front end');
  }
  try {
    await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${gateway.metricsPort}/readyz`);
      if (response.status !== 200) throw new Error('the gateway is not ready');
    }, 20_000);
  } catch (error) {
    await kill([gateway, coordinator]);
    throw error;
  }
  const spool = new Spool({
    brokers: [`127.0.0.1:${gateway.grpcPort}`],
    clientId,
    logLevel: 'silent',
  });
  const admin = spool.admin({ requestTimeoutMs: 10_000 });
  return {
    coordinator,
    gateway,
    spool,
    admin,
    gatewayAddress: `127.0.0.1:${gateway.grpcPort}`,
    async stop() {
      await admin.disconnect();
      await spool.close();
      await kill([gateway, coordinator]);
    },
  };
}
