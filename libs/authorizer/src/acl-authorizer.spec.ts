// The authorizer's decisions: Kafka's rules one by one on hand-picked ACLs, then fast-check
// properties comparing the indexed AclAuthorizer with a naive model that reads the rules
// literally over the flat list, on small alphabets so that names, prefixes, principals and
// hosts collide often.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
  wildcardHost,
  wildcardPrincipal,
  wildcardResourceName,
  type AclBinding,
} from './acl';
import { AclAuthorizer, type AuthorizationRequest } from './acl-authorizer';

const alice = 'User:alice';
const bob = 'User:bob';
const hostA = '198.18.0.1';
const hostB = '198.18.0.2';

function acl(overrides: Partial<AclBinding>): AclBinding {
  return {
    resourceType: ResourceType.Topic,
    resourceName: 'orders',
    patternType: PatternType.Literal,
    principal: alice,
    host: wildcardHost,
    operation: AclOperation.Read,
    permissionType: AclPermissionType.Allow,
    ...overrides,
  };
}

function request(overrides: Partial<AuthorizationRequest>): AuthorizationRequest {
  return {
    principal: alice,
    host: hostA,
    operation: AclOperation.Read,
    resourceType: ResourceType.Topic,
    resourceName: 'orders',
    ...overrides,
  };
}

function authorizer(
  acls: readonly AclBinding[],
  settings: { superUsers?: string[]; allowEveryoneIfNoAclFound?: boolean } = {},
): AclAuthorizer {
  const result = new AclAuthorizer({
    superUsers: settings.superUsers ?? [],
    allowEveryoneIfNoAclFound: settings.allowEveryoneIfNoAclFound ?? false,
  });
  result.replaceAcls(acls);
  return result;
}

