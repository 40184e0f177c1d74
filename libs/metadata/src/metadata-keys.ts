/**
 * Where each piece of cluster metadata lives in the metadata store. One flat key space under a
 * cluster prefix, so a prefix watch on `/spool/<cluster>/` sees every change, and related keys
 * sort together (all partitions of a topic under the topic's prefix).
 *
 *   /spool/<cluster>/brokers/<brokerId>                          registration (lease-bound)
 *   /spool/<cluster>/topics/<topic>                              topic id, configs
 *   /spool/<cluster>/topics/<topic>/partitions/<partition>       leader, epochs, ISR
 *   /spool/<cluster>/controller                                  the election key
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
    return `${this.topic(topic)}/partitions/${padded(partition)}`;
  }

  controller(): string {
    return `${this.root}controller`;
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
