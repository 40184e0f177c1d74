// Proves the command line's contract with scripts: help lists every command, unknown commands
// fail with exit code 1 and a message naming the command, and --version prints the version.
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

  it('fails on an unknown command and names it', async () => {
    const { exitCode, stderr } = await run(['topics']);
    expect(exitCode).toBe(1);
    expect(stderr).toContain('unknown command "topics"');
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
