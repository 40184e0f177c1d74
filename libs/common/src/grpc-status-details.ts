/**
 * The rich error model every gRPC runtime reads (grpc-status-details-bin, AIP-193): a
 * google.rpc.Status whose details hold one google.rpc.ErrorInfo, reason = the Kafka-style code
 * (UNKNOWN_TOPIC_OR_PARTITION), domain = "spool", metadata.retriable = "true" or "false", plus
 * the error's details. A client generated in any language reads it with its runtime's status
 * helpers (Go's status.FromError(err).Details(), Python's grpc_status.rpc_status.from_call)
 * rather than Spool's own spool-error-code metadata, which stays for the TypeScript SDK.
 *
 * Encoded by hand, a few fields of protobuf wire format, so that this base library needs no
 * generated code:
 *   Status    { int32 code = 1; string message = 2; repeated Any details = 3; }
 *   Any       { string type_url = 1; bytes value = 2; }
 *   ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
 */
export const statusDetailsMetadataKey = 'grpc-status-details-bin';
export const errorInfoDomain = 'spool';
const errorInfoTypeUrl = 'type.googleapis.com/google.rpc.ErrorInfo';

export function encodeStatusDetails(
  grpcCode: number,
  message: string,
  reason: string,
  metadata: Readonly<Record<string, string>>,
): Buffer {
  const errorInfo = Buffer.concat([
    stringField(1, reason),
    stringField(2, errorInfoDomain),
    ...Object.entries(metadata).map(([key, value]) =>
      bytesField(3, Buffer.concat([stringField(1, key), stringField(2, value)])),
    ),
  ]);
  const any = Buffer.concat([stringField(1, errorInfoTypeUrl), bytesField(2, errorInfo)]);
  return Buffer.concat([
    grpcCode === 0 ? Buffer.alloc(0) : Buffer.concat([varint((1 << 3) | 0), varint(grpcCode)]),
    stringField(2, message),
    bytesField(3, any),
  ]);
}

function stringField(fieldNumber: number, value: string): Buffer {
  return bytesField(fieldNumber, Buffer.from(value, 'utf8'));
}

function bytesField(fieldNumber: number, value: Buffer): Buffer {
  return Buffer.concat([varint((fieldNumber << 3) | 2), varint(value.length), value]);
}

/** A non-negative int32 as a protobuf varint. */
function varint(value: number): Buffer {
  const bytes: number[] = [];
  let remaining = value >>> 0;
  while (remaining >= 0x80) {
    bytes.push((remaining & 0x7f) | 0x80);
    remaining >>>= 7;
  }
  bytes.push(remaining);
  return Buffer.from(bytes);
}
