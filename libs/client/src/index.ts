// The TypeScript SDK applications import: producer, consumer and admin (arriving with the
// gateway), and the pieces that must match Kafka exactly, such as the default partitioner.
export { murmur2, toPositive, partitionForKey } from './murmur2';
