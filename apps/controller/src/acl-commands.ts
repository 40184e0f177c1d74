/**
 * Kafka's CreateAcls, DescribeAcls and DeleteAcls on the active controller. Every ACL of the
 * cluster lives in one key, `/spool/<cluster>/acls`, written whole in a transaction that compares
 * the key's last revision (and the controller's election guard, through the writer): two
 * commands never lose each other's ACLs, and the metadata stream carries the new list to every
 * gateway in the same revision. Run them on the controller's command queue.
 *
 * 1. Each creation is checked on its own (aclBindingProblem: Kafka's refusals); a refused one is
 *    answered INVALID_REQUEST and the others are still created. An ACL already stored is not
 *    stored twice, as Kafka's are not, and its creation succeeds.
 * 2. The list is bounded (aclsMax): a creation past it is refused with INVALID_REQUEST naming
 *    the bound, so the one value stays well under etcd's request size.
 * 3. Each delete filter is checked on its own (aclFilterProblem) and answered with the ACLs it
 *    removed; an ACL two filters match is reported by the first.
 */
import {
  aclBindingProblem,
  aclFilterMatches,
  aclFilterProblem,
  describeAcl,
  sameAcl,
  type AclBinding,
  type AclBindingFilter,
} from '@spool/authorizer';
import { SpoolError } from '@spool/common';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type AclRecord } from './metadata-records';

/** Point 2: ACLs the cluster holds at most (about 200 bytes each in the one stored value). */
export const aclsMax = 4_096;

export interface AclCreationOutcome {
  readonly error: SpoolError | undefined;
}

export interface AclDeletionOutcome {
  readonly error: SpoolError | undefined;
  readonly deleted: readonly AclRecord[];
}

export async function createAcls(
  context: ControllerContext,
  creations: readonly AclBinding[],
): Promise<AclCreationOutcome[]> {
  const current = context.state.acls;
  const next: AclRecord[] = [...current.list];
  const outcomes: AclCreationOutcome[] = [];
  for (const creation of creations) {
    // Point 1.
    const binding = recordOf(creation);
    const problem = aclBindingProblem(binding);
    if (problem !== undefined) {
      outcomes.push({ error: new SpoolError('INVALID_REQUEST', `invalid ACL: ${problem}`) });
      continue;
    }
    if (next.some((stored) => sameAcl(stored, binding))) {
      outcomes.push({ error: undefined });
      continue;
    }
    // Point 2.
    if (next.length >= aclsMax) {
      outcomes.push({
        error: new SpoolError(
          'INVALID_REQUEST',
          `the cluster holds ${aclsMax} ACLs, the most it may; delete some first`,
        ),
      });
      continue;
    }
    next.push(binding);
    outcomes.push({ error: undefined });
  }
  if (next.length !== current.list.length) {
    await writeAcls(context, current.modRevision, next);
    for (const added of next.slice(current.list.length)) {
      context.logger.info({ acl: describeAcl(added) }, 'ACL created');
    }
  }
  return outcomes;
}

/** The stored ACLs a filter matches (DescribeAcls). */
export function describeAcls(context: ControllerContext, filter: AclBindingFilter): AclRecord[] {
  const problem = aclFilterProblem(filter);
  if (problem !== undefined) {
    throw new SpoolError('INVALID_REQUEST', `invalid ACL filter: ${problem}`);
  }
  return context.state.acls.list.filter((acl) => aclFilterMatches(filter, acl));
}

export async function deleteAcls(
  context: ControllerContext,
  filters: readonly AclBindingFilter[],
): Promise<AclDeletionOutcome[]> {
  const current = context.state.acls;
  let remaining: readonly AclRecord[] = current.list;
  const outcomes: AclDeletionOutcome[] = [];
  // Point 3.
  for (const filter of filters) {
    const problem = aclFilterProblem(filter);
    if (problem !== undefined) {
      outcomes.push({
        error: new SpoolError('INVALID_REQUEST', `invalid ACL filter: ${problem}`),
        deleted: [],
      });
      continue;
    }
    const deleted = remaining.filter((acl) => aclFilterMatches(filter, acl));
    remaining = remaining.filter((acl) => !aclFilterMatches(filter, acl));
    outcomes.push({ error: undefined, deleted });
  }
  if (remaining.length !== current.list.length) {
    await writeAcls(context, current.modRevision, remaining);
    for (const outcome of outcomes) {
      for (const acl of outcome.deleted) {
        context.logger.info({ acl: describeAcl(acl) }, 'ACL deleted');
      }
    }
  }
  return outcomes;
}

async function writeAcls(
  context: ControllerContext,
  modRevision: bigint,
  acls: readonly AclRecord[],
): Promise<void> {
  const key = context.writer.metadataKeys.acls();
  await context.writer.commit(
    [context.writer.unchangedSince(key, modRevision === 0n ? undefined : modRevision)],
    [{ kind: 'put', key, value: encodeRecord({ acls }) }],
  );
}

/** Only the binding's own fields, whatever else the decoded message object holds. */
function recordOf(binding: AclBinding): AclRecord {
  return {
    resourceType: binding.resourceType,
    resourceName: binding.resourceName,
    patternType: binding.patternType,
    principal: binding.principal,
    host: binding.host,
    operation: binding.operation,
    permissionType: binding.permissionType,
  };
}
