// The enforcing services' view: disabled allows everything; enabled asks the ACLs, counts each
// audited denial by principal and resource type, logs at most ten lines per ten seconds (then
// says how many it left out), and refuses a super user that is not Type:name at start-up.
import type { Logger } from '@spool/common';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AclOperation, ResourceType } from './acl';
import { AuthorizationError, RequestAuthorizer } from './request-authorizer';

const caller = { principal: 'User:alice', clientHost: '127.0.0.1' };

function make(enabled: boolean, nowMs: () => number = Date.now) {
  const lines: Array<Record<string, unknown>> = [];
  const spyLogger = {
    warn: (fields: Record<string, unknown>) => lines.push(fields),
  } as unknown as Logger;
  const metrics = new Registry();
  const authorizer = new RequestAuthorizer({
    enabled,
    superUsers: ['User:admin'],
    allowEveryoneIfNoAclFound: false,
    logger: spyLogger,
    metrics,
    nowMs,
  });
  return { authorizer, lines, metrics };
}

describe('RequestAuthorizer', () => {
  it('allows everything when disabled', () => {
    const { authorizer } = make(false);
    expect(authorizer.authorize(caller, AclOperation.Write, ResourceType.Topic, 'orders')).toBe(
      true,
    );
  });

  it('throws an AuthorizationError with the resource type code', () => {
    const { authorizer } = make(true);
    expect(() =>
      authorizer.ensureAuthorized(caller, AclOperation.Read, ResourceType.Group, 'billing'),
    ).toThrow(AuthorizationError);
    try {
      authorizer.ensureAuthorized(caller, AclOperation.Read, ResourceType.Group, 'billing');
    } catch (error) {
      expect((error as AuthorizationError).code).toBe('GROUP_AUTHORIZATION_FAILED');
      expect((error as Error).message).toBe('User:alice is not authorized to READ GROUP billing');
    }
    expect(authorizer.authorizeCluster({ ...caller, principal: 'User:admin' }, 5)).toBe(true);
  });

  it('counts denials and bounds the log lines per window', async () => {
    let now = 0;
    const { authorizer, lines, metrics } = make(true, () => now);
    for (let index = 0; index < 25; index += 1) {
      authorizer.authorize(caller, AclOperation.Write, ResourceType.Topic, 'orders');
    }
    authorizer.authorize(caller, AclOperation.Describe, ResourceType.Topic, 'x', { audit: false });
    expect(lines).toHaveLength(10);
    now = 10_000;
    authorizer.authorize(caller, AclOperation.Write, ResourceType.Topic, 'orders');
    expect(lines).toHaveLength(11);
    expect(lines[10]!['deniedNotLogged']).toBe(15);
    const counted = await metrics.getSingleMetric('spool_authorization_denials_total')!.get();
    expect(counted.values).toEqual([
      { value: 26, labels: { principal: 'User:alice', resource_type: 'TOPIC' } },
    ]);
  });

  it('refuses a super user without a principal type', () => {
    expect(
      () =>
        new RequestAuthorizer({
          enabled: true,
          superUsers: ['admin'],
          allowEveryoneIfNoAclFound: false,
          logger: {} as Logger,
          metrics: new Registry(),
        }),
    ).toThrow(/super\.users/);
  });
});
