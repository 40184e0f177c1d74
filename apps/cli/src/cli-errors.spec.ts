// Proves the error contract scripts rely on: one line `spool: <CODE>: <message>` on stderr, the
// stack only with --verbose, and exit codes 1 (operation failed), 2 (usage, naming the flag) and
// 3 (gateway unreachable). Usage errors are checked through runCli; none reaches the network.
import { PassThrough } from 'node:stream';
import { SpoolError } from '@spool/client';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli';
import { ExitCode, UsageError, exitCodeFor, reportError } from './cli-errors';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

async function run(argv: string[]): Promise<{ exitCode: number; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const exitCode = await runCli(argv, { stdout: stdout.stream, stderr: stderr.stream, env: {} });
  return { exitCode, stderr: stderr.text() };
}

describe('exit codes', () => {
  it('maps errors to 1, 2 and 3', () => {
    expect(exitCodeFor(new SpoolError('INVALID_REPLICATION_FACTOR', 'too many'))).toBe(
      ExitCode.OperationFailed,
    );
    expect(exitCodeFor(new UsageError('unknown flag --x'))).toBe(ExitCode.UsageError);
    expect(exitCodeFor(new SpoolError('UNAVAILABLE', 'connection refused'))).toBe(
      ExitCode.GatewayUnreachable,
    );
    expect(exitCodeFor(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(
      ExitCode.GatewayUnreachable,
    );
    expect(exitCodeFor(new Error('plain'))).toBe(ExitCode.OperationFailed);
  });
});

describe('reportError', () => {
  it('prints one line with the code, without repeating it or gRPC noise', () => {
    const stderr = capture();
    const exitCode = reportError(
      new SpoolError('UNAVAILABLE', 'UNAVAILABLE: No connection established.\nResolution note: '),
      stderr.stream,
      { verbose: false },
    );
    expect(exitCode).toBe(3);
    expect(stderr.text()).toBe('spool: UNAVAILABLE: No connection established.\n');
  });

  it('adds the stack only with --verbose', () => {
    const stderr = capture();
    reportError(new SpoolError('TOPIC_ALREADY_EXISTS', 'topic t exists'), stderr.stream, {
      verbose: true,
    });
    const lines = stderr.text().trimEnd().split('\n');
    expect(lines[0]).toBe('spool: TOPIC_ALREADY_EXISTS: topic t exists');
    expect(lines.length).toBeGreaterThan(1);
    expect(lines[1]).toContain('SpoolError');
  });
});

describe('usage errors through runCli', () => {
  it.each([
    [['topic', 'create', 't', '--bogus'], 'spool: USAGE: unknown flag --bogus'],
    [['topic', 'create', 't', '--partitions', 'six'], '--partitions must be an integer'],
    [['topic', 'create'], 'missing NAME'],
    [['topic', 'frob'], 'unknown topic subcommand "frob"'],
    [['topic', 'alter-config', 't'], '--config or --delete-config is needed'],
    [['topic', 'alter-config', 't', '--config', 'novalue'], '--config must be key=value'],
    [['produce'], 'missing TOPIC'],
    [['produce', 't', '--acks', '2'], '--acks must be one of 0|1|all, got "2"'],
    [['produce', 't', '--compression', 'brotli'], '--compression must be one of'],
    [['consume', 't', '--offset', '3'], '--offset needs --partition'],
    [['consume', 't', '--format', 'xml'], '--format must be one of text|json'],
    [['consume', 't', '--max-messages'], 'flag --max-messages needs a value'],
    [['cluster', 'health'], 'unknown cluster subcommand "health"'],
    [['topic', 'list', '--gateway', 'nowhere'], '--gateway must be host:port, got "nowhere"'],
  ])('%j exits 2 naming the problem', async (argv, expected) => {
    const { exitCode, stderr } = await run(argv);
    expect(exitCode).toBe(2);
    expect(stderr).toContain(expected);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
