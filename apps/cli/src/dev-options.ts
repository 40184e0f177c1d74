import * as path from 'node:path';
import { UsageError } from './cli-errors';
import { helpFlags, parseFlags, type CommandHelp } from './command-help';

/**
 * `spool dev`'s command line: the flags, their defaults and meaning (one table for the parser
 * and `--help`), and the checked options the supervisor runs with.
 */

/** What the supervisor does when a process exits on its own (Kubernetes' restartPolicy). */
export const restartPolicies = ['always', 'on-failure', 'never'] as const;
export type RestartPolicy = (typeof restartPolicies)[number];

export interface DevOptions {
  /** dataDirectory: absolute; each process's data, the controller's journal and cluster.json. */
  readonly dataDirectory: string;
  /** gatewayPort: the gateway's gRPC port, kept across its restarts; 0 picks a free one once. */
  readonly gatewayPort: number;
  /** kafkaPort: the gateway's Kafka listener, kept across its restarts; 0 picks one once. */
  readonly kafkaPort: number;
  readonly storageNodeCount: number;
  readonly coordinatorCount: number;
  readonly restartPolicy: RestartPolicy;
  /** profileDirectory: absolute, where every process writes a V8 CPU profile when it exits. */
  readonly profileDirectory: string | undefined;
  /**
   * secure: TLS with mutual authentication everywhere, under a CA generated into
   * <data-dir>/tls (dev-security.ts), and <data-dir>/client.properties for clients.
   */
  readonly secure: boolean;
}

/** Bounds that keep a laptop responsive: each process is a Node.js runtime of ~60 MB. */
const storageNodeCountMax = 16;
const coordinatorCountMax = 8;

export const devHelp: CommandHelp = {
  path: ['dev'],
  usage:
    'spool dev [--nodes N] [--coordinators N] [--gateway-port PORT] [--kafka-port PORT] ' +
    '[--data-dir DIR] ...',
  summary:
    'Start a whole local cluster as separate processes and keep it running (Ctrl-C stops it).',
  details: [
    '',
    'One controller, N storage nodes, coordinators and a gateway, each its own process and',
    'process group, as a StatefulSet runs them. A process that dies is logged and restarted',
    'after a back-off (0.5 s, doubling to 30 s, reset after 30 s of stable running) with the',
    'same id, data and ports; the rest keeps serving.',
    '"ready" is printed once every partition is in sync (ISR = replicas); the ports of every',
    "process are in <data-dir>/cluster.json, kept current across restarts (the gateway's",
    'Kafka listener as ports.kafka).',
    'Ctrl-C stops the gateway and coordinators, then the storage nodes (controlled shutdown),',
    'then the controller; a second Ctrl-C kills everything at once (exit 1).',
  ],
  flags: {
    'data-dir': {
      type: 'string',
      valueName: 'DIR',
      default: '.spool',
      description: "the cluster's data; a later start on the same folder resumes it",
    },
    'gateway-port': {
      type: 'string',
      valueName: 'PORT',
      default: '9090',
      description: "the gateway's gRPC port, where clients connect; 0 picks a free one",
    },
    'kafka-port': {
      type: 'string',
      valueName: 'PORT',
      default: '9092',
      description:
        "the gateway's Kafka listener, where Kafka clients bootstrap (bootstrap.servers " +
        'localhost:9092); 0 picks a free one',
    },
    nodes: {
      type: 'string',
      valueName: 'N',
      default: '3',
      description: `storage nodes (broker ids 0 to N-1), 1 to ${storageNodeCountMax}`,
    },
    coordinators: {
      type: 'string',
      valueName: 'N',
      default: '1',
      description: `group coordinators, 1 to ${coordinatorCountMax}`,
    },
    restart: {
      type: 'string',
      valueName: 'POLICY',
      default: 'always',
      description:
        'what to do with a process that exits: always restart it, on-failure (exit code ' +
        'not 0), never (leave it down, to watch a failover)',
    },
    secure: {
      type: 'boolean',
      description:
        'TLS and mTLS on every port, certificates from a CA generated into <data-dir>/tls; ' +
        'clients use <data-dir>/client.properties (spool --command-config FILE)',
    },
    'profile-dir': {
      type: 'string',
      valueName: 'DIR',
      defaultText: 'none',
      description: 'every process writes a V8 CPU profile here when it exits',
    },
    ...helpFlags,
  },
  examples: [
    'spool dev --nodes 3 --data-dir /tmp/spool --restart never',
    'spool dev --secure --data-dir /tmp/spool   # then: spool --command-config /tmp/spool/client.properties topic list',
  ],
};

/** The checked options, or a UsageError naming the flag and the value. */
export function parseDevOptions(argv: readonly string[]): DevOptions {
  const { values, positionals } = parseFlags(argv, devHelp.flags);
  if (positionals.length > 0) {
    throw new UsageError(`spool dev takes no arguments, got "${positionals[0]}"`);
  }
  const restart = values.restart as string;
  if (!(restartPolicies as readonly string[]).includes(restart)) {
    throw new UsageError(`--restart must be one of ${restartPolicies.join('|')}, got "${restart}"`);
  }
  const dataDirectory = values['data-dir'] as string;
  if (dataDirectory === '') throw new UsageError('--data-dir must name a folder, got ""');
  const profileDirectory = values['profile-dir'] as string | undefined;
  if (profileDirectory === '') throw new UsageError('--profile-dir must name a folder, got ""');
  return {
    dataDirectory: path.resolve(dataDirectory),
    gatewayPort: integerValue('gateway-port', values['gateway-port'] as string, 0, 65_535),
    kafkaPort: integerValue('kafka-port', values['kafka-port'] as string, 0, 65_535),
    storageNodeCount: integerValue('nodes', values.nodes as string, 1, storageNodeCountMax),
    coordinatorCount: integerValue(
      'coordinators',
      values.coordinators as string,
      1,
      coordinatorCountMax,
    ),
    restartPolicy: restart as RestartPolicy,
    profileDirectory: profileDirectory === undefined ? undefined : path.resolve(profileDirectory),
    secure: values.secure === true,
  };
}

function integerValue(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`--${flag} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}
