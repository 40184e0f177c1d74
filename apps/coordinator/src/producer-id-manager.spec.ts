// Proves the ProducerIdManager hands out unique ids from controller blocks, fetches the next
// block before the current one runs out (the controller is asked while ids remain), bumps the
// epoch of a known id, moves to a new id when the epoch would overflow int16, refuses malformed
// requests, and reports a controller outage as a retriable error that heals once blocks return.
import { describe, expect, it, vi } from 'vitest';
import { ProducerIdManager, producerEpochMax, type ProducerIdBlock } from './producer-id-manager';

function fakeController(blockSize: number) {
  let nextFirst = 0n;
  const calls: Array<{ handedOutBefore: number }> = [];
  let failing = false;
  let handedOut = 0;
  return {
    calls,
    setFailing(value: boolean) {
      failing = value;
    },
    countHandedOut() {
      handedOut += 1;
    },
    allocateBlock: (): Promise<ProducerIdBlock> => {
      calls.push({ handedOutBefore: handedOut });
      if (failing) return Promise.reject(new Error('controller unreachable'));
      const block = { firstProducerId: nextFirst, count: blockSize };
      nextFirst += BigInt(blockSize);
      return Promise.resolve(block);
    },
  };
}

describe('ProducerIdManager', () => {
  it('hands out unique ids at epoch 0 across blocks, prefetching the next block', async () => {
    const controller = fakeController(10);
    const manager = new ProducerIdManager(controller);
    const ids: bigint[] = [];
    for (let index = 0; index < 35; index++) {
      const response = await manager.initProducerId({ producerId: -1n, producerEpoch: -1 });
      controller.countHandedOut();
      expect(response.producerEpoch).toBe(0);
      ids.push(response.producerId);
    }
    expect(ids).toEqual(Array.from({ length: 35 }, (_, index) => BigInt(index)));
    // Block 1 is asked for at the first call; each later one as the 9th id of the previous block
    // is handed out (90% used), while one id of it remains.
    expect(controller.calls.map((call) => call.handedOutBefore)).toEqual([0, 8, 18, 28]);
  });

  it('gives every concurrent caller a different id', async () => {
    const controller = fakeController(7);
    const manager = new ProducerIdManager(controller);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        manager.initProducerId({ producerId: -1n, producerEpoch: -1 }),
      ),
    );
    const ids = responses.map((response) => response.producerId);
    expect(new Set(ids).size).toBe(50);
    expect(controller.calls.length).toBeLessThanOrEqual(9);
  });

  it('bumps the epoch of a known producer, and moves to a new id past epoch 32767', async () => {
    const manager = new ProducerIdManager(fakeController(1000));
    const first = await manager.initProducerId({ producerId: -1n, producerEpoch: -1 });
    expect(
      await manager.initProducerId({ producerId: first.producerId, producerEpoch: 0 }),
    ).toEqual({
      error: undefined,
      producerId: first.producerId,
      producerEpoch: 1,
    });
    expect(
      await manager.initProducerId({ producerId: 77n, producerEpoch: producerEpochMax - 1 }),
    ).toMatchObject({ producerId: 77n, producerEpoch: producerEpochMax });
    const overflowed = await manager.initProducerId({
      producerId: 77n,
      producerEpoch: producerEpochMax,
    });
    expect(overflowed.producerEpoch).toBe(0);
    expect(overflowed.producerId).not.toBe(77n);
    expect(overflowed.producerId).not.toBe(first.producerId);
  });

  it('refuses malformed requests naming the field', async () => {
    const manager = new ProducerIdManager(fakeController(10));
    await expect(
      manager.initProducerId({ producerId: -5n, producerEpoch: 0 }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('producer_id'),
    });
    await expect(
      manager.initProducerId({ producerId: 3n, producerEpoch: -1 }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('producer_epoch'),
    });
    await expect(
      manager.initProducerId({ producerId: 3n, producerEpoch: producerEpochMax + 1 }),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('answers a retriable error while the controller is down, and recovers', async () => {
    const controller = fakeController(2);
    const manager = new ProducerIdManager(controller);
    controller.setFailing(true);
    await expect(
      manager.initProducerId({ producerId: -1n, producerEpoch: -1 }),
    ).rejects.toMatchObject({ code: 'COORDINATOR_LOAD_IN_PROGRESS', retriable: true });
    controller.setFailing(false);
    // Answered retriably until its retry of the block is due, then served from the new block.
    const response = await vi.waitFor(
      () => manager.initProducerId({ producerId: -1n, producerEpoch: -1 }),
      { timeout: 5_000, interval: 20 },
    );
    expect(response.producerId).toBe(0n);
  });

  it('refuses a block the controller got wrong instead of handing out its ids', async () => {
    const manager = new ProducerIdManager({
      allocateBlock: () => Promise.resolve({ firstProducerId: -10n, count: 5 }),
    });
    await expect(
      manager.initProducerId({ producerId: -1n, producerEpoch: -1 }),
    ).rejects.toMatchObject({ retriable: true, message: expect.stringContaining('outside') });
  });
});