describe('AclAuthorizer, rule by rule', () => {
  it('refuses without any ACL, unless allow.everyone.if.no.acl.found', () => {
    expect(authorizer([]).authorize(request({}))).toBe(false);
    expect(authorizer([], { allowEveryoneIfNoAclFound: true }).authorize(request({}))).toBe(true);
    // An ACL for someone else on the resource means the resource has ACLs: refused.
    const others = [acl({ principal: bob })];
    expect(authorizer(others, { allowEveryoneIfNoAclFound: true }).authorize(request({}))).toBe(
      false,
    );
  });

  it('allows a super user everything', () => {
    const denied = [acl({ permissionType: AclPermissionType.Deny, operation: AclOperation.All })];
    expect(authorizer(denied, { superUsers: [alice] }).authorize(request({}))).toBe(true);
  });

  it('lets DENY win over ALLOW, for the principal or User:*, any host or this one', () => {
    for (const deny of [
      acl({ permissionType: AclPermissionType.Deny }),
      acl({ permissionType: AclPermissionType.Deny, principal: wildcardPrincipal }),
      acl({ permissionType: AclPermissionType.Deny, host: hostA }),
      acl({ permissionType: AclPermissionType.Deny, operation: AclOperation.All }),
    ]) {
      expect(authorizer([acl({}), deny]).authorize(request({}))).toBe(false);
    }
    // A DENY from another host, or for another operation, leaves the ALLOW standing.
    const elsewhere = acl({ permissionType: AclPermissionType.Deny, host: hostB });
    expect(authorizer([acl({}), elsewhere]).authorize(request({}))).toBe(true);
    const write = acl({ permissionType: AclPermissionType.Deny, operation: AclOperation.Write });
    expect(authorizer([acl({}), write]).authorize(request({}))).toBe(true);
  });

  it('lets READ, WRITE, DELETE and ALTER imply DESCRIBE, and ALTER_CONFIGS DESCRIBE_CONFIGS', () => {
    for (const operation of [
      AclOperation.Read,
      AclOperation.Write,
      AclOperation.Delete,
      AclOperation.Alter,
      AclOperation.All,
    ]) {
      const acls = [acl({ operation })];
      expect(authorizer(acls).authorize(request({ operation: AclOperation.Describe }))).toBe(true);
    }
    for (const operation of [AclOperation.Create, AclOperation.AlterConfigs]) {
      const acls = [acl({ operation })];
      expect(authorizer(acls).authorize(request({ operation: AclOperation.Describe }))).toBe(false);
    }
    const alterConfigs = [acl({ operation: AclOperation.AlterConfigs })];
    expect(
      authorizer(alterConfigs).authorize(request({ operation: AclOperation.DescribeConfigs })),
    ).toBe(true);
    // An implied operation never widens a DENY: DENY READ does not deny DESCRIBE.
    const denyRead = [
      acl({ operation: AclOperation.Describe }),
      acl({ permissionType: AclPermissionType.Deny }),
    ];
    expect(authorizer(denyRead).authorize(request({ operation: AclOperation.Describe }))).toBe(
      true,
    );
    // DESCRIBE does not imply READ.
    const describeOnly = [acl({ operation: AclOperation.Describe })];
    expect(authorizer(describeOnly).authorize(request({}))).toBe(false);
  });

  it('matches the wildcard name and prefixes, and nothing across resource types', () => {
    const wildcard = [acl({ resourceName: wildcardResourceName })];
    expect(authorizer(wildcard).authorize(request({ resourceName: 'anything' }))).toBe(true);
    const prefixed = [acl({ resourceName: 'ord', patternType: PatternType.Prefixed })];
    expect(authorizer(prefixed).authorize(request({ resourceName: 'orders' }))).toBe(true);
    expect(authorizer(prefixed).authorize(request({ resourceName: 'or' }))).toBe(false);
    expect(authorizer(prefixed).authorize(request({ resourceName: 'payments' }))).toBe(false);
    expect(authorizer(prefixed).authorize(request({ resourceType: ResourceType.Group }))).toBe(
      false,
    );
    // A prefixed '*' is a prefix like any other, not a wildcard.
    const starPrefix = [acl({ resourceName: '*', patternType: PatternType.Prefixed })];
    expect(authorizer(starPrefix).authorize(request({}))).toBe(false);
  });

  it('answers authorizeByResourceType as Kafka: an ALLOW not covered by a DENY', () => {
    const byType = (acls: AclBinding[]) =>
      authorizer(acls).authorizeByResourceType({
        principal: alice,
        host: hostA,
        operation: AclOperation.Write,
        resourceType: ResourceType.Topic,
      });
    const write = { operation: AclOperation.Write };
    expect(byType([])).toBe(false);
    expect(byType([acl(write)])).toBe(true);
    expect(byType([acl(write), acl({ ...write, permissionType: AclPermissionType.Deny })])).toBe(
      false,
    );
    expect(
      byType([
        acl({ ...write, resourceName: 'orders-eu' }),
        acl({
          ...write,
          resourceName: 'orders',
          patternType: PatternType.Prefixed,
          permissionType: AclPermissionType.Deny,
        }),
      ]),
    ).toBe(false);
    expect(
      byType([
        acl({ ...write, resourceName: 'payments' }),
        acl({
          ...write,
          resourceName: 'orders',
          patternType: PatternType.Prefixed,
          permissionType: AclPermissionType.Deny,
        }),
      ]),
    ).toBe(true);
  });
});

/** Kafka's rules read literally over the flat list: the model the indexed authorizer must equal. */
function naiveAuthorize(
  acls: readonly AclBinding[],
  superUsers: readonly string[],
  allowEveryoneIfNoAclFound: boolean,
  question: AuthorizationRequest,
): boolean {
  if (superUsers.includes(question.principal)) return true;
  const applying = acls.filter(
    (each) =>
      each.resourceType === question.resourceType &&
      (each.patternType === PatternType.Literal
        ? each.resourceName === question.resourceName || each.resourceName === '*'
        : question.resourceName.startsWith(each.resourceName)),
  );
  if (applying.length === 0) return allowEveryoneIfNoAclFound;
  const entryMatches = (each: AclBinding) =>
    (each.principal === question.principal || each.principal === 'User:*') &&
    (each.host === question.host || each.host === '*');
  for (const each of applying) {
    if (
      each.permissionType === AclPermissionType.Deny &&
      entryMatches(each) &&
      (each.operation === question.operation || each.operation === AclOperation.All)
    ) {
      return false;
    }
  }
  for (const each of applying) {
    if (each.permissionType !== AclPermissionType.Allow || !entryMatches(each)) continue;
    if (each.operation === AclOperation.All || each.operation === question.operation) return true;
    const impliesDescribe = [
      AclOperation.Read,
      AclOperation.Write,
      AclOperation.Delete,
      AclOperation.Alter,
    ] as number[];
    if (question.operation === AclOperation.Describe && impliesDescribe.includes(each.operation)) {
      return true;
    }
    if (
      question.operation === AclOperation.DescribeConfigs &&
      each.operation === AclOperation.AlterConfigs
    ) {
      return true;
    }
  }
  return false;
}

