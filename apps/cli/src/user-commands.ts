import { SpoolError, isScramMechanism, scramMechanisms, type ScramMechanism } from '@spool/common';
import { UsageError } from './cli-errors';
import { connectSpool, parseCommandArgs, requirePositionals } from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { toJsonDocument } from './output';

/**
 * `spool user create|delete|list`: users' SCRAM credentials, what Kafka clients authenticate
 * with on a SASL listener and gRPC clients with per-call credentials. The password is salted and
 * hashed in this process (the SDK's alterUserScramCredentials); the cluster keeps StoredKey,
 * ServerKey, the salt and the iteration count, never the password.
 */
export const userCreateHelp: CommandHelp = {
  path: ['user', 'create'],
  usage: 'spool user create NAME --password P [--mechanism SCRAM-SHA-256|SCRAM-SHA-512]',
  summary: "Create a user's SCRAM credential, or replace its password for that mechanism.",
  details: [
    'The environment variable SPOOL_USER_PASSWORD gives the password without a flag (no shell history).',
  ],
  flags: {
    password: { type: 'string', valueName: 'P', description: 'the password' },
    mechanism: {
      type: 'string',
      valueName: 'M',
      defaultText: 'SCRAM-SHA-512',
      description: 'SCRAM-SHA-256 or SCRAM-SHA-512',
    },
    iterations: {
      type: 'string',
      valueName: 'N',
      defaultText: '4096',
      description: 'PBKDF2 iterations, 4096 to 16384',
    },
  },
  examples: [
    'spool user create alice --password alice-secret',
    'spool user create bob --password s3cret --mechanism SCRAM-SHA-256',
  ],
};

export const userDeleteHelp: CommandHelp = {
  path: ['user', 'delete'],
  usage: 'spool user delete NAME [--mechanism SCRAM-SHA-256|SCRAM-SHA-512]',
  summary: "Delete a user's credentials (all of them, or one mechanism's).",
  flags: {
    mechanism: {
      type: 'string',
      valueName: 'M',
      defaultText: 'every mechanism the user has',
      description: 'SCRAM-SHA-256 or SCRAM-SHA-512',
    },
  },
  examples: ['spool user delete alice'],
};

export const userListHelp: CommandHelp = {
  path: ['user', 'list'],
  usage: 'spool user list',
  summary: 'List the users and the mechanisms and iterations of their credentials.',
  flags: {},
  examples: ['spool user list', 'spool user list --json'],
};

export const userHelp: CommandHelp = {
  path: ['user'],
  usage: 'spool user create|delete|list ...',
  summary: "Manage users' SCRAM credentials (SASL on the Kafka listener, gRPC credentials).",
  flags: {},
  examples: ['spool user create alice --password alice-secret', 'spool user list'],
};

export const userSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  create: userCreateHelp,
  delete: userDeleteHelp,
  list: userListHelp,
};

function mechanismOf(value: unknown): ScramMechanism | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isScramMechanism(value)) {
    throw new UsageError(
      `--mechanism must be one of ${scramMechanisms.join(', ')}, got "${String(value)}"`,
    );
  }
  return value;
}

export async function runUserCommand(context: CommandContext): Promise<number> {
  const [subcommand, ...argv] = context.argv;
  const help = subcommand === undefined ? undefined : userSubcommandHelps[subcommand];
  if (help === undefined) {
    throw new UsageError(
      subcommand === undefined
        ? `user needs a subcommand; usage: ${userHelp.usage}`
        : `unknown user subcommand "${subcommand}"; usage: ${userHelp.usage}`,
    );
  }
  const env = context.env ?? process.env;
  const parsed = parseCommandArgs(argv, help.flags, env);
  const admin = connectSpool(parsed.global).admin();
  try {
    if (subcommand === 'list') {
      requirePositionals(parsed.positionals, [], help.usage);
      const users = await admin.describeUserScramCredentials();
      if (parsed.global.json) {
        context.stdout.write(toJsonDocument({ users }));
      } else {
        const lines = users.map(
          ({ user, credentials }) =>
            `${user}\t${credentials.map((c) => `${c.mechanism} (iterations ${c.iterations})`).join(', ')}`,
        );
        context.stdout.write(
          lines.length === 0 ? 'no users\n' : `USER\tCREDENTIALS\n${lines.join('\n')}\n`,
        );
      }
      return 0;
    }
    const [user] = requirePositionals(parsed.positionals, ['NAME'], help.usage);
    const mechanism = mechanismOf(parsed.values['mechanism']);
    if (subcommand === 'create') {
      const password =
        (parsed.values['password'] as string | undefined) ?? env['SPOOL_USER_PASSWORD'];
      if (password === undefined || password === '') {
        throw new UsageError('user create needs --password P (or SPOOL_USER_PASSWORD)');
      }
      const rawIterations = parsed.values['iterations'] as string | undefined;
      if (rawIterations !== undefined && !/^\d+$/.test(rawIterations)) {
        throw new UsageError(`--iterations must be a number, got "${rawIterations}"`);
      }
      const chosen = mechanism ?? 'SCRAM-SHA-512';
      await admin.alterUserScramCredentials({
        upsertions: [
          {
            user: user!,
            mechanism: chosen,
            password,
            ...(rawIterations === undefined ? {} : { iterations: Number(rawIterations) }),
          },
        ],
      });
      context.stdout.write(
        parsed.global.json
          ? toJsonDocument({ user, mechanism: chosen, created: true })
          : `user ${user} has a ${chosen} credential\n`,
      );
      return 0;
    }
    // delete
    const mechanisms: ScramMechanism[] =
      mechanism !== undefined
        ? [mechanism]
        : await admin
            .describeUserScramCredentials([user!])
            .then(([described]) =>
              (described?.credentials ?? [])
                .map((credential) => credential.mechanism)
                .filter(isScramMechanism),
            );
    if (mechanisms.length === 0) {
      throw new SpoolError('RESOURCE_NOT_FOUND', `user ${user} has no credentials`);
    }
    await admin.alterUserScramCredentials({
      deletions: mechanisms.map((deleted) => ({ user: user!, mechanism: deleted })),
    });
    context.stdout.write(
      parsed.global.json
        ? toJsonDocument({ user, deleted: mechanisms })
        : `user ${user}: deleted ${mechanisms.join(', ')}\n`,
    );
    return 0;
  } finally {
    await admin.disconnect();
  }
}
