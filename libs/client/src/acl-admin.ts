import { SpoolError } from '@spool/common';
import type { AclBinding, AclBindingFilter, ProtoError } from '@spool/protocol';
import { fromProtoError } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';

/**
 * The admin client's ACL calls (Kafka's Admin.createAcls, describeAcls, deleteAcls), through the
 * gateway, which fronts the controller. ACLs carry Kafka's numbers for resource types, pattern
 * types, operations and permissions (acl.proto).
 */
export type { AclBinding, AclBindingFilter };

/** Creates the ACLs; throws naming every refused one, after the others were created. */
export async function createAcls(
  connection: GatewayConnection,
  acls: readonly AclBinding[],
  options: GatewayCallOptions,
): Promise<void> {
  const response = await connection.call(
    (client) => client.createAcls,
    { creations: [...acls] },
    options,
  );
  throwIfRefused(
    response.results.map((result, index) => ({ index, error: result.error })),
    'create',
  );
}

export async function describeAcls(
  connection: GatewayConnection,
  filter: AclBindingFilter,
  options: GatewayCallOptions,
): Promise<AclBinding[]> {
  const response = await connection.call((client) => client.describeAcls, { filter }, options);
  if (response.error !== undefined && response.error.code !== '') {
    throw fromProtoError(response.error, 'describe ACLs');
  }
  return response.acls;
}

/** Deletes what each filter matches; returns the ACLs deleted. Throws if a filter was refused. */
export async function deleteAcls(
  connection: GatewayConnection,
  filters: readonly AclBindingFilter[],
  options: GatewayCallOptions,
): Promise<AclBinding[]> {
  const response = await connection.call(
    (client) => client.deleteAcls,
    { filters: [...filters] },
    options,
  );
  throwIfRefused(
    response.results.map((result, index) => ({ index, error: result.error })),
    'delete',
  );
  return response.results.flatMap((result) => result.deletedAcls);
}

function throwIfRefused(
  outcomes: readonly { index: number; error: ProtoError | undefined }[],
  verb: string,
): void {
  const refused = outcomes.filter((outcome) => outcome.error !== undefined && outcome.error.code);
  if (refused.length === 0) return;
  const first = refused[0]!.error!;
  throw new SpoolError(
    first.code,
    `could not ${verb} ${refused.length} ACL${refused.length === 1 ? '' : 's'}: ` +
      refused.map((outcome) => `#${outcome.index + 1}: ${outcome.error!.message}`).join('; '),
    { retriable: false },
  );
}
