// The ACL model's checks: which bindings may be stored (Kafka's refusals, each named), Kafka's
// filter matching for DescribeAcls and DeleteAcls (ANY, MATCH, exact), and the names of the
// numbers both ways.
import { describe, expect, it } from 'vitest';
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
  aclBindingProblem,
  aclFilterMatches,
  aclFilterProblem,
  operationName,
  operationOfName,
  resourceTypeOfName,
  type AclBinding,
  type AclBindingFilter,
} from './acl';

const binding: AclBinding = {
  resourceType: ResourceType.Topic,
  resourceName: 'orders',
  patternType: PatternType.Literal,
  principal: 'User:alice',
  host: '*',
  operation: AclOperation.Read,
  permissionType: AclPermissionType.Allow,
};

const anyFilter: AclBindingFilter = {
  resourceType: ResourceType.Any,
  patternType: PatternType.Any,
  operation: AclOperation.Any,
  permissionType: AclPermissionType.Any,
};

describe('aclBindingProblem', () => {
  it('accepts a well-formed ACL', () => {
    expect(aclBindingProblem(binding)).toBeUndefined();
    expect(aclBindingProblem({ ...binding, host: '198.18.0.1' })).toBeUndefined();
    expect(aclBindingProblem({ ...binding, host: '::1' })).toBeUndefined();
  });

  it.each([
    [{ resourceType: ResourceType.Any }, 'resource type ANY'],
    [{ resourceType: 99 }, 'resource type UNKNOWN(99)'],
    [{ patternType: PatternType.Match }, 'pattern type MATCH'],
    [{ operation: AclOperation.Any }, 'operation ANY'],
    [{ permissionType: AclPermissionType.Any }, 'permission type ANY'],
    [{ resourceName: '' }, 'resource name is empty'],
    [{ principal: 'alice' }, 'not of the form Type:name'],
    [{ principal: 'User:' }, 'not of the form Type:name'],
    [{ host: 'example.com' }, "neither '*' nor an IP address"],
    [{ resourceType: ResourceType.Cluster, resourceName: 'mine' }, 'kafka-cluster'],
  ])('refuses %o, naming %s', (overrides, named) => {
    expect(aclBindingProblem({ ...binding, ...overrides })).toContain(named);
  });
});

describe('aclFilterMatches (Kafka AclBindingFilter.matches)', () => {
  it('matches everything with ANY and no names', () => {
    expect(aclFilterMatches(anyFilter, binding)).toBe(true);
  });

  it('compares each field the filter names', () => {
    expect(aclFilterMatches({ ...anyFilter, principal: 'User:bob' }, binding)).toBe(false);
    expect(aclFilterMatches({ ...anyFilter, host: '*' }, binding)).toBe(true);
    expect(aclFilterMatches({ ...anyFilter, operation: AclOperation.Write }, binding)).toBe(false);
    expect(
      aclFilterMatches({ ...anyFilter, permissionType: AclPermissionType.Deny }, binding),
    ).toBe(false);
    expect(aclFilterMatches({ ...anyFilter, resourceType: ResourceType.Group }, binding)).toBe(
      false,
    );
  });

  it('takes a name exactly with ANY or the same pattern type, and by applying with MATCH', () => {
    const prefixed = { ...binding, resourceName: 'ord', patternType: PatternType.Prefixed };
    const wildcard = { ...binding, resourceName: '*' };
    const named = { ...anyFilter, resourceName: 'orders' };
    expect(aclFilterMatches(named, binding)).toBe(true);
    expect(aclFilterMatches(named, prefixed)).toBe(false);
    expect(aclFilterMatches(named, wildcard)).toBe(false);
    const match = { ...named, patternType: PatternType.Match };
    expect(aclFilterMatches(match, binding)).toBe(true);
    expect(aclFilterMatches(match, prefixed)).toBe(true);
    expect(aclFilterMatches(match, wildcard)).toBe(true);
    expect(aclFilterMatches({ ...match, resourceName: 'payments' }, prefixed)).toBe(false);
    const literalOnly = { ...named, patternType: PatternType.Literal };
    expect(aclFilterMatches(literalOnly, prefixed)).toBe(false);
  });

  it('refuses unknown numbers in a filter', () => {
    expect(aclFilterProblem(anyFilter)).toBeUndefined();
    expect(aclFilterProblem({ ...anyFilter, operation: 0 })).toContain('operation UNKNOWN(0)');
  });
});

describe('names', () => {
  it('reads and writes Kafka names', () => {
    expect(operationName(AclOperation.IdempotentWrite)).toBe('IDEMPOTENT_WRITE');
    expect(operationOfName('describe-configs')).toBe(AclOperation.DescribeConfigs);
    expect(operationOfName('Read')).toBe(AclOperation.Read);
    expect(resourceTypeOfName('transactional-id')).toBe(ResourceType.TransactionalId);
    expect(operationOfName('fly')).toBeUndefined();
  });
});
