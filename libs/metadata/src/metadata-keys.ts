/**
 * Where each piece of cluster metadata lives in the metadata store. One flat key space under a
 * cluster prefix, so a prefix watch on `/spool/<cluster>/` sees every change, and related keys
 * sort together (all partitions of a topic under the topic's prefix).
 *
 *   /spool/<cluster>/brokers/<brokerId>                          registration (lease-bound)
 *   /spool/<cluster>/topics/<topic>                              topic id, configs
 *   /spool/<cluster>/topics/<topic>/partitions/<partition>       leader, epochs, ISR
 *   /spool/<cluster>/cluster                                     cluster id
 *   /spool/<cluster>/controller/<candidate lease>                controller election (lease-bound)
 *   /spool/<cluster>/producer-ids                                next producer id block
 *   /spool/<cluster>/coordinators/<coordinatorId>                a registered coordinator
 *   /spool/<cluster>/coordinator-shards/<partition>              owner and epoch of a shard
 *   /spool/<cluster>/acls                                        every ACL (Kafka's), one list
 *   /spool/<cluster>/users/<user>                                SCRAM credentials of a user
 *
 * Broker ids and partitions are zero-padded to ten digits so lexical order is numeric order.
 */
export class MetadataKeys {
  readonly root: string;

  constructor(clusterName: string) {
    if (!/^[a-zA-Z0-9._-]{1,64}$/.test(clusterName)) {
      throw new RangeError(
        `cluster name must be 1-64 characters of [a-zA-Z0-9._-], got "${clusterName}"`,
      );
    }
    this.root = `/spool/${clusterName}/`;
  }

  brokers(): string {
    return `${this.root}brokers/`;
  }

  broker(brokerId: number): string {
    return `${this.brokers()}${padded(brokerId)}`;
  }

  topics(): string {
    return `${this.root}topics/`;
  }

  topic(topic: string): string {
    return `${this.topics()}${topic}`;
  }

  partition(topic: string, partition: number): string {
    return `${this.partitions(topic)}${padded(partition)}`;
  }

  /** The election prefix: each controller candidate's key lives under it. */
  controller(): string {
    return `${this.root}controller/`;
  }

  cluster(): string {
    return `${this.root}cluster`;
  }

  /** Every ACL of the cluster, one JSON list written whole by compare-and-set. */
  acls(): string {
    return `${this.root}acls`;
  }

  producerIds(): string {
    return `${this.root}producer-ids`;
  }

  coordinators(): string {
    return `${this.root}coordinators/`;
  }

  coordinator(coordinatorId: string): string {
    return `${this.coordinators()}${coordinatorId}`;
  }

  coordinatorShards(): string {
    return `${this.root}coordinator-shards/`;
  }

  /** One __consumer_offsets partition's owner and shard epoch. */
  coordinatorShard(partition: number): string {
    return `${this.coordinatorShards()}${padded(partition)}`;
  }

  /** Reads the coordinator id back from a coordinator key, or undefined for other keys. */
  parseCoordinator(key: string): string | undefined {
    if (!key.startsWith(this.coordinators())) return undefined;
    const rest = key.slice(this.coordinators().length);
    return rest === '' || rest.includes('/') ? undefined : rest;
  }

  /** Reads the partition back from a coordinator shard key, or undefined for other keys. */
  parseCoordinatorShard(key: string): number | undefined {
    if (!key.startsWith(this.coordinatorShards())) return undefined;
    const match = /^(\d{10})$/.exec(key.slice(this.coordinatorShards().length));
    return match === null ? undefined : Number(match[1]);
  }

  users(): string {
    return `${this.root}users/`;
  }

  /** A user's SCRAM credentials; user names are checked before they reach a key. */
  user(name: string): string {
    return `${this.users()}${name}`;
  }

  /** Reads the user name back from a user key, or undefined for other keys. */
  parseUser(key: string): string | undefined {
    if (!key.startsWith(this.users())) return undefined;
    const name = key.slice(this.users().length);
    return name === '' || name.includes('/') ? undefined : name;
  }

  /** The prefix of a topic's partition keys (never matches another topic's, unlike `topic()`). */
  partitions(topic: string): string {
    return `${this.topic(topic)}/partitions/`;
  }

  /** Reads the broker id back from a broker key, or undefined for other keys. */
  parseBroker(key: string): number | undefined {
    if (!key.startsWith(this.brokers())) return undefined;
    const match = /^(\d{10})$/.exec(key.slice(this.brokers().length));
    return match === null ? undefined : Number(match[1]);
  }

  /** Reads the topic name back from a topic key (not a partition key), or undefined. */
  parseTopic(key: string): string | undefined {
    if (!key.startsWith(this.topics())) return undefined;
    const rest = key.slice(this.topics().length);
    return rest.includes('/') || rest === '' ? undefined : rest;
  }

  /** Reads the topic and partition back from a partition key, or undefined for other keys. */
  parsePartition(key: string): { topic: string; partition: number } | undefined {
    if (!key.startsWith(this.topics())) return undefined;
    const match = /^(.+)\/partitions\/(\d{10})$/.exec(key.slice(this.topics().length));
    return match === null ? undefined : { topic: match[1]!, partition: Number(match[2]) };
  }
}

function padded(value: number): string {
  if (!Number.isSafeInteger(value) || value < 0 || value > 9_999_999_999) {
    throw new RangeError(`expected a non-negative integer id, got ${value}`);
  }
  return String(value).padStart(10, '0');
}
