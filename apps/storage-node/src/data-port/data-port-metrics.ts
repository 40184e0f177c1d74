// Counters of the data port, kept as plain numbers for tests and status pages, and mirrored into
// Prometheus when a registry is given. Bytes out are reported per topic through the server's
// onBytesSent callback, because spool_bytes_out_total is owned by whoever aggregates them.
import { Counter, Gauge, type Registry } from 'prom-client';

/** The api label of frames that did not decode into a request of a known API. */
export const invalidRequestApiLabel = 'Invalid';

export interface DataPortCounters {
  /** Connections open now. */
  readonly connectionsOpen: number;
  /** Connections accepted since the server started. */
  readonly connectionsAccepted: number;
  /** TLS connections refused: a failed handshake, or a peer that is not a service. */
  readonly connectionsRefused: number;
  /** Requests received, by API name (ApiVersions, Fetch, OffsetForLeaderEpoch, Invalid). */
  readonly requestsByApi: Readonly<Record<string, number>>;
  /** Record bytes moved from segment files to sockets. */
  readonly recordBytesSent: number;
}

export class DataPortMetrics {
  private connectionsOpen = 0;
  private connectionsAccepted = 0;
  private connectionsRefused = 0;
  private readonly requestsByApi: Record<string, number> = {};
  private recordBytesSent = 0;
  private readonly connectionsGauge: Gauge | undefined;
  private readonly requestsCounter: Counter<'api'> | undefined;
  private readonly refusedCounter: Counter | undefined;

  constructor(registry?: Registry) {
    if (registry === undefined) return;
    this.connectionsGauge = new Gauge({
      name: 'spool_data_port_connections',
      help: 'Connections open on the data port (consumer fetches from gateways, replica fetches).',
      registers: [registry],
    });
    this.requestsCounter = new Counter({
      name: 'spool_data_port_requests_total',
      help: 'Requests received on the data port, by API; Invalid counts refused frames.',
      labelNames: ['api'],
      registers: [registry],
    });
    this.refusedCounter = new Counter({
      name: 'spool_data_port_connections_refused_total',
      help: 'TLS connections refused by the data port: failed handshakes and non-service peers.',
      registers: [registry],
    });
  }

  connectionRefused(): void {
    this.connectionsRefused += 1;
    this.refusedCounter?.inc();
  }

  connectionOpened(): void {
    this.connectionsOpen += 1;
    this.connectionsAccepted += 1;
    this.connectionsGauge?.inc();
  }

  connectionClosed(): void {
    this.connectionsOpen -= 1;
    this.connectionsGauge?.dec();
  }

  requestReceived(api: string): void {
    this.requestsByApi[api] = (this.requestsByApi[api] ?? 0) + 1;
    this.requestsCounter?.inc({ api });
  }

  recordBytesMoved(sizeBytes: number): void {
    this.recordBytesSent += sizeBytes;
  }

  snapshot(): DataPortCounters {
    return {
      connectionsOpen: this.connectionsOpen,
      connectionsAccepted: this.connectionsAccepted,
      connectionsRefused: this.connectionsRefused,
      requestsByApi: { ...this.requestsByApi },
      recordBytesSent: this.recordBytesSent,
    };
  }
}
