// Test helpers of @spool/kafka-protocol, for specs and test/ only: random messages of every schema
// and version, and Kafka's JSON form of them, to compare the codecs with Kafka's own serializers.
export {
  kafkaJsonOf,
  loadMessageSpecs,
  randomMessage,
  versionsOf,
  type RandomFloat,
} from './random-message';
export type { MessageSpec } from '../message-spec';
