// Kafka's wire protocol as Spool's Kafka listener speaks it: the primitive reader and writer, and
// codecs generated from Kafka's own message schemas (schemas/, pinned to the kafka-clients jar):
// one interface, default, reader and writer per message and struct, and the table of APIs.
export {
  asKafkaProtocolError,
  KafkaProtocolError,
  KafkaProtocolErrorCode,
  nullFieldError,
  unsupportedFieldError,
  unsupportedVersionError,
} from './errors';
export { KafkaReader, stringSizeBytesMax } from './kafka-reader';
export {
  byReferenceSizeBytesMin,
  KafkaWriter,
  writerSizeBytesMaxDefault,
  type KafkaWriterOptions,
  type ReservedInt32,
} from './kafka-writer';
export { isZeroUuid, kafkaValuesEqual } from './kafka-values';
export {
  apiMessageOf,
  isFlexibleVersion,
  requestHeaderVersion,
  responseHeaderVersion,
  type ApiMessage,
} from './api-message';
export * from './generated/index';
