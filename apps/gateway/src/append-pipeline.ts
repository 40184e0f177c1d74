/**
 * The gateway's side of AppendStream (storage.proto): one long-lived stream to a leader, on
 * which every produce the gateway forwards to that leader is one message tagged with a
 * correlation id (StreamPipeline in @spool/common: deadlines, broken and ended streams, the
 * bound). A unary Append paid an HTTP/2 stream, headers, trailers and a deadline timer every
 * time: about 0.3 ms of CPU on each side, which at 16 KiB batches was most of the gateway's cost
 * per request. What a broken or ended stream leaves waiting fails retriably, so the produce is
 * routed again; the gateway's produce admission bounds the bytes.
 */
import { StreamPipeline } from '@spool/common';
import type {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
  StorageServiceClient,
} from '@spool/protocol';

export const appendPipelineInFlightMax = 4_096;

export class AppendPipeline {
  private readonly pipeline: StreamPipeline<AppendStreamRequest, AppendStreamResponse>;

  constructor(client: StorageServiceClient, leaderName: string) {
    this.pipeline = new StreamPipeline({
      open: () => client.appendStream(),
      peerName: leaderName,
      requestName: 'append',
      waitingMax: appendPipelineInFlightMax,
    });
  }

  get waitingCount(): number {
    return this.pipeline.waitingCount;
  }

  /** Sends one Append on the stream; resolves with the leader's answer. */
  async append(request: AppendRequest, timeoutMs: number): Promise<AppendResponse> {
    const response = await this.pipeline.send(request, timeoutMs);
    return { results: response.results };
  }

  /** Cancels the stream; what still waits fails SHUTTING_DOWN. */
  close(): void {
    this.pipeline.close();
  }
}
