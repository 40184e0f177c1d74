/**
 * The RecordService handlers (proto/spool/v1/record.proto): Publish and PublishStream through
 * the RecordPublisher, Subscribe and Commit through the RecordSubscriptions.
 *
 * PublishStream pipelines requests on one stream: each is published as it arrives and answered
 * with its sequence when done, in completion order. At most publishStreamInFlightMax requests of
 * one stream are unanswered at once; at that bound the gateway stops reading the stream (pause),
 * so HTTP/2 flow control holds a faster client instead of the gateway's memory growing. A request
 * that fails as a whole is answered with its error, and the stream goes on.
 */
import type { ServerDuplexStream, ServerWritableStream } from '@grpc/grpc-js';
import { SpoolError, wireErrorOf } from '@spool/common';
import type {
  CommitRequest,
  PublishRequest,
  PublishStreamRequest,
  PublishStreamResponse,
  SubscribeRequest,
  SubscribeResponse,
} from '@spool/protocol';
import type { RecordPublisher } from './record-publisher';
import type { RecordSubscriptions } from './record-subscriptions';

type Handler = (...args: never[]) => Promise<unknown>;

export function recordHandlers(dependencies: {
  readonly publisher: RecordPublisher;
  readonly subscriptions: RecordSubscriptions;
  readonly publishStreamInFlightMax: number;
}): Record<string, Handler> {
  const { publisher, subscriptions } = dependencies;
  return {
    publish: (request: PublishRequest) => publisher.publish(request),
    publishStream: (call: ServerDuplexStream<PublishStreamRequest, PublishStreamResponse>) =>
      servePublishStream(call, publisher, dependencies.publishStreamInFlightMax),
    subscribe: (
      request: SubscribeRequest,
      call: ServerWritableStream<SubscribeRequest, SubscribeResponse>,
    ) => subscriptions.serve(request, call),
    commit: (request: CommitRequest) => subscriptions.commit(request),
  };
}

function servePublishStream(
  call: ServerDuplexStream<PublishStreamRequest, PublishStreamResponse>,
  publisher: RecordPublisher,
  inFlightMax: number,
): Promise<void> {
  return new Promise<void>((resolve) => {
    let inFlight = 0;
    let ended = false;
    const finishIfDone = (): void => {
      if (ended && inFlight === 0) resolve();
    };
    call.on('data', (message: PublishStreamRequest) => {
      inFlight += 1;
      if (inFlight >= inFlightMax) call.pause();
      const request = message.request;
      const answered =
        request === undefined
          ? Promise.reject(
              new SpoolError(
                'INVALID_REQUEST',
                `PublishStreamRequest ${message.sequence} has no request`,
              ),
            )
          : publisher.publish(request);
      answered
        .then(
          (response) => ({ sequence: message.sequence, response, error: undefined }),
          (error: unknown) => ({
            sequence: message.sequence,
            response: undefined,
            error: wireErrorOf(error),
          }),
        )
        .then((answer) => {
          if (!call.cancelled) call.write(answer);
          inFlight -= 1;
          if (inFlight < inFlightMax) call.resume();
          finishIfDone();
        });
    });
    call.on('end', () => {
      ended = true;
      finishIfDone();
    });
    call.on('cancelled', () => {
      ended = true;
      finishIfDone();
    });
  });
}
