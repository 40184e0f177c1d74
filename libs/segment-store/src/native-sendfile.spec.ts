// Proves the addon's sendMoreNow over a real loopback TCP socket: a header sent with MSG_MORE
// waits in the kernel until the sendfile that follows, and the reader gets both in one piece;
// bad arguments and a descriptor that is not a socket fail with clear errors. Skipped when the
// addon is not built.
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSendfileBinding } from './native-sendfile';
import { socketFileDescriptor } from './sendfile-transfer';
import { temporaryDirectory } from './testing';

const binding = loadSendfileBinding().binding;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** The kernel sends bytes held by MSG_MORE on its own after 200 ms; checks stop well before. */
const heldCheckWithinMs = 100;

async function connectLoopback(): Promise<{ sender: net.Socket; receiver: net.Socket }> {
  const server = net.createServer({ noDelay: true });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection');
  const receiver = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  receiver.setNoDelay(true);
  await once(receiver, 'connect');
  const [sender] = (await accepted) as [net.Socket];
  server.close();
  cleanups.push(() => {
    sender.destroy();
    receiver.destroy();
  });
  return { sender, receiver };
}

describe.skipIf(binding?.sendMoreNow === undefined || binding.sendfileNow === undefined)(
  'sendMoreNow',
  () => {
    it('holds a header in the kernel until the sendfile after it, then both arrive together', async () => {
      const temporary = temporaryDirectory();
      cleanups.push(temporary.remove);
      const records = Buffer.from('the records of a fetch response');
      const filePath = path.join(temporary.directory, 'segment.log');
      fs.writeFileSync(filePath, records);
      const fileFd = fs.openSync(filePath, 'r');
      cleanups.push(() => fs.closeSync(fileFd));
      const { sender, receiver } = await connectLoopback();
      const chunks: Buffer[] = [];
      receiver.on('data', (chunk: Buffer) => chunks.push(chunk));
      const socketFd = socketFileDescriptor(sender)!;
      const header = Buffer.from('HEADER:');

      const sentAt = performance.now();
      expect(binding!.sendMoreNow!(socketFd, header)).toBe(header.length);
      await sleep(20);
      // Only meaningful before the kernel's own 200 ms flush; a machine too slow to get here in
      // time proves nothing either way.
      if (performance.now() - sentAt < heldCheckWithinMs) expect(chunks).toEqual([]);

      expect(binding!.sendfileNow!(socketFd, fileFd, 0, records.length)).toBe(records.length);
      await once(receiver, 'data');
      expect(Buffer.concat(chunks).toString()).toBe(`HEADER:${records.toString()}`);
      if (performance.now() - sentAt < heldCheckWithinMs) expect(chunks).toHaveLength(1);
    });

    it('fails clearly on bad arguments and on a descriptor that is not a socket', () => {
      const call = (name: 'sendMoreNow' | 'sendfileNow' | 'sendfileChunk', ...args: unknown[]) =>
        (binding as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!(...args);
      expect(() => call('sendMoreNow', 3)).toThrow(
        new TypeError('sendMoreNow(socketFd, bytes) takes 2 arguments'),
      );
      expect(() => call('sendfileNow', 3, 4, 0)).toThrow(
        new TypeError('sendfileNow(socketFd, fileFd, position, count) takes 4 arguments'),
      );
      expect(() => call('sendfileChunk', 3, 4, 0, 1, 10, 'extra')).toThrow(
        new TypeError(
          'sendfileChunk(socketFd, fileFd, position, count, writableWaitMsMax) takes 5 arguments',
        ),
      );
      expect(() => binding!.sendMoreNow!(-1, Buffer.from('x'))).toThrow(/socketFd out of range/);
      expect(() => binding!.sendMoreNow!(3, 'x' as unknown as Buffer)).toThrow(
        /bytes must be a Buffer/,
      );
      const temporary = temporaryDirectory();
      cleanups.push(temporary.remove);
      const fileFd = fs.openSync(path.join(temporary.directory, 'not-a-socket'), 'w');
      cleanups.push(() => fs.closeSync(fileFd));
      expect(() => binding!.sendMoreNow!(fileFd, Buffer.from('x'))).toThrow(
        expect.objectContaining({ code: 'ENOTSOCK', syscall: 'send' }),
      );
    });
  },
);
