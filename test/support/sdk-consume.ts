// Reads a topic back through the SDK for specs that compare what another client wrote with what
// the SDK sees: every message copied out of the consumer's buffers (keys, values and header
// values are views the consumer may reuse once `eachMessage` returns).
import type { ConsumedMessage, Spool } from '@spool/client';
import { expect, vi } from 'vitest';

/** Reads at least `count` messages of every partition of `topic` from the beginning, copied. */
export async function consumeFromBeginning(
  spool: Spool,
  topic: string,
  count: number,
  timeoutMs = 20_000,
): Promise<ConsumedMessage[]> {
  const consumer = spool.consumer({ requestTimeoutMs: 5_000 });
  const messages: ConsumedMessage[] = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        messages.push({
          ...message,
          key: message.key === null ? null : Buffer.from(message.key),
          value: message.value === null ? null : Buffer.from(message.value),
          headers: message.headers.map((header) => ({
            key: header.key,
            value: header.value === null ? null : Buffer.from(header.value),
          })),
        });
      },
    });
    await vi.waitFor(() => expect(messages.length).toBeGreaterThanOrEqual(count), {
      timeout: timeoutMs,
      interval: 50,
    });
  } finally {
    await consumer.disconnect();
  }
  return messages;
}
