import { Admin } from './admin';
import { ClientRegistry } from './client-registry';
import {
  resolveSpoolConfig,
  type AdminOptions,
  type ConsumerOptions,
  type ProducerOptions,
  type ResolvedSpoolConfig,
  type SpoolConfig,
} from './config';
import { Consumer } from './consumer';
import { ClientErrorCode, clientError } from './errors';
import { Producer } from './producer';

/**
 * The SDK's entry point, as KafkaJS's `Kafka`: holds the gateway addresses and the client id,
 * and makes producers, consumers and admins. Each of those opens its own connection to the
 * gateway and closes it on `close` (`disconnect` is KafkaJS's name for it, kept as an alias);
 * `spool.close()` closes every one it made and not yet closed, so a program ends with one call.
 *
 *   const spool = new Spool({ brokers: ['localhost:9090'], clientId: 'billing' });
 *   const producer = spool.producer({ lingerMs: 5, compression: 'zstd' });
 *   await producer.send({ topic: 'invoices', messages: [{ key: 'c-1', value: '...' }] });
 *   await spool.close();
 */
export class Spool {
  private readonly config: ResolvedSpoolConfig;
  private readonly registry = new ClientRegistry();
  private isClosed = false;

  constructor(config: SpoolConfig = {}) {
    this.config = { ...resolveSpoolConfig(config), registry: this.registry };
  }

  producer(options: ProducerOptions = {}): Producer {
    this.ensureOpen('producer');
    return new Producer(this.config, options);
  }

  consumer(options: ConsumerOptions = {}): Consumer {
    this.ensureOpen('consumer');
    return new Consumer(this.config, options);
  }

  admin(options: AdminOptions = {}): Admin {
    this.ensureOpen('admin');
    return new Admin(this.config, options);
  }

  /**
   * Closes every producer (flushing it), consumer (committing and leaving its group) and admin
   * this Spool made and that is still open, all at once; then no new ones can be made. Rejects
   * with the first client's failure, after every client has closed.
   */
  async close(): Promise<void> {
    this.isClosed = true;
    await this.registry.closeAll();
  }

  /** KafkaJS's verb, as on the clients: an alias of `close`. */
  disconnect(): Promise<void> {
    return this.close();
  }

  private ensureOpen(kind: string): void {
    if (!this.isClosed) return;
    throw clientError(ClientErrorCode.ClientClosed, `cannot make a ${kind}: this Spool was closed`);
  }
}
