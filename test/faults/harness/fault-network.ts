import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';

/**
 * A private network for one fault run: a bridge in the root namespace with one network namespace
 * per cluster member, joined to the bridge by a veth pair. Each member has its own IP
 * (<subnet>.<10+n>), so a member listens on fixed ports and a partition is one command:
 * `ip link set <host end> down` cuts the member off from everyone (the other members and the
 * test process, which stays in the root namespace and reaches members through the bridge's IP);
 * `up` heals it. TCP connections across the cut are not reset: they stall as in a real partition.
 *
 * Everything a run creates is named with its prefix (`sf` + 4 hex digits) and recorded in a state
 * file under /tmp/spool-faults-state before it is created, so `removeLeftovers` can remove what a
 * crashed run (whose pid is gone) left behind: namespaces (and the processes in them), links,
 * mounts. `teardown` removes everything of this run and never throws.
 *
 * The subnets come from 198.18.0.0/16, half of the range RFC 2544 sets aside for benchmark and
 * test networks, never from the private ranges (10/8, 172.16/12, 192.168/16) that the machine's
 * own networks, a VPN or a container runtime may use. The Kubernetes harness (test/k8s/lib.sh)
 * takes the rest: 198.19.0.0/16 for Services, 198.18.0.0/24 for its pods and 198.18.255.0/24 for
 * its node, so a fault run beside a running cluster never shares a subnet with it.
 */
export const ipPath = existsSync('/usr/sbin/ip') ? '/usr/sbin/ip' : 'ip';
const stateDirectory = '/tmp/spool-faults-state';
/**
 * The fault networks' range, 198.18.0.0/16: 256 /24 subnets, 198.18.0.0/24 to 198.18.255.0/24.
 * A run takes one, numbered 1 to `subnetCount - 2`: not the first and last, which the
 * Kubernetes harness's pods and node use.
 */
const subnetCount = 256;

/** The first three octets of subnet `index` of 198.18.0.0/16: 0 → 198.18.0, 37 → 198.18.37. */
function faultSubnetPrefix(index: number): string {
  if (!Number.isInteger(index) || index < 0 || index >= subnetCount) {
    throw new Error(`fault subnet index ${index} is outside 0..${subnetCount - 1}`);
  }
  return `198.18.${index}`;
}

interface RunState {
  readonly pid: number;
  readonly prefix: string;
  readonly namespaces: string[];
  readonly links: string[];
  readonly mounts: string[];
}

export interface NetworkMember {
  readonly name: string;
  readonly namespace: string;
  readonly ip: string;
  /** The veth end on the bridge: down partitions the member, up heals it. */
  readonly hostLink: string;
}

