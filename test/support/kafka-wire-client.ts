/**
 * One Kafka request on its own connection, written and read with @spool/kafka-protocol's codecs:
 * for the APIs no client of the tests calls on demand (OffsetForLeaderEpoch, for one), so a test
 * checks the listener's answer field by field. Bounded by the connection's request timeout; the
 * socket is always closed.
 */
import type { KafkaReader, KafkaWriter } from '@spool/kafka-protocol';
import { KafkaTestConnection } from './kafka-test-connection';

export async function kafkaRequest<Response>(
  address: { readonly host: string; readonly port: number },
  api: {
    readonly apiKey: number;
    readonly version: number;
    readonly write: (writer: KafkaWriter) => void;
    readonly read: (reader: KafkaReader) => Response;
  },
): Promise<Response> {
  const connection = await KafkaTestConnection.open(address);
  try {
    return await connection.exchange(api);
  } finally {
    connection.close();
  }
}
