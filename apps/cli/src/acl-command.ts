import {
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
  clusterResourceName,
  describeAcl,
  operationName,
  operationOfName,
  patternTypeName,
  permissionTypeName,
  resourceTypeName,
  wildcardHost,
} from '@spool/authorizer';
import type { AclBinding, AclBindingFilter } from '@spool/client';
import { UsageError } from './cli-errors';
import { connectSpool, parseCommandArgs } from './cli-options';
import type { CommandHelp, FlagDeclarations } from './command-help';
import type { CommandContext } from './commands';
import { toJsonDocument } from './output';

/**
 * `spool acl create|list|delete`: Kafka's ACLs with kafka-acls' flags. A create makes every
 * combination of the principals, hosts, operations and resources given (as kafka-acls --add);
 * a delete removes what those name, or every ACL of the resource when no principal is given
 * (kafka-acls --remove); a list shows the ACLs of a resource, or all of them.
 */
const resourceFlags: FlagDeclarations = {
  topic: { type: 'string', multiple: true, valueName: 'T', description: 'a topic; repeatable' },
  group: { type: 'string', multiple: true, valueName: 'G', description: 'a group; repeatable' },
  cluster: { type: 'boolean', description: 'the cluster (kafka-cluster)' },
  'transactional-id': {
    type: 'string',
    multiple: true,
    valueName: 'ID',
    description: 'a transactional id; repeatable',
  },
  'resource-pattern-type': {
    type: 'string',
    valueName: 'TYPE',
    description:
      'literal (default) or prefixed; list and delete also take any and match (the ACLs that ' +
      'apply to the named resource)',
  },
};

const entryFlags: FlagDeclarations = {
  'allow-principal': {
    type: 'string',
    multiple: true,
    valueName: 'User:NAME',
    description: 'a principal to allow (User:* for everyone); repeatable',
  },
  'deny-principal': {
    type: 'string',
    multiple: true,
    valueName: 'User:NAME',
    description: 'a principal to deny; repeatable',
  },
  'allow-host': {
    type: 'string',
    multiple: true,
    valueName: 'HOST',
    description: "an IP address the allowed principals may come from (default '*'); repeatable",
  },
  'deny-host': {
    type: 'string',
    multiple: true,
    valueName: 'HOST',
    description: "an IP address the denied principals are denied from (default '*'); repeatable",
  },
  operation: {
    type: 'string',
    multiple: true,
    valueName: 'OP',
    description:
      'Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, ' +
      'IdempotentWrite or All (default All); repeatable',
  },
};

export const aclCreateHelp: CommandHelp = {
  path: ['acl', 'create'],
  usage:
    'spool acl create (--allow-principal P | --deny-principal P)... [--operation OP]... ' +
    '(--topic T | --group G | --cluster | --transactional-id ID) [--resource-pattern-type TYPE]',
  summary: 'Create ACLs: each principal, host and operation on each resource.',
  details: [
    'Needs ALTER on the cluster (a super user, or an ACL granting it).',
    'Resources take effect on every gateway as the metadata stream carries them.',
  ],
  flags: { ...entryFlags, ...resourceFlags },
  examples: [
    'spool acl create --allow-principal User:alice --operation Read --operation Write --topic orders',
    'spool acl create --allow-principal User:alice --operation Read --topic orders- ' +
      '--resource-pattern-type prefixed',
    'spool acl create --deny-principal User:bob --deny-host 198.18.0.7 --operation All --topic orders',
    'spool acl create --allow-principal User:alice --operation Read --group billing',
  ],
};

export const aclListHelp: CommandHelp = {
  path: ['acl', 'list'],
  usage:
    'spool acl list [--topic T | --group G | --cluster | --transactional-id ID] ' +
    '[--resource-pattern-type TYPE] [--principal P]',
  summary: 'List ACLs: of one resource, or all of them.',
  details: ['Needs DESCRIBE on the cluster.'],
  flags: {
    ...resourceFlags,
    principal: { type: 'string', valueName: 'User:NAME', description: 'only this principal' },
  },
  examples: [
    'spool acl list',
    'spool acl list --topic orders',
    'spool acl list --topic orders-eu --resource-pattern-type match',
  ],
};

export const aclDeleteHelp: CommandHelp = {
  path: ['acl', 'delete'],
  usage:
    'spool acl delete (--topic T | --group G | --cluster | --transactional-id ID) ' +
    '[--allow-principal P | --deny-principal P]... [--operation OP]... [--resource-pattern-type TYPE]',
  summary: 'Delete ACLs of a resource: those of the principals given, or all.',
  details: ['Needs ALTER on the cluster.'],
  flags: { ...entryFlags, ...resourceFlags },
  examples: [
    'spool acl delete --topic orders --allow-principal User:alice --operation Write',
    'spool acl delete --topic orders',
  ],
};

