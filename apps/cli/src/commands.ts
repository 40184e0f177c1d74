import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CommandHelp } from './command-help';

/**
 * The `spool` command line: the operator's and developer's tool. Each command is one entry in
 * the table of cli.ts; `spool help` prints it, and `spool help <command> [subcommand]` (or
 * `--help`, `-h` anywhere) prints the command's own help.
 */
export interface CommandContext {
  readonly argv: readonly string[];
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** What `spool produce` reads when no --file is given; process.stdin if absent. */
  readonly stdin?: NodeJS.ReadableStream;
  /** Where SPOOL_GATEWAY is read from; process.env if absent. */
  readonly env?: NodeJS.ProcessEnv;
}

export interface Command {
  readonly summary: string;
  readonly run: (context: CommandContext) => Promise<number>;
  /**
   * help: what `--help` prints, from the same declaration the command parses its flags with;
   * absent for a command that answers `--help` itself (`spool dev`, the services), which is
   * then run with `--help` alone.
   */
  readonly help?: CommandHelp;
  /** subcommands: the help of each subcommand, by name (`spool topic create --help`). */
  readonly subcommands?: Readonly<Record<string, CommandHelp>>;
}

/** The services `spool <service>` starts in this process, as the container image does. */
export const serviceNames = ['controller', 'storage-node', 'coordinator', 'gateway'] as const;
export type ServiceName = (typeof serviceNames)[number];

/** Where a service's process entry point is: resolved as a file, never imported as a module. */
export function serviceEntryPoint(service: ServiceName): string {
  const manifest = require.resolve(`@spool/${service}/package.json`);
  return path.join(path.dirname(manifest), 'dist', 'main.js');
}

export function cliVersion(): string {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
