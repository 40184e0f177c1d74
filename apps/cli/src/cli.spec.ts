// Proves the command line's contract with scripts: help lists every command, unknown commands
// and a bare `spool` are usage errors (exit 2) and name the command, every form of help
// (`spool help X Y`, --help, -h, `help` in place of the subcommand) prints the same text on
// stdout with exit 0, `--` makes "help" a topic name, and --version prints the version.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli';

async function run(argv: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { stdout: '', stderr: '' };
  stdout.on('data', (chunk: Buffer) => (chunks.stdout += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (chunks.stderr += chunk.toString()));
  const exitCode = await runCli(argv, { stdout, stderr });
  return { exitCode, ...chunks };
}

describe('spool', () => {
  it('lists its commands', async () => {
    const { exitCode, stdout } = await run(['help']);
    expect(exitCode).toBe(0);
    for (const command of ['dev', 'topic', 'group', 'produce', 'consume', 'cluster', 'gateway']) {
      expect(stdout).toContain(`  ${command}`);
    }
  });

  it('fails on an unknown command and names it, with exit code 2', async () => {
    const { exitCode, stderr } = await run(['topics']);
    expect(exitCode).toBe(2);
    expect(stderr).toContain('unknown command "topics"');
    expect(await run(['help', 'topics'])).toMatchObject({ exitCode: 2 });
  });

  it('prints the usage on stderr with exit code 2 when no command is given', async () => {
    const { exitCode, stdout, stderr } = await run([]);
    expect(exitCode).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('usage: spool <command>');
  });

  it('answers help in every form with the same text', async () => {
    const expected = await run(['help', 'topic', 'create']);
    expect(expected.exitCode).toBe(0);
    expect(expected.stdout).toMatch(/^usage: spool topic create NAME/);
    for (const argv of [
      ['topic', 'create', '--help'],
      ['topic', 'create', '-h'],
      ['topic', 'create', 'help'],
      ['topic', 'create', 'orders', '--partitions', '3', '--help'],
      ['--json', 'topic', 'create', '-h'],
    ]) {
      expect(await run(argv)).toEqual({ exitCode: 0, stdout: expected.stdout, stderr: '' });
    }
    const topic = await run(['topic', 'help']);
    expect(topic.stdout).toMatch(/^usage: spool topic </);
    expect(topic.stdout).toContain('  alter-config  ');
    expect((await run(['produce', 'help'])).stdout).toMatch(/^usage: spool produce TOPIC/);
  });

  it('refuses help for a subcommand that does not exist', async () => {
    const { exitCode, stderr } = await run(['help', 'topic', 'frob']);
    expect(exitCode).toBe(2);
    expect(stderr).toBe(
      'spool: USAGE: unknown topic subcommand "frob": expected create, list, describe, delete, alter-config\n',
    );
  });

  it('takes "help" after -- as a name, not a request for help', async () => {
    // The line is parsed and fails on its flag before any connection: the name was accepted.
    const { exitCode, stderr } = await run(['produce', '--acks', '2', '--', 'help']);
    expect(exitCode).toBe(2);
    expect(stderr).toContain('--acks must be one of 0|1|all, got "2"');
  });

  it('prints its version', async () => {
    const { exitCode, stdout } = await run(['--version']);
    expect(exitCode).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('refuses a bad --nodes for dev', async () => {
    const { exitCode, stderr } = await run(['dev', '--nodes', 'zero']);
    expect(exitCode).toBe(2);
    expect(stderr).toContain('--nodes must be an integer from 1 to 16, got "zero"');
  });

  it('refuses a bad --coordinators for dev', async () => {
    const { exitCode, stderr } = await run(['dev', '--coordinators', '0']);
    expect(exitCode).toBe(2);
    expect(stderr).toContain('--coordinators must be an integer from 1 to 8, got "0"');
  });
});
