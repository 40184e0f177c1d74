/**
 * One resource per broker (a gRPC client of its StorageService, a pool of connections to its
 * data port), created on first use from the broker's endpoint in the metadata and closed as soon
 * as the broker leaves the metadata or moves to another address, so a gateway never holds
 * connections to brokers that are gone.
 */
import type { ClusterMetadataCache } from '@spool/protocol';

export class BrokerResources<Resource> {
  private readonly resources = new Map<number, { address: string; resource: Resource }>();
  private readonly unsubscribe: () => void;
  private closed = false;

  constructor(
    private readonly metadata: ClusterMetadataCache,
    private readonly endpointName: 'grpc' | 'data',
    private readonly create: (host: string, port: number) => Resource,
    private readonly close: (resource: Resource) => void,
  ) {
    this.unsubscribe = metadata.onChange(() => this.forgetGoneBrokers());
  }

  /** The broker's resource, or undefined while its endpoint is not in the metadata. */
  get(brokerId: number): Resource | undefined {
    if (this.closed) return undefined;
    const endpoint = this.metadata.endpoint(brokerId, this.endpointName);
    if (endpoint === undefined) return undefined;
    const address = `${endpoint.host}:${endpoint.port}`;
    const cached = this.resources.get(brokerId);
    if (cached !== undefined && cached.address === address) return cached.resource;
    if (cached !== undefined) this.close(cached.resource);
    const resource = this.create(endpoint.host, endpoint.port);
    this.resources.set(brokerId, { address, resource });
    return resource;
  }

  get size(): number {
    return this.resources.size;
  }

  private forgetGoneBrokers(): void {
    for (const [brokerId, cached] of this.resources) {
      const endpoint = this.metadata.endpoint(brokerId, this.endpointName);
      if (endpoint === undefined || `${endpoint.host}:${endpoint.port}` !== cached.address) {
        this.resources.delete(brokerId);
        this.close(cached.resource);
      }
    }
  }

  closeAll(): void {
    this.closed = true;
    this.unsubscribe();
    for (const cached of this.resources.values()) this.close(cached.resource);
    this.resources.clear();
  }
}