const names = ['a', 'ab', 'abc', 'b', 'ba', '*'];
const principals = [alice, bob, wildcardPrincipal];
const hosts = [hostA, hostB, wildcardHost];
const operations = Object.values(AclOperation).filter((value) => value !== AclOperation.Any);
const resourceTypes = [ResourceType.Topic, ResourceType.Group, ResourceType.TransactionalId];

const aclArbitrary: fc.Arbitrary<AclBinding> = fc.record({
  resourceType: fc.constantFrom(...resourceTypes),
  resourceName: fc.constantFrom(...names),
  patternType: fc.constantFrom(PatternType.Literal, PatternType.Prefixed),
  principal: fc.constantFrom(...principals),
  host: fc.constantFrom(...hosts),
  operation: fc.constantFrom(...operations),
  permissionType: fc.constantFrom(AclPermissionType.Allow, AclPermissionType.Deny),
});

const requestArbitrary: fc.Arbitrary<AuthorizationRequest> = fc.record({
  principal: fc.constantFrom(alice, bob, 'User:carol'),
  host: fc.constantFrom(hostA, hostB),
  operation: fc.constantFrom(...operations.filter((value) => value !== AclOperation.All)),
  resourceType: fc.constantFrom(...resourceTypes),
  resourceName: fc.constantFrom(...names.filter((name) => name !== '*'), 'abcd', 'c'),
});

describe('AclAuthorizer against the naive model', () => {
  it('decides every request as the model does', () => {
    fc.assert(
      fc.property(
        fc.array(aclArbitrary, { maxLength: 12 }),
        fc.subarray([alice, bob]),
        fc.boolean(),
        fc.array(requestArbitrary, { minLength: 1, maxLength: 8 }),
        (acls, superUsers, allowEveryone, questions) => {
          const indexed = authorizer(acls, {
            superUsers,
            allowEveryoneIfNoAclFound: allowEveryone,
          });
          for (const question of questions) {
            expect(indexed.authorize(question)).toBe(
              naiveAuthorize(acls, superUsers, allowEveryone, question),
            );
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('never allows more after a DENY is added, and never less after an ALLOW is added', () => {
    fc.assert(
      fc.property(
        fc.array(aclArbitrary, { minLength: 1, maxLength: 10 }),
        aclArbitrary,
        requestArbitrary,
        (acls, extra, question) => {
          const before = authorizer(acls).authorize(question);
          const after = authorizer([...acls, extra]).authorize(question);
          if (extra.permissionType === AclPermissionType.Deny) {
            expect(after && !before).toBe(false);
          } else {
            expect(before && !after).toBe(false);
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('keeps authorizeByResourceType true whenever some resource of the type is allowed', () => {
    fc.assert(
      fc.property(fc.array(aclArbitrary, { maxLength: 10 }), requestArbitrary, (acls, question) => {
        const indexed = authorizer(acls);
        // A resource the exact operation is allowed on makes the type allowed (implied
        // operations are authorize's alone, as in Kafka).
        const implied: number[] = [AclOperation.Describe, AclOperation.DescribeConfigs];
        if (!implied.includes(question.operation) && indexed.authorize(question)) {
          expect(indexed.authorizeByResourceType(question)).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
