import type { ServiceError } from '@grpc/grpc-js';
import {
  callOnce,
  createGrpcClient,
  fromGrpcError,
  type SpoolError,
  type UnaryMethod,
} from '@spool/common';
import { GatewayServiceClient, type ConsumeResponse, type FetchPartition } from '@spool/protocol';
import { eventually } from './controller-client';
import { startServiceProcess, type ServiceProcess } from './service-process';

/**
 * A test's view of a gateway process: typed unary calls that resolve with the response or
 * reject with the SpoolError the gateway sent, and a Consume stream that records what it pushes
 * and grants credit on demand.
 */
export class GatewayTestClient {
  readonly client: GatewayServiceClient;

  constructor(readonly address: string) {
    this.client = createGrpcClient(GatewayServiceClient, address);
  }

  call<Request, Response>(
    method: UnaryMethod<Request, Response>,
    request: Request,
    deadlineMs = 40_000,
  ): Promise<Response> {
    return callOnce(this.client, method, request, { deadlineMs });
  }

  /** Opens a Consume stream subscribed to `partitions` with `creditBytes` of credit. */
  consume(partitions: FetchPartition[], creditBytes: bigint): ConsumeProbe {
    return new ConsumeProbe(this.client, partitions, creditBytes);
  }

  close(): void {
    this.client.close();
  }
}

export class ConsumeProbe {
  readonly responses: ConsumeResponse[] = [];
  /** Resolves with undefined when the gateway ends the stream cleanly, else with its error. */
  readonly ended: Promise<SpoolError | undefined>;
  private readonly stream: ReturnType<GatewayServiceClient['consume']>;

  constructor(client: GatewayServiceClient, partitions: FetchPartition[], creditBytes: bigint) {
    this.stream = client.consume();
    this.stream.on('data', (response: ConsumeResponse) => this.responses.push(response));
    this.ended = new Promise((resolve) => {
      this.stream.on('error', (error: ServiceError) => resolve(fromGrpcError(error)));
      this.stream.on('end', () => resolve(undefined));
    });
    this.stream.write({ partitions, creditBytes });
  }

  /** Record bytes pushed so far. */
  get receivedBytes(): number {
    return this.records().reduce((sum, records) => sum + records.length, 0);
  }

  /** The records pushed for each partition, in order. */
  records(): Buffer[] {
    return this.responses.flatMap((response) =>
      response.partitions.map((partition) => partition.records),
    );
  }

  grant(creditBytes: bigint): void {
    this.stream.write({ partitions: [], creditBytes });
  }

  /** Half-closes the stream, as a consumer that is done. */
  end(): void {
    this.stream.end();
  }
}

/** Starts a gateway process following the given controller and waits until it is ready. */
export async function startGatewayProcess(
  controllerPort: number,
  extraArgs: string[] = [],
): Promise<ServiceProcess> {
  const gateway = await startServiceProcess('gateway', [
    '--controller-addresses',
    `127.0.0.1:${controllerPort}`,
    ...extraArgs,
  ]);
  await eventually(async () => {
    const response = await fetch(`http://127.0.0.1:${gateway.metricsPort}/readyz`);
    if (response.status !== 200) throw new Error('the gateway is not ready');
  }, 20_000);
  return gateway;
}
