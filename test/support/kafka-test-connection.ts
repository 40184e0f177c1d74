/**
 * One Kafka connection held open for several requests, over TLS when a CA is given, with SASL
 * PLAIN when asked: for tests that check the listener's answer to each API field by field as
 * one principal (the security matrix). Requests go one at a time, each written and read with
 * @spool/kafka-protocol's codecs at the version asked; each waits at most requestTimeoutMs, and a
 * connection the listener closes answers every later request with KafkaConnectionClosed.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import {
  KafkaReader,
  KafkaWriter,
  apiMessageOf,
  readResponseHeader,
  requestHeaderVersion,
  responseHeaderVersion,
  writeRequestHeader,
} from '@spool/kafka-protocol';

const requestTimeoutMs = 15_000;
const saslHandshakeApiKey = 17;
const saslAuthenticateApiKey = 36;

/** The listener closed the connection instead of answering (Kafka's way of refusing). */
export class KafkaConnectionClosed extends Error {}

export class KafkaTestConnection {
  private received = Buffer.alloc(0);
  private closed = false;
  private waiting: (() => void) | undefined;
  private correlationId = 0;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.waiting?.();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.waiting?.();
    });
  }

  static open(options: {
    readonly port: number;
    readonly host?: string;
    readonly ca?: string | Buffer;
  }): Promise<KafkaTestConnection> {
    const host = options.host ?? '127.0.0.1';
    return new Promise((resolve, reject) => {
      const socket =
        options.ca === undefined
          ? net.connect(options.port, host)
          : tls.connect({
              port: options.port,
              host,
              servername: 'localhost',
              ca: options.ca,
            });
      socket.once(options.ca === undefined ? 'connect' : 'secureConnect', () =>
        resolve(new KafkaTestConnection(socket)),
      );
      socket.once('error', reject);
    });
  }

  /** SaslHandshake v1 and SaslAuthenticate v2 with PLAIN; the SaslAuthenticate error code. */
  async authenticatePlain(user: string, password: string): Promise<number> {
    const handshake = await this.request<{ errorCode: number }>(saslHandshakeApiKey, 1, {
      mechanism: 'PLAIN',
    });
    if (handshake.errorCode !== 0) return handshake.errorCode;
    const answer = await this.request<{ errorCode: number }>(saslAuthenticateApiKey, 2, {
      authBytes: Buffer.from(`\u0000${user}\u0000${password}`, 'utf8'),
    });
    return answer.errorCode;
  }

  /** One request (its fields over the API's defaults) and its decoded response. */
  request<Response>(
    apiKey: number,
    version: number,
    fields: Record<string, unknown>,
  ): Promise<Response> {
    const message = apiMessageOf(apiKey);
    if (message === undefined) throw new Error(`API key ${apiKey} has no codec`);
    return this.exchange({
      apiKey,
      version,
      write: (writer) =>
        message.writeRequest(
          writer,
          { ...(message.defaultRequest() as object), ...fields },
          version,
        ),
      read: (reader) => message.readResponse(reader, version) as Response,
    });
  }

  /** One request whose body the caller writes and whose response body it reads. */
  async exchange<Response>(api: {
    readonly apiKey: number;
    readonly version: number;
    readonly write: (writer: KafkaWriter) => void;
    readonly read: (reader: KafkaReader) => Response;
  }): Promise<Response> {
    const message = apiMessageOf(api.apiKey);
    if (message === undefined) throw new Error(`API key ${api.apiKey} has no codec`);
    const correlationId = ++this.correlationId;
    const writer = new KafkaWriter();
    writeRequestHeader(
      writer,
      {
        requestApiKey: api.apiKey,
        requestApiVersion: api.version,
        correlationId,
        clientId: 'kafka-test-connection',
      },
      requestHeaderVersion(message, api.version),
    );
    api.write(writer);
    const body = writer.toBuffer();
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length, 0);
    const name = `${message.name} v${api.version}`;
    if (this.closed) throw new KafkaConnectionClosed(`${name}: the connection is closed`);
    this.socket.write(Buffer.concat([size, body]));
    const frame = await this.nextFrame(name);
    const reader = new KafkaReader(frame);
    const header = readResponseHeader(reader, responseHeaderVersion(message, api.version));
    if (header.correlationId !== correlationId) {
      throw new Error(`correlation id ${header.correlationId}, expected ${correlationId}`);
    }
    return api.read(reader);
  }

  close(): void {
    this.socket.destroy();
  }

  private async nextFrame(name: string): Promise<Buffer> {
    const deadline = Date.now() + requestTimeoutMs;
    for (;;) {
      if (this.received.length >= 4 && this.received.length >= 4 + this.received.readInt32BE(0)) {
        const size = this.received.readInt32BE(0);
        const frame = this.received.subarray(4, 4 + size);
        this.received = this.received.subarray(4 + size);
        return frame;
      }
      if (this.closed) throw new KafkaConnectionClosed(`${name}: the connection closed unanswered`);
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) throw new Error(`${name}: no answer in ${requestTimeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remainingMs);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
  }
}
