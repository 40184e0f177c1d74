/**
 * The part of a Kafka request header every version shares, read before anything else: the API
 * key, its version and the correlation id (int16, int16, int32, big-endian). The rest of the
 * header (client id, tagged fields) depends on the API and version and is read by the generated
 * RequestHeader codec once the API is known to be served.
 */
import { SpoolError } from '@spool/common';

/** apiKey, apiVersion and correlationId: the smallest well-formed request (header v0). */
export const requestFixedHeaderBytes = 8;

export interface KafkaRequestFrame {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  /** The whole request after its size prefix: header, then body. */
  readonly bytes: Buffer;
}

/** The frame's fixed header; the frame splitter guarantees its 8 bytes are there. */
export function peekRequestHeader(bytes: Buffer): KafkaRequestFrame {
  return {
    apiKey: bytes.readInt16BE(0),
    apiVersion: bytes.readInt16BE(2),
    correlationId: bytes.readInt32BE(4),
    bytes,
  };
}

/**
 * A request the listener will not serve and after which the connection cannot go on (Kafka
 * closes it): an unknown API key, an unsupported version, a body that does not decode.
 */
export class KafkaRequestRefused extends SpoolError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('INVALID_REQUEST', message, options);
    this.name = 'KafkaRequestRefused';
  }
}
