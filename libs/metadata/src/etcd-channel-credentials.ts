/**
 * The etcd client's channels on credentials that follow their files. etcd3 builds its channels'
 * credentials once, at construction, from PEM buffers (ConnectionPool.buildAuthentication), so a
 * certificate renewed on disk (cert-manager's rotation, a CA bundle updated) would reach etcd
 * only after the service restarted. The services' other gRPC channels follow their files
 * (channelCredentialsOf in @spool/common: grpc-js's certificate provider, whose latest
 * certificates each new connection's handshake uses); this gives etcd3's channels the same, by
 * setting the credentials of each of its hosts before the first call creates a channel.
 *
 * etcd3 1.1 keeps a host's credentials in `pool.hosts[i].channelCredentials` and creates every
 * service client from them lazily (Host.getServiceClient). That is not its public API: the shape
 * is checked, and a client of another shape is refused with an error rather than left quietly on
 * the files it read at start.
 */
import assert from 'node:assert';
import type { channelCredentialsOf } from '@spool/common';
import type { Etcd3 } from 'etcd3';

/** gRPC channel credentials, as @spool/common makes them (etcd3 shares its grpc-js). */
export type ChannelCredentials = ReturnType<typeof channelCredentialsOf>;

interface Etcd3Host {
  channelCredentials: ChannelCredentials;
  readonly cachedServices: Record<string, unknown>;
}

export function useChannelCredentials(client: Etcd3, credentials: ChannelCredentials): void {
  const hosts = (client as unknown as { pool?: { hosts?: unknown } }).pool?.hosts;
  assert.ok(
    Array.isArray(hosts) && hosts.length > 0,
    'etcd3 client without pool.hosts: this etcd3 version cannot follow certificate reloads',
  );
  for (const host of hosts as Etcd3Host[]) {
    assert.ok(
      'channelCredentials' in host && typeof host.cachedServices === 'object',
      'etcd3 host without channelCredentials: this etcd3 version cannot follow certificate reloads',
    );
    assert.equal(
      Object.keys(host.cachedServices).length,
      0,
      'etcd3 host already has channels: set its credentials before the first call',
    );
    host.channelCredentials = credentials;
  }
}
