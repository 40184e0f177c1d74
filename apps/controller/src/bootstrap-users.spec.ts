// Proves bootstrap.scram.user on a real controller in-process: the first start writes the user's
// SCRAM-SHA-256 and -512 credentials for the file's password; a restart with the same password
// writes nothing (the salts stay); a restart after the password file changed replaces both; and
// a missing or empty password file stops the start with a message naming it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  createGrpcClient,
  passwordMatches,
  type RunningService,
  type ScramMechanism,
} from '@spool/common';
import {
  ControllerServiceClient,
  type UserScramCredentials,
  type WatchMetadataResponse,
} from '@spool/protocol';
import { startController } from './controller-service';

function start(
  metadataPath: string,
  bootstrap: { user: string; passwordFile: string },
): Promise<RunningService> {
  return startController({
    argv: [
      ...['--grpc-port', '0', '--metrics-port', '0', '--log-level', 'silent'],
      ...['--metadata-path', metadataPath],
      ...['--bootstrap-scram-user', bootstrap.user],
      ...['--bootstrap-scram-password-file', bootstrap.passwordFile],
    ],
    env: {},
    handleSignals: false,
  });
}

/** The users of the controller's metadata snapshot, once `user` is among them. */
async function usersOnceWritten(service: RunningService, user: string) {
  const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
  try {
    return await vi.waitFor(
      async () => {
        const snapshot = await new Promise<WatchMetadataResponse>((resolve, reject) => {
          const stream = client.watchMetadata({ fromVersion: 0n });
          stream.on('data', (message: WatchMetadataResponse) => {
            resolve(message);
            stream.cancel();
          });
          stream.on('error', (error: { code?: number }) => {
            if (error.code !== 1) reject(error);
          });
        });
        const found = snapshot.security?.users.find((candidate) => candidate.user === user);
        if (found === undefined || found.credentials.length < 2) throw new Error('not yet');
        return found;
      },
      { timeout: 10_000, interval: 100 },
    );
  } finally {
    client.close();
  }
}

async function matchesBoth(user: UserScramCredentials, password: string): Promise<boolean[]> {
  return Promise.all(
    user.credentials.map((credential) =>
      passwordMatches(
        {
          mechanism: credential.mechanism as ScramMechanism,
          iterations: credential.iterations,
          salt: Buffer.from(credential.salt),
          storedKey: Buffer.from(credential.storedKey),
          serverKey: Buffer.from(credential.serverKey),
        },
        password,
      ),
    ),
  );
}

describe('bootstrap SCRAM users', () => {
  it('writes the user, keeps it while the password holds, follows a changed password', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'spool-bootstrap-users-'));
    const metadataPath = path.join(directory, 'journal');
    const passwordFile = path.join(directory, 'password');
    writeFileSync(passwordFile, 'first-password\n');
    const bootstrap = { user: 'admin', passwordFile };

    let service = await start(metadataPath, bootstrap);
    const first = await usersOnceWritten(service, 'admin').finally(() => service.stop());
    expect(first.credentials.map((credential) => credential.mechanism)).toEqual([
      'SCRAM-SHA-256',
      'SCRAM-SHA-512',
    ]);
    expect(await matchesBoth(first, 'first-password')).toEqual([true, true]);

    service = await start(metadataPath, bootstrap);
    // Give the new leadership time to have written, were it going to.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const kept = await usersOnceWritten(service, 'admin').finally(() => service.stop());
    expect(kept.credentials.map((credential) => Buffer.from(credential.salt))).toEqual(
      first.credentials.map((credential) => Buffer.from(credential.salt)),
    );

    writeFileSync(passwordFile, 'rotated-password\n');
    service = await start(metadataPath, bootstrap);
    try {
      const rotated = await vi.waitFor(
        async () => {
          const users = await usersOnceWritten(service, 'admin');
          if ((await matchesBoth(users, 'rotated-password')).includes(false)) {
            throw new Error('not rotated yet');
          }
          return users;
        },
        { timeout: 10_000, interval: 200 },
      );
      expect(await matchesBoth(rotated, 'first-password')).toEqual([false, false]);
    } finally {
      await service.stop();
    }
  });

  it('names a password file that is missing or empty', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'spool-bootstrap-users-'));
    const metadataPath = path.join(directory, 'journal');
    await expect(
      start(metadataPath, { user: 'admin', passwordFile: path.join(directory, 'absent') }),
    ).rejects.toThrow(/bootstrap\.scram\.password\.file .*absent cannot be read \(ENOENT\)/);
    writeFileSync(path.join(directory, 'empty'), '\n');
    await expect(
      start(metadataPath, { user: 'admin', passwordFile: path.join(directory, 'empty') }),
    ).rejects.toThrow(/holds no password/);
  });
});