export const aclHelp: CommandHelp = {
  path: ['acl'],
  usage: 'spool acl create|list|delete [flags]',
  summary: "Manage Kafka's ACLs (who may do what on topics, groups, the cluster).",
  flags: {},
  examples: aclCreateHelp.examples,
};

export const aclSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  create: aclCreateHelp,
  list: aclListHelp,
  delete: aclDeleteHelp,
};

type Values = Readonly<Record<string, unknown>>;

export async function runAclCommand(context: CommandContext): Promise<number> {
  const [subcommand, ...argv] = context.argv;
  const help = subcommand === undefined ? undefined : aclSubcommandHelps[subcommand];
  if (help === undefined) {
    throw new UsageError(
      subcommand === undefined
        ? `acl needs a subcommand; usage: ${aclHelp.usage}`
        : `unknown acl subcommand "${subcommand}"; usage: ${aclHelp.usage}`,
    );
  }
  const parsed = parseCommandArgs(argv, help.flags, context.env ?? process.env);
  if (parsed.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}"; usage: ${help.usage}`);
  }
  const values = parsed.values;
  const admin = connectSpool(parsed.global).admin();
  try {
    if (subcommand === 'create') {
      const acls = bindingsOf(values);
      await admin.createAcls(acls);
      context.stdout.write(
        parsed.global.json
          ? toJsonDocument({ created: acls.map(jsonOf) })
          : `created ${acls.length} ACL${acls.length === 1 ? '' : 's'}:\n` +
              acls.map((acl) => `  ${describeAcl(acl)}\n`).join(''),
      );
      return 0;
    }
    if (subcommand === 'list') {
      const acls = await admin.describeAcls(listFilterOf(values));
      context.stdout.write(
        parsed.global.json ? toJsonDocument({ acls: acls.map(jsonOf) }) : table(acls),
      );
      return 0;
    }
    const deleted = await admin.deleteAcls(deleteFiltersOf(values));
    context.stdout.write(
      parsed.global.json
        ? toJsonDocument({ deleted: deleted.map(jsonOf) })
        : `deleted ${deleted.length} ACL${deleted.length === 1 ? '' : 's'}\n` +
            deleted.map((acl) => `  ${describeAcl(acl)}\n`).join(''),
    );
    return 0;
  } finally {
    await admin.disconnect();
  }
}

interface Resource {
  readonly resourceType: number;
  readonly resourceName: string;
}

function strings(values: Values, name: string): string[] {
  return (values[name] as string[] | undefined) ?? [];
}

/** The resources named: one kind only, as kafka-acls takes them. */
function resourcesOf(values: Values, required: boolean): Resource[] {
  const resources: Resource[] = [
    ...strings(values, 'topic').map((name) => ({
      resourceType: ResourceType.Topic,
      resourceName: name,
    })),
    ...strings(values, 'group').map((name) => ({
      resourceType: ResourceType.Group,
      resourceName: name,
    })),
    ...strings(values, 'transactional-id').map((name) => ({
      resourceType: ResourceType.TransactionalId,
      resourceName: name,
    })),
    ...(values['cluster'] === true
      ? [{ resourceType: ResourceType.Cluster, resourceName: clusterResourceName }]
      : []),
  ];
  if (required && resources.length === 0) {
    throw new UsageError(
      'name a resource: --topic T, --group G, --cluster or --transactional-id ID',
    );
  }
  for (const resource of resources) {
    if (resource.resourceName === '') throw new UsageError('a resource name is empty');
  }
  return resources;
}

function patternTypeOf(values: Values, allowed: readonly number[]): number {
  const raw = values['resource-pattern-type'] as string | undefined;
  if (raw === undefined) return PatternType.Literal;
  const value = { literal: 3, prefixed: 4, any: 1, match: 2 }[raw.toLowerCase()];
  if (value === undefined || !allowed.includes(value)) {
    throw new UsageError(
      `--resource-pattern-type must be one of ${allowed.map((type) => patternTypeName(type).toLowerCase()).join(', ')}, got "${raw}"`,
    );
  }
  return value;
}

function operationsOf(values: Values): number[] {
  const raw = strings(values, 'operation');
  if (raw.length === 0) return [AclOperation.All];
  return raw.map((name) => {
    const operation = operationOfName(name.replace(/([a-z])([A-Z])/g, '$1_$2'));
    if (
      operation === undefined ||
      operation === AclOperation.Any ||
      operation === AclOperation.ClusterAction
    ) {
      throw new UsageError(`--operation: unknown operation "${name}"`);
    }
    return operation;
  });
}

function principalsOf(values: Values, flag: string): string[] {
  const principals = strings(values, flag);
  for (const principal of principals) {
    if (!/^[^:]+:.+$/.test(principal)) {
      throw new UsageError(`--${flag} must be Type:name (User:alice), got "${principal}"`);
    }
  }
  return principals;
}