function ip(...args: string[]): string {
  return execFileSync(ipPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function tryIp(...args: string[]): void {
  try {
    ip(...args);
  } catch {
    // Already gone.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills every process in a namespace (SIGCONT first, so a paused one can die) and deletes it. */
function removeNamespace(namespace: string): void {
  let pids: string[] = [];
  try {
    pids = ip('netns', 'pids', namespace).split(/\s+/).filter(Boolean);
  } catch {
    // The namespace is gone.
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGCONT');
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }
  tryIp('netns', 'delete', namespace);
}

function unmount(mountPoint: string): void {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      execFileSync('umount', [mountPoint], { stdio: 'ignore' });
      break;
    } catch {
      try {
        execFileSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
        break;
      } catch {
        // Not mounted, or still busy: try again.
      }
    }
  }
  rmSync(mountPoint, { recursive: true, force: true });
}

function removeRun(state: RunState): void {
  for (const namespace of state.namespaces) removeNamespace(namespace);
  for (const link of state.links) tryIp('link', 'delete', link);
  for (const mountPoint of state.mounts) unmount(mountPoint);
}

/**
 * Removes what crashed runs left: every run recorded with a dead pid, and any namespace or link
 * named like a run's (`sfXXXX`) that no live run recorded. Returns what it removed.
 */
export function removeLeftovers(): string[] {
  mkdirSync(stateDirectory, { recursive: true });
  const removed: string[] = [];
  const livePrefixes = new Set<string>();
  for (const file of readdirSync(stateDirectory)) {
    const statePath = path.join(stateDirectory, file);
    let state: RunState;
    try {
      state = JSON.parse(readFileSync(statePath, 'utf8')) as RunState;
    } catch {
      rmSync(statePath, { force: true });
      continue;
    }
    if (isAlive(state.pid) && state.pid !== process.pid) {
      livePrefixes.add(state.prefix);
      continue;
    }
    removeRun(state);
    rmSync(statePath, { force: true });
    removed.push(state.prefix);
  }
  const runName = /^(sf[0-9a-f]{4})/;
  for (const line of ip('netns', 'list').split('\n')) {
    const namespace = line.split(' ')[0] ?? '';
    const prefix = runName.exec(namespace)?.[1];
    if (prefix !== undefined && !livePrefixes.has(prefix)) {
      removeNamespace(namespace);
      removed.push(namespace);
    }
  }
  for (const link of ip('-o', 'link', 'show').split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(link)?.[1] ?? '';
    const prefix = runName.exec(name)?.[1];
    if (prefix !== undefined && !livePrefixes.has(prefix)) {
      tryIp('link', 'delete', name);
      removed.push(name);
    }
  }
  return removed;
}

export class FaultNetwork {
  readonly prefix: string;
  readonly bridge: string;
  /** The bridge's IP: the address members see the test process at. */
  readonly gatewayIp: string;
  private readonly members = new Map<string, NetworkMember>();
  private readonly state: RunState;
  private readonly statePath: string;
  /** The first three octets of this run's /24 (e.g. 198.18.37). */
  private readonly subnetPrefix: string;

  private constructor() {
    this.prefix = `sf${randomBytes(2).toString('hex')}`;
    this.bridge = `${this.prefix}br`;
    this.subnetPrefix = FaultNetwork.freeSubnetPrefix();
    this.gatewayIp = `${this.subnetPrefix}.1`;
    this.state = { pid: process.pid, prefix: this.prefix, namespaces: [], links: [], mounts: [] };
    this.statePath = path.join(stateDirectory, `${this.prefix}.json`);
  }

  /** Creates the bridge; members are added with `addMember`. */
  static create(): FaultNetwork {
    removeLeftovers();
    const network = new FaultNetwork();
    network.record((state) => state.links.push(network.bridge));
    ip('link', 'add', network.bridge, 'type', 'bridge');
    ip('addr', 'add', `${network.gatewayIp}/24`, 'dev', network.bridge);
    ip('link', 'set', network.bridge, 'up');
    return network;
  }

  /** A /24 of 198.18.0.0/16 no existing interface uses, so two runs never share a subnet. */
  private static freeSubnetPrefix(): string {
    const used = new Set(
      [...ip('-o', '-4', 'addr', 'show').matchAll(/inet (198\.1[89]\.\d+)\./g)].map(
        (match) => match[1],
      ),
    );
    for (let attempt = 0; attempt < subnetCount; attempt++) {
      const candidate = faultSubnetPrefix((randomBytes(2).readUInt16BE(0) % (subnetCount - 2)) + 1);
      if (!used.has(candidate)) return candidate;
    }
    throw new Error('no free /24 of 198.18.1.0-198.18.254.255 for the fault network');
  }

  private record(change: (state: RunState) => void): void {
    change(this.state);
    mkdirSync(stateDirectory, { recursive: true });
    writeFileSync(this.statePath, JSON.stringify(this.state));
  }

  /** Remembers a mount point so teardown (or a later run's clean-up) unmounts it. */
  recordMount(mountPoint: string): void {
    this.record((state) => state.mounts.push(mountPoint));
  }

  /** A namespace with its own IP on the bridge, loopback up. */
  addMember(name: string): NetworkMember {
    const index = this.members.size;
    const namespace = `${this.prefix}-${name}`;
    const hostLink = `${this.prefix}h${index}`;
    const peerLink = `${this.prefix}p${index}`;
    const memberIp = `${this.subnetPrefix}.${10 + index}`;
    this.record((state) => {
      state.namespaces.push(namespace);
      state.links.push(hostLink);
    });
    ip('netns', 'add', namespace);
    ip('link', 'add', hostLink, 'type', 'veth', 'peer', 'name', peerLink);
    ip('link', 'set', peerLink, 'netns', namespace);
    ip('link', 'set', hostLink, 'master', this.bridge);
    ip('link', 'set', hostLink, 'up');
    ip('-n', namespace, 'addr', 'add', `${memberIp}/24`, 'dev', peerLink);
    ip('-n', namespace, 'link', 'set', peerLink, 'up');
    ip('-n', namespace, 'link', 'set', 'lo', 'up');
    const member = { name, namespace, ip: memberIp, hostLink };
    this.members.set(name, member);
    return member;
  }

  member(name: string): NetworkMember {
    const member = this.members.get(name);
    if (member === undefined) throw new Error(`no network member ${name}`);
    return member;
  }

  /** Cuts the member off from every other member and from the test process. */
  isolate(name: string): void {
    ip('link', 'set', this.member(name).hostLink, 'down');
  }

  heal(name: string): void {
    ip('link', 'set', this.member(name).hostLink, 'up');
  }

  /** Removes every namespace (killing what runs in it), link and mount of this run. */
  teardown(): void {
    try {
      removeRun(this.state);
    } finally {
      rmSync(this.statePath, { force: true });
    }
  }
}
