/**
 * The GatewayService handlers, assembled from their parts. The gRPC server counts each call's
 * requests, errors (failed calls and partitions answered with an error) and latency under its
 * RPC name.
 */
import type { ServerDuplexStream, ServerUnaryCall } from '@grpc/grpc-js';
import type { RequestAuthorizer } from '@spool/authorizer';
import { clientHostOf, principalOf, type Logger } from '@spool/common';
import {
  type CreateAclsRequest,
  type DeleteAclsRequest,
  type DescribeAclsRequest,
  type ConsumeRequest,
  type ConsumeResponse,
  type DeleteRecordsRequest,
  type FetchRequest,
  type ListOffsetsRequest,
  type ProduceRequest,
  type ProduceStreamRequest,
  type ProduceStreamResponse,
  type StorageServiceClient,
} from '@spool/protocol';
import type { aclHandlers } from './acl-handlers';
import { adminHandlers } from './admin-handlers';
import { userAdminHandlers } from './user-admin-handlers';
import type { ConsumeStreams } from './consume-streams';
import type { CoordinatorRouter } from './coordinator-router';
import { handleFetch } from './fetch-handler';
import { groupHandlers } from './group-handlers';
import type { LeaderFetcher } from './leader-fetcher';
import type { MetadataLink } from './metadata-link';
import { handleDeleteRecords, handleListOffsets } from './offset-handlers';
import type { ProduceAdmission } from './produce-admission';
import { handleProduce } from './produce-handler';
import type { ProduceStreams } from './produce-streams';
import type { AppendPipeline } from './append-pipeline';
import { authorizedHandlers } from './grpc-authorization';

export interface GatewayHandlerDependencies {
  readonly link: MetadataLink;
  readonly storageClient: (brokerId: number) => StorageServiceClient | undefined;
  /** The leader's append stream (append-pipeline.ts), on which produces are sent. */
  readonly appendPipeline: (brokerId: number) => AppendPipeline | undefined;
  readonly coordinators: CoordinatorRouter;
  readonly fetcher: LeaderFetcher;
  readonly admission: ProduceAdmission;
  readonly consumeStreams: ConsumeStreams;
  readonly produceStreams: ProduceStreams;
  readonly fetchMaxBytes: number;
  readonly logger: Logger;
  /** Checks every call when enabled (grpc-authorization.ts). */
  readonly authorizer: RequestAuthorizer;
  readonly acls: ReturnType<typeof aclHandlers>;
}

type Handler = (...args: never[]) => Promise<unknown>;

export function gatewayHandlers(dependencies: GatewayHandlerDependencies): Record<string, Handler> {
  const { link, storageClient, fetcher, admission, consumeStreams } = dependencies;
  const handlers: Record<string, Handler> = {
    produce: (request: ProduceRequest, call: ServerUnaryCall<ProduceRequest, unknown>) =>
      handleProduce(request, call.getPeer(), {
        link,
        appendPipeline: dependencies.appendPipeline,
        admission,
        logger: dependencies.logger,
      }),
    produceStream: (call: ServerDuplexStream<ProduceStreamRequest, ProduceStreamResponse>) =>
      dependencies.produceStreams.serve(call),
    fetch: (request: FetchRequest) =>
      handleFetch(request, { link, fetcher, fetchMaxBytes: dependencies.fetchMaxBytes }),
    consume: (call: ServerDuplexStream<ConsumeRequest, ConsumeResponse>) =>
      consumeStreams.serve(call),
    listOffsets: (request: ListOffsetsRequest) =>
      handleListOffsets(request, { link, storageClient }),
    deleteRecords: (request: DeleteRecordsRequest) =>
      handleDeleteRecords(request, { link, storageClient }),
    ...adminHandlers(link),
    ...userAdminHandlers(link),
    ...groupHandlers(dependencies.coordinators),
    createAcls: (request: CreateAclsRequest, call: ServerUnaryCall<CreateAclsRequest, unknown>) =>
      dependencies.acls.createAcls(request, callerOf(call)),
    describeAcls: (
      request: DescribeAclsRequest,
      call: ServerUnaryCall<DescribeAclsRequest, unknown>,
    ) => dependencies.acls.describeAcls(request, callerOf(call)),
    deleteAcls: (request: DeleteAclsRequest, call: ServerUnaryCall<DeleteAclsRequest, unknown>) =>
      dependencies.acls.deleteAcls(request, callerOf(call)),
  };
  return authorizedHandlers(handlers, dependencies.authorizer);
}

function callerOf(call: { getPeer(): string }): { principal: string; clientHost: string } {
  return { principal: principalOf(call), clientHost: clientHostOf(call) };
}
