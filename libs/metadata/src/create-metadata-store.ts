// The one place a service turns its metadata settings into a store: `local` (one process, one
// durable file) or `etcd` (a replicated cluster). Settings are checked here, once, at start-up.
import { ConfigError, type Logger, type TlsFiles } from '@spool/common';
import { EtcdMetadataStore } from './etcd-metadata-store';
import { LocalMetadataStore } from './local-metadata-store';
import type { MetadataStore } from './metadata-store';

export type MetadataStoreConfig =
  | {
      readonly backend: 'local';
      /** path: the journal file of the local store. */
      readonly path: string;
    }
  | {
      readonly backend: 'etcd';
      /** endpoints: etcd client URLs, e.g. ["http://etcd-0.etcd:2379"]. */
      readonly endpoints: readonly string[];
      /** requestTimeoutMs: deadline of one call to etcd. */
      readonly requestTimeoutMs?: number;
      /** tls: the CA, client certificate and key for https:// endpoints. */
      readonly tls?: TlsFiles;
      /** How often the tls files are checked for a rotation (ssl.reload.interval.ms). */
      readonly tlsReloadIntervalMs?: number;
    };

export async function createMetadataStore(
  config: MetadataStoreConfig,
  options: { readonly logger?: Logger } = {},
): Promise<MetadataStore> {
  switch (config.backend) {
    case 'local':
      if (typeof config.path !== 'string' || config.path.length === 0) {
        throw new ConfigError(`metadata path must name a file, got ${JSON.stringify(config.path)}`);
      }
      return LocalMetadataStore.open({ path: config.path, logger: options.logger });
    case 'etcd': {
      const invalid = config.endpoints.find(
        (endpoint) => !/^(https?:\/\/)?[^\s/]+:\d+$/.test(endpoint),
      );
      if (config.endpoints.length === 0 || invalid !== undefined) {
        throw new ConfigError(
          `metadata endpoints must be host:port or http(s)://host:port URLs, got ` +
            JSON.stringify(config.endpoints),
        );
      }
      return EtcdMetadataStore.connect({ ...config, logger: options.logger });
    }
    default: {
      const backend: unknown = (config as { backend: unknown }).backend;
      throw new ConfigError(
        `metadata backend must be "local" or "etcd", got ${JSON.stringify(backend)}`,
      );
    }
  }
}
