// Proves a storage node reads its rack from its Kubernetes node's label the way it does in a pod:
// the in-cluster configuration (service account token and CA files, KUBERNETES_SERVICE_HOST and
// _PORT) against a small HTTPS server that serves the Kubernetes API's node object, with the
// token checked; a missing label, an unknown node, a forbidden read and a missing node name each
// fail with an error that names what is wrong.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createLogger } from '@spool/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rackFromNodeLabel } from './node-rack';

const token = 'test-service-account-token';
const zoneLabel = 'topology.kubernetes.io/zone';
const nodes: Record<string, Record<string, string>> = {
  'node-a': { [zoneLabel]: 'eu-west-1b', 'kubernetes.io/hostname': 'node-a' },
  'node-unlabelled': { 'kubernetes.io/hostname': 'node-unlabelled' },
};
const logger = createLogger({ service: 'node-rack-test', level: 'silent' });

const folder = mkdtempSync(path.join(tmpdir(), 'spool-node-rack-'));
// loadFromCluster reads <prefix>/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}.
const serviceAccountFolder = path.join(folder, 'var/run/secrets/kubernetes.io/serviceaccount');
const requests: Array<{ url: string; authorization: string | undefined }> = [];
let server: Server;
let forbidden = false;
const savedEnvironment = {
  host: process.env['KUBERNETES_SERVICE_HOST'],
  port: process.env['KUBERNETES_SERVICE_PORT'],
};

beforeAll(async () => {
  mkdirSync(serviceAccountFolder, { recursive: true });
  const keyFile = path.join(folder, 'key.pem');
  const certificateFile = path.join(serviceAccountFolder, 'ca.crt');
  // A self-signed certificate for 127.0.0.1 that is its own CA, as the cluster's CA would be.
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyFile,
    '-out',
    certificateFile,
  ]);
  writeFileSync(path.join(serviceAccountFolder, 'token'), token);
  server = createServer(
    { key: readFileSync(keyFile), cert: readFileSync(certificateFile) },
    (request, response) => {
      requests.push({ url: request.url ?? '', authorization: request.headers.authorization });
      const name = /^\/api\/v1\/nodes\/([^/?]+)$/.exec(request.url ?? '')?.[1];
      const send = (status: number, body: object): void => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (request.headers.authorization !== `Bearer ${token}` || forbidden) {
        send(403, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'Forbidden',
          code: 403,
        });
      } else if (name === undefined || nodes[name] === undefined) {
        send(404, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'NotFound',
          code: 404,
        });
      } else {
        send(200, {
          kind: 'Node',
          apiVersion: 'v1',
          metadata: { name, uid: `uid-${name}`, labels: nodes[name] },
          spec: {},
          status: { conditions: [{ type: 'Ready', status: 'True' }] },
        });
      }
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.env['KUBERNETES_SERVICE_HOST'] = '127.0.0.1';
  process.env['KUBERNETES_SERVICE_PORT'] = String((server.address() as AddressInfo).port);
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  for (const [name, value] of [
    ['KUBERNETES_SERVICE_HOST', savedEnvironment.host],
    ['KUBERNETES_SERVICE_PORT', savedEnvironment.port],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(folder, { recursive: true, force: true });
});

const lookup = (nodeName: string, labelKey = zoneLabel) =>
  rackFromNodeLabel({ nodeName, labelKey, serviceAccountPathPrefix: folder, attempts: 2 }, logger);

describe('rack from the Kubernetes node label', () => {
  it("reads the label of the pod's node with the service account's token over TLS", async () => {
    requests.length = 0;
    expect(await lookup('node-a')).toBe('eu-west-1b');
    expect(await lookup('node-a', 'kubernetes.io/hostname')).toBe('node-a');
    expect(requests).toEqual([
      { url: '/api/v1/nodes/node-a', authorization: `Bearer ${token}` },
      { url: '/api/v1/nodes/node-a', authorization: `Bearer ${token}` },
    ]);
  });

  it('fails naming the node and the label when the node lacks the label', async () => {
    await expect(lookup('node-unlabelled')).rejects.toThrow(
      'Kubernetes node "node-unlabelled" has no label topology.kubernetes.io/zone',
    );
  });

  it('fails at once, naming the node, when it does not exist or may not be read', async () => {
    requests.length = 0;
    await expect(lookup('node-missing')).rejects.toThrow(
      /cannot read Kubernetes node "node-missing" for its label topology\.kubernetes\.io\/zone/,
    );
    expect(requests).toHaveLength(1);
    forbidden = true;
    try {
      await expect(lookup('node-a')).rejects.toThrow(/the service account may not get nodes/);
    } finally {
      forbidden = false;
    }
  });

  it('needs the node name from the downward API', async () => {
    await expect(lookup('')).rejects.toThrow(/needs node\.name \(SPOOL_NODE_NAME/);
  });
});
