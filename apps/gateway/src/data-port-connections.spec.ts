// Proves the data-port connection pool with fake connections: each concurrent fetch gets its own
// connection up to the bound, then shares the least busy one; a released connection is reused,
// one released with a response still due (an abandoned long poll) or failed is closed, idle
// connections beyond their bound are closed, and a closed pool refuses and closes everything.
import { describe, expect, it } from 'vitest';
import type { DataPortClient } from '@spool/protocol';
import { DataPortConnections } from './data-port-connections';

class FakeConnection {
  isClosed = false;
  inFlightRequestCount = 0;
  constructor(readonly id: number) {}
  close(): Promise<void> {
    this.isClosed = true;
    return Promise.resolve();
  }
}

function pool(connectionsMax: number, idleConnectionsMax = 8) {
  const opened: FakeConnection[] = [];
  const connections = new DataPortConnections('127.0.0.1', 9292, {
    connectionsMax,
    idleConnectionsMax,
    connect: async () => {
      const connection = new FakeConnection(opened.length);
      opened.push(connection);
      return connection as unknown as DataPortClient;
    },
  });
  return { connections, opened };
}

const idOf = (client: DataPortClient): number => (client as unknown as FakeConnection).id;

describe('DataPortConnections', () => {
  it('stops waiting for a connection when the fetch is abandoned, and keeps it if it opens', async () => {
    let open: (() => void) | undefined;
    const opened: FakeConnection[] = [];
    const connections = new DataPortConnections('127.0.0.1', 9292, {
      connectionsMax: 2,
      idleConnectionsMax: 2,
      // A node cut off from the network: the connect waits until it is let through.
      connect: () =>
        new Promise<DataPortClient>((resolve) => {
          open = () => {
            const connection = new FakeConnection(opened.length);
            opened.push(connection);
            resolve(connection as unknown as DataPortClient);
          };
        }),
    });
    const abandon = new AbortController();
    const waiting = connections.acquire(abandon.signal);
    abandon.abort(new Error('moved to a new leader'));
    await expect(waiting).rejects.toThrow('moved to a new leader');
    // The connection opens after all: released at once, idle for the next fetch.
    open!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(opened[0]!.isClosed).toBe(false);
    expect(connections.connectionCount).toBe(1);
    const next = await connections.acquire();
    expect(idOf(next.client)).toBe(0);
    // Abandoned before it began: refused without waiting.
    await expect(connections.acquire(AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });

  it('opens a connection per concurrent fetch up to the bound, then shares the least busy', async () => {
    const { connections, opened } = pool(2);
    const a = await connections.acquire();
    const b = await connections.acquire();
    expect([idOf(a.client), idOf(b.client)]).toEqual([0, 1]);
    opened[0]!.inFlightRequestCount = 3;
    opened[1]!.inFlightRequestCount = 1;
    const shared = await connections.acquire();
    expect(idOf(shared.client)).toBe(1);
    expect(connections.connectionCount).toBe(2);

    // Released with nothing due: reused by the next fetch.
    opened[0]!.inFlightRequestCount = 0;
    a.release();
    a.release();
    expect(idOf((await connections.acquire()).client)).toBe(0);

    // Released by both its users while a response is still due: closed, not reused.
    shared.release();
    expect(opened[1]!.isClosed).toBe(false);
    b.release();
    expect(opened[1]!.isClosed).toBe(true);
    expect(connections.connectionCount).toBe(1);
  });

  it('never reuses a failed connection and bounds the idle ones', async () => {
    const { connections, opened } = pool(10, 1);
    const leases = await Promise.all([connections.acquire(), connections.acquire()]);
    opened[0]!.isClosed = true;
    leases.forEach((lease) => lease.release());
    // Connection 0 failed; connection 1 is the one idle connection kept.
    expect(connections.connectionCount).toBe(1);
    expect(idOf((await connections.acquire()).client)).toBe(1);

    const third = await connections.acquire();
    connections.close();
    expect(opened.every((connection) => connection.isClosed)).toBe(true);
    third.release();
    await expect(connections.acquire()).rejects.toMatchObject({ code: 'NETWORK_EXCEPTION' });
  });
});
