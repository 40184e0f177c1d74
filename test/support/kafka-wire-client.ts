/**
 * One Kafka request on its own connection, written and read with @spool/kafka-protocol's codecs:
 * for the APIs no client of the tests calls on demand (OffsetForLeaderEpoch, for one), so a test
 * checks the listener's answer field by field. Bounded by a timeout; the socket is always closed.
 */
import * as net from 'node:net';
import {
  KafkaReader,
  KafkaWriter,
  apiMessageOf,
  readResponseHeader,
  requestHeaderVersion,
  responseHeaderVersion,
  writeRequestHeader,
} from '@spool/kafka-protocol';

const requestTimeoutMs = 10_000;

export async function kafkaRequest<Response>(
  address: { readonly host: string; readonly port: number },
  api: {
    readonly apiKey: number;
    readonly version: number;
    readonly write: (writer: KafkaWriter) => void;
    readonly read: (reader: KafkaReader) => Response;
  },
): Promise<Response> {
  const message = apiMessageOf(api.apiKey);
  if (message === undefined) throw new Error(`API key ${api.apiKey} has no codec`);
  const correlationId = 7;
  const writer = new KafkaWriter();
  writeRequestHeader(
    writer,
    {
      requestApiKey: api.apiKey,
      requestApiVersion: api.version,
      correlationId,
      clientId: 'kafka-wire-client',
    },
    requestHeaderVersion(message, api.version),
  );
  api.write(writer);
  const body = writer.toBuffer();
  const frame = Buffer.alloc(4 + body.length);
  frame.writeInt32BE(body.length, 0);
  body.copy(frame, 4);
  const responseBytes = await new Promise<Buffer>((resolve, reject) => {
    const socket = net.connect(address.port, address.host);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${message.name} v${api.version}: no answer in ${requestTimeoutMs} ms`));
    }, requestTimeoutMs);
    socket.on('connect', () => socket.write(frame));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const received = Buffer.concat(chunks);
      if (received.length >= 4 && received.length >= 4 + received.readInt32BE(0)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received.subarray(4, 4 + received.readInt32BE(0)));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`${message.name} v${api.version}: the connection closed unanswered`));
    });
  });
  const reader = new KafkaReader(responseBytes);
  const header = readResponseHeader(reader, responseHeaderVersion(message, api.version));
  if (header.correlationId !== correlationId) {
    throw new Error(`correlation id ${header.correlationId}, expected ${correlationId}`);
  }
  return api.read(reader);
}
