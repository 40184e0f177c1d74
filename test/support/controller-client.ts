import { callOnce, createGrpcClient, type SpoolError, type UnaryMethod } from '@spool/common';
import {
  ControllerServiceClient,
  type CreateTopicsResponse,
  type WatchMetadataResponse,
} from '@spool/protocol';

/**
 * A test's view of a controller: typed calls that resolve with the response or reject with the
 * SpoolError the controller sent, and a metadata watch that collects what the stream delivers.
 */
export class ControllerTestClient {
  readonly client: ControllerServiceClient;

  constructor(readonly address: string) {
    this.client = createGrpcClient(ControllerServiceClient, address);
  }

  call<Request, Response>(
    method: UnaryMethod<Request, Response>,
    request: Request,
    deadlineMs = 5_000,
  ): Promise<Response> {
    return callOnce(this.client, method, request, { deadlineMs });
  }

  createTopic(
    name: string,
    numPartitions: number,
    replicationFactor: number,
    configs: Array<{ name: string; value: string }> = [],
  ): Promise<CreateTopicsResponse> {
    return this.call(this.client.createTopics, {
      topics: [
        {
          name,
          numPartitions,
          replicationFactor,
          configs: configs.map((entry) => ({ ...entry, isDefault: false })),
        },
      ],
      validateOnly: false,
    });
  }

  /** Starts WatchMetadata and collects every message until `stop()`. */
  watch(fromVersion = 0n): { messages: WatchMetadataResponse[]; errors: Error[]; stop(): void } {
    const stream = this.client.watchMetadata({ fromVersion });
    const messages: WatchMetadataResponse[] = [];
    const errors: Error[] = [];
    stream.on('data', (message: WatchMetadataResponse) => messages.push(message));
    stream.on('error', (error: Error) => errors.push(error));
    return { messages, errors, stop: () => stream.cancel() };
  }

  close(): void {
    this.client.close();
  }
}

/** Registers a broker and keeps it heartbeating until stopped: a storage node's control plane. */
export class FakeBroker {
  brokerEpoch = -1n;
  private timer: NodeJS.Timeout | undefined;
  readonly incarnationId = `incarnation-${Math.random().toString(36).slice(2)}`;

  constructor(
    private readonly controller: () => ControllerTestClient,
    readonly brokerId: number,
    readonly rack = '',
  ) {}

  async register(): Promise<void> {
    const response = await this.controller().call(this.controller().client.registerBroker, {
      brokerId: this.brokerId,
      rack: this.rack,
      endpoints: [{ name: 'data', host: '127.0.0.1', port: 19_000 + this.brokerId }],
      incarnationId: this.incarnationId,
    });
    this.brokerEpoch = response.brokerEpoch;
  }

  startHeartbeats(intervalMs: number): void {
    this.timer = setInterval(() => {
      const controller = this.controller();
      controller
        .call(
          controller.client.brokerHeartbeat,
          {
            brokerId: this.brokerId,
            brokerEpoch: this.brokerEpoch,
            logDirOffline: false,
            cleanerStates: [],
            replicaSizes: [],
          },
          1_000,
        )
        .catch((_error: SpoolError) => {});
    }, intervalMs);
  }

  stopHeartbeats(): void {
    clearInterval(this.timer);
  }
}

/** Retries `attempt` while it fails with a retriable error, up to `timeoutMs`. */
export async function eventually<T>(
  attempt: () => Promise<T>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}