/** Every entry the flags name: allowed principals × allow hosts, denied × deny hosts, × operations. */
function entriesOf(values: Values) {
  const hosts = (flag: string) =>
    strings(values, flag).length > 0 ? strings(values, flag) : [wildcardHost];
  const operations = operationsOf(values);
  const entries: Array<{
    principal: string;
    host: string;
    operation: number;
    permissionType: number;
  }> = [];
  for (const [principalFlag, hostFlag, permissionType] of [
    ['allow-principal', 'allow-host', AclPermissionType.Allow],
    ['deny-principal', 'deny-host', AclPermissionType.Deny],
  ] as const) {
    for (const principal of principalsOf(values, principalFlag)) {
      for (const host of hosts(hostFlag)) {
        for (const operation of operations)
          entries.push({ principal, host, operation, permissionType });
      }
    }
  }
  return entries;
}

function bindingsOf(values: Values): AclBinding[] {
  const resources = resourcesOf(values, true);
  const patternType = patternTypeOf(values, [PatternType.Literal, PatternType.Prefixed]);
  const entries = entriesOf(values);
  if (entries.length === 0) {
    throw new UsageError('name who: --allow-principal User:NAME or --deny-principal User:NAME');
  }
  return resources.flatMap((resource) =>
    entries.map((entry) => ({
      ...resource,
      patternType:
        resource.resourceType === ResourceType.Cluster ? PatternType.Literal : patternType,
      ...entry,
    })),
  );
}

function listFilterOf(values: Values): AclBindingFilter {
  const resources = resourcesOf(values, false);
  if (resources.length > 1) throw new UsageError('list takes one resource at most');
  const principal = values['principal'] as string | undefined;
  const resource = resources[0];
  return {
    resourceType: resource?.resourceType ?? ResourceType.Any,
    patternType:
      resource === undefined
        ? PatternType.Any
        : patternTypeOf(values, [
            PatternType.Literal,
            PatternType.Prefixed,
            PatternType.Any,
            PatternType.Match,
          ]),
    operation: AclOperation.Any,
    permissionType: AclPermissionType.Any,
    ...(resource === undefined ? {} : { resourceName: resource.resourceName }),
    ...(principal === undefined ? {} : { principal }),
  };
}

function deleteFiltersOf(values: Values): AclBindingFilter[] {
  const resources = resourcesOf(values, true);
  const patternType = patternTypeOf(values, [
    PatternType.Literal,
    PatternType.Prefixed,
    PatternType.Any,
    PatternType.Match,
  ]);
  const anyEntry: AclBindingFilter = {
    resourceType: ResourceType.Any,
    patternType,
    operation: AclOperation.Any,
    permissionType: AclPermissionType.Any,
  };
  // No principal: every ACL of the resource. Otherwise each principal's entries, on the hosts
  // and operations given (any host, any operation when none is).
  const operationGiven = strings(values, 'operation').length > 0;
  const entries = entriesOf(values).map((entry): AclBindingFilter => {
    const hostFlag = entry.permissionType === AclPermissionType.Allow ? 'allow-host' : 'deny-host';
    return {
      ...anyEntry,
      principal: entry.principal,
      permissionType: entry.permissionType,
      operation: operationGiven ? entry.operation : AclOperation.Any,
      ...(strings(values, hostFlag).length > 0 ? { host: entry.host } : {}),
    };
  });
  return resources.flatMap((resource) =>
    (entries.length > 0 ? entries : [anyEntry]).map((entry) => ({ ...entry, ...resource })),
  );
}

function jsonOf(acl: AclBinding) {
  return {
    resourceType: resourceTypeName(acl.resourceType),
    resourceName: acl.resourceName,
    patternType: patternTypeName(acl.patternType),
    principal: acl.principal,
    host: acl.host,
    operation: operationName(acl.operation),
    permissionType: permissionTypeName(acl.permissionType),
  };
}

/** kafka-acls --list's layout: each resource pattern, then its ACLs. */
function table(acls: readonly AclBinding[]): string {
  if (acls.length === 0) return 'no ACLs\n';
  const byResource = new Map<string, AclBinding[]>();
  for (const acl of acls) {
    const key =
      `ResourcePattern(resourceType=${resourceTypeName(acl.resourceType)}, ` +
      `name=${acl.resourceName}, patternType=${patternTypeName(acl.patternType)})`;
    byResource.set(key, [...(byResource.get(key) ?? []), acl]);
  }
  return [...byResource]
    .map(
      ([resource, entries]) =>
        `Current ACLs for resource \`${resource}\`:\n` +
        entries
          .map(
            (acl) =>
              `\t(principal=${acl.principal}, host=${acl.host}, operation=${operationName(acl.operation)}, ` +
              `permissionType=${permissionTypeName(acl.permissionType)})\n`,
          )
          .join(''),
    )
    .join('\n');
}
