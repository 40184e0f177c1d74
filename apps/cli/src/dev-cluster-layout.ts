import { renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { ServiceName } from './commands';
import type { DevOptions } from './dev-options';
import { serviceSecurityArguments } from './dev-security';

/**
 * What `spool dev` runs and where: one plan per process with its stable identity (role, id, data
 * folder, coordinator id, broker id), the ports it asks for, and its command line; the order of
 * the stop; and `<data-dir>/cluster.json`, the published state of every process.
 *
 * Ports: each process binds free ports (0) the first time, except the gateway, which binds
 * --gateway-port and --kafka-port; a restart binds the very ports the process had, so the controller's address
 * the others were given, the gateway's address clients use and cluster.json all stay valid.
 */

export interface ServicePorts {
  readonly grpc: number;
  readonly metrics: number;
  /** data: the storage node's replica and consumer fetch port. */
  readonly data?: number;
  /** kafka: the gateway's Kafka listener. */
  readonly kafka?: number;
}

export interface ProcessPlan {
  readonly role: ServiceName;
  readonly id: number;
  /** name: how logs and messages name the process: `storage-node-1`, `controller`. */
  readonly name: string;
  /** requestedPorts: what the first start binds; 0 is any free port. */
  readonly requestedPorts: ServicePorts;
  /**
   * How long an orphaned process waits before stopping itself (dev-orphan-guard.ts): the
   * controller last, so storage nodes can still reach it for their controlled shutdown.
   */
  readonly orphanStopDelayMs: number;
  /** The service's arguments, given where the controller is and which ports to bind. */
  serviceArguments(controllerAddress: () => string, ports: ServicePorts): string[];
}

/** How long the orphaned controller outlives the others (a storage node stops in ~1 s). */
const controllerOrphanStopDelayMs = 3_000;

export function processName(role: ServiceName, id: number): string {
  return role === 'storage-node' || role === 'coordinator' ? `${role}-${id}` : role;
}

/** The controller first (everyone is told where it is), then the others, gateway last. */
export function clusterLayout(options: DevOptions): ProcessPlan[] {
  const { dataDirectory } = options;
  const anyPorts: ServicePorts = { grpc: 0, metrics: 0 };
  const portArguments = (ports: ServicePorts): string[] => [
    ...['--grpc-port', String(ports.grpc), '--metrics-port', String(ports.metrics)],
    ...(ports.data === undefined ? [] : ['--data-port', String(ports.data)]),
    ...(ports.kafka === undefined ? [] : ['--kafka-port', String(ports.kafka)]),
  ];
  // --secure: every service presents its role's certificate and requires its peers' (mTLS).
  const securityArguments = (role: ServiceName): string[] =>
    options.secure ? serviceSecurityArguments(dataDirectory, role) : [];
  const controller: ProcessPlan = {
    role: 'controller',
    id: 0,
    name: processName('controller', 0),
    requestedPorts: anyPorts,
    orphanStopDelayMs: controllerOrphanStopDelayMs,
    serviceArguments: (_controllerAddress, ports) => [
      ...portArguments(ports),
      ...securityArguments('controller'),
      ...['--metadata-path', path.join(dataDirectory, 'controller', 'metadata.journal')],
    ],
  };
  // A stable id per coordinator, so a restarted one is recognised by the controller.
  const coordinators = Array.from({ length: options.coordinatorCount }, (_, id): ProcessPlan => ({
    role: 'coordinator',
    id,
    name: processName('coordinator', id),
    requestedPorts: anyPorts,
    orphanStopDelayMs: 0,
    serviceArguments: (controllerAddress, ports) => [
      ...portArguments(ports),
      ...securityArguments('coordinator'),
      ...['--coordinator-id', `coordinator-${id}`, '--controller-addresses', controllerAddress()],
    ],
  }));
  const storageNodes = Array.from({ length: options.storageNodeCount }, (_, id): ProcessPlan => ({
    role: 'storage-node',
    id,
    name: processName('storage-node', id),
    requestedPorts: { ...anyPorts, data: 0 },
    orphanStopDelayMs: 0,
    serviceArguments: (controllerAddress, ports) => [
      ...portArguments(ports),
      ...securityArguments('storage-node'),
      ...['--broker-id', String(id), '--controller-addresses', controllerAddress()],
      ...['--data-dir', path.join(dataDirectory, `storage-${id}`)],
    ],
  }));
  const gateway: ProcessPlan = {
    role: 'gateway',
    id: 0,
    name: processName('gateway', 0),
    requestedPorts: { grpc: options.gatewayPort, metrics: 0, kafka: options.kafkaPort },
    orphanStopDelayMs: 0,
    serviceArguments: (controllerAddress, ports) => [
      ...portArguments(ports),
      ...securityArguments('gateway'),
      ...['--controller-addresses', controllerAddress()],
    ],
  };
  return [controller, ...coordinators, ...storageNodes, gateway];
}

/**
 * The stop, in reverse order of dependence: the clients of the data path first, then the
 * storage nodes, which hand their leaderships over through the controller (controlled shutdown)
 * while it still runs, then the controller.
 */
export const stopPhases: readonly {
  readonly roles: readonly ServiceName[];
  readonly why: string;
}[] = [
  { roles: ['gateway', 'coordinator'], why: 'no new requests' },
  { roles: ['storage-node'], why: 'controlled shutdown' },
  { roles: ['controller'], why: 'last' },
];

/** One process as cluster.json shows it. */
export interface ClusterFileEntry {
  readonly role: ServiceName;
  readonly id: number;
  /** pid: of the current run; the process is its own process-group leader. */
  readonly pid: number | undefined;
  readonly ports: ServicePorts | undefined;
  /** state: running, restarting (waiting out its back-off) or down (not restarted). */
  readonly state: 'starting' | 'running' | 'restarting' | 'down' | 'stopping' | 'stopped';
  /** restarts: how many times the supervisor started it again. */
  readonly restarts: number;
}

/** Writes cluster.json whole or not at all (a reader never sees half a file). */
export function writeClusterFile(filePath: string, processes: readonly ClusterFileEntry[]): void {
  const temporaryPath = `${filePath}.${process.pid}.tmp`;
  writeFileSync(temporaryPath, `${JSON.stringify({ processes }, null, 2)}\n`);
  renameSync(temporaryPath, filePath);
}
