// Proves the controller's CreateAcls, DescribeAcls and DeleteAcls over gRPC on a real controller
// in-process: each creation and filter answered on its own (a bad one named, the others done),
// no duplicates, Kafka's filters, the ACL set on WatchMetadata (snapshot, then a change), and the
// ACLs still there after a restart on the same metadata file.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
  type AclBinding,
} from '@spool/authorizer';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient, type WatchMetadataResponse } from '@spool/protocol';
import { startController } from './controller-service';

function start(metadataPath: string): Promise<RunningService> {
  return startController({
    argv: [
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      '--log-level',
      'silent',
      '--metadata-path',
      metadataPath,
    ],
    env: {},
    handleSignals: false,
  });
}

const readOrders: AclBinding = {
  resourceType: ResourceType.Topic,
  resourceName: 'orders',
  patternType: PatternType.Literal,
  principal: 'User:alice',
  host: '*',
  operation: AclOperation.Read,
  permissionType: AclPermissionType.Allow,
};
const denyPrefix: AclBinding = {
  ...readOrders,
  resourceName: 'ord',
  patternType: PatternType.Prefixed,
  principal: 'User:bob',
  permissionType: AclPermissionType.Deny,
};
const anyFilter = {
  resourceType: ResourceType.Any,
  patternType: PatternType.Any,
  operation: AclOperation.Any,
  permissionType: AclPermissionType.Any,
};

describe('ACL commands', () => {
  it('creates, describes, publishes, keeps across a restart and deletes ACLs', async () => {
    const metadataPath = path.join(mkdtempSync(path.join(tmpdir(), 'spool-acls-')), 'journal');
    let service = await start(metadataPath);
    let client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
    try {
      const created = await vi.waitFor(
        () =>
          callOnce(client, client.createAcls, {
            creations: [readOrders, { ...readOrders, principal: 'alice' }, denyPrefix, readOrders],
          }),
        { timeout: 10_000, interval: 50 },
      );
      expect(created.results.map((result) => result.error?.code)).toEqual([
        undefined,
        'INVALID_REQUEST',
        undefined,
        undefined,
      ]);
      expect(created.results[1]!.error!.message).toContain('Type:name');

      const all = await callOnce(client, client.describeAcls, { filter: anyFilter });
      expect(all.acls).toEqual([readOrders, denyPrefix]);
      const matching = await callOnce(client, client.describeAcls, {
        filter: {
          ...anyFilter,
          resourceType: ResourceType.Topic,
          resourceName: 'orders-eu',
          patternType: PatternType.Match,
        },
      });
      expect(matching.acls).toEqual([denyPrefix]);

      // The stream's snapshot carries the set.
      const snapshot = await new Promise<WatchMetadataResponse>((resolve, reject) => {
        const stream = client.watchMetadata({ fromVersion: 0n });
        stream.on('data', (message: WatchMetadataResponse) => {
          resolve(message);
          stream.cancel();
        });
        stream.on('error', (error: { code?: number }) => {
          if (error.code !== 1) reject(error);
        });
      });
      expect(snapshot.aclSet?.acls).toEqual([readOrders, denyPrefix]);

      client.close();
      await service.stop();
      service = await start(metadataPath);
      client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
      const deleted = await vi.waitFor(
        () =>
          callOnce(client, client.deleteAcls, {
            filters: [
              { ...anyFilter, principal: 'User:bob' },
              { ...anyFilter, operation: 0 },
            ],
          }),
        { timeout: 10_000, interval: 50 },
      );
      expect(deleted.results[0]).toEqual({ error: undefined, deletedAcls: [denyPrefix] });
      expect(deleted.results[1]!.error?.code).toBe('INVALID_REQUEST');
      const left = await callOnce(client, client.describeAcls, { filter: anyFilter });
      expect(left.acls).toEqual([readOrders]);
    } finally {
      client.close();
      await service.stop();
    }
  });
});
