import { Admin } from './admin';
import { registerClientCompressionCodecs } from './compression/compression-codecs';
import {
  resolveSpoolConfig,
  type AdminOptions,
  type ConsumerOptions,
  type ProducerOptions,
  type ResolvedSpoolConfig,
  type SpoolConfig,
} from './config';
import { Consumer } from './consumer';
import { Producer } from './producer';

/**
 * The SDK's entry point, as KafkaJS's `Kafka`: holds the gateway addresses and the client id,
 * and makes producers, consumers and admins. Each of those opens its own connection to the
 * gateway and closes it on `disconnect`.
 *
 *   const spool = new Spool({ brokers: ['localhost:9090'], clientId: 'billing' });
 *   const producer = spool.producer({ lingerMs: 5, compression: 'zstd' });
 *   await producer.send({ topic: 'invoices', messages: [{ key: 'c-1', value: '...' }] });
 */
export class Spool {
  private readonly config: ResolvedSpoolConfig;

  constructor(config: SpoolConfig = {}) {
    this.config = resolveSpoolConfig(config);
    registerClientCompressionCodecs();
  }

  producer(options: ProducerOptions = {}): Producer {
    return new Producer(this.config, options);
  }

  consumer(options: ConsumerOptions = {}): Consumer {
    return new Consumer(this.config, options);
  }

  admin(options: AdminOptions = {}): Admin {
    return new Admin(this.config, options);
  }
}
