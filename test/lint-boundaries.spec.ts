// Proves the module-boundary rules are active, not merely configured: ESLint, run with the
// workspace's own config over source placed in real projects, reports a deep import, a relative
// import across projects, production code importing test code (a testing entry or a src/testing/
// folder), and every forbidden dependency (the segment store on protocol's gRPC code among them),
// and stays silent on allowed ones (a shared lib on the base libs, the segment store and the
// metadata store on the record format, apps of every scope on a shared lib, specs and test/ on
// test code).
import { ESLint } from 'eslint';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceRoot } from './support/service-process';

const eslint = new ESLint({ cwd: workspaceRoot });

async function ruleIdsFor(
  project: string,
  source: string,
  file = 'src/boundary-fixture.ts',
): Promise<string[]> {
  const filePath = path.join(workspaceRoot, project, file);
  const [result] = await eslint.lintText(`${source}\nexport const used = value;\n`, { filePath });
  return (result?.messages ?? []).map((message) => message.ruleId ?? message.message);
}

describe('module boundaries', () => {
  it('allows a lib to use common', async () => {
    expect(
      await ruleIdsFor('libs/client', "import { assert as value } from '@spool/common';"),
    ).toEqual([]);
  });

  it.each([
    [
      'a shared lib to use common',
      'libs/cluster-link',
      "import { assert as value } from '@spool/common';",
    ],
    [
      'a shared lib to use protocol',
      'libs/cluster-link',
      "import { Acks as value } from '@spool/protocol';",
    ],
    [
      'common to use the error catalog',
      'libs/common',
      "import { isRetriable as value } from '@spool/errors';",
    ],
    [
      'protocol to use the error catalog',
      'libs/protocol',
      "import { isRetriable as value } from '@spool/errors';",
    ],
    [
      'record-batch to use the error catalog',
      'libs/record-batch',
      "import { isRetriable as value } from '@spool/errors';",
    ],
    [
      'the Kafka protocol codecs to use the error catalog',
      'libs/kafka-protocol',
      "import { isRetriable as value } from '@spool/errors';",
    ],
    [
      'the gateway to use the Kafka protocol codecs',
      'apps/gateway',
      "import { KafkaReader as value } from '@spool/kafka-protocol';",
    ],
    [
      'the segment store to use the record format',
      'libs/segment-store',
      "import { crc32c as value } from '@spool/record-batch';",
    ],
    [
      'the metadata store to use the record format',
      'libs/metadata',
      "import { crc32c as value } from '@spool/record-batch';",
    ],
    [
      'the coordinator to use the group state machine',
      'apps/coordinator',
      "import { ConsumerGroup as value } from '@spool/consumer-group';",
    ],
    [
      'the client SDK to use the group state machine',
      'libs/client',
      "import { ConsumerGroup as value } from '@spool/consumer-group';",
    ],
    [
      'a data app to use a shared lib',
      'apps/storage-node',
      "import { ClusterLink as value } from '@spool/cluster-link';",
    ],
    [
      'a client app to use a shared lib',
      'apps/gateway',
      "import { ClusterLink as value } from '@spool/cluster-link';",
    ],
  ])('allows %s', async (_, project, source) => {
    expect(await ruleIdsFor(project, source)).toEqual([]);
  });

  it.each([
    [
      'the client SDK on the segment store',
      'libs/client',
      "import { projectName as value } from '@spool/segment-store';",
    ],
    [
      'the client SDK on the metadata store',
      'libs/client',
      "import { projectName as value } from '@spool/metadata';",
    ],
    ['common on protocol', 'libs/common', "import { Acks as value } from '@spool/protocol';"],
    ['protocol on common', 'libs/protocol', "import { assert as value } from '@spool/common';"],
    [
      'record-batch on common',
      'libs/record-batch',
      "import { assert as value } from '@spool/common';",
    ],
    [
      'the Kafka protocol codecs on the gRPC wire formats',
      'libs/kafka-protocol',
      "import { Acks as value } from '@spool/protocol';",
    ],
    [
      'the Kafka protocol codecs on common',
      'libs/kafka-protocol',
      "import { assert as value } from '@spool/common';",
    ],
    [
      'record-batch on protocol',
      'libs/record-batch',
      "import { Acks as value } from '@spool/protocol';",
    ],
    [
      'the group state machine on the metadata store',
      'libs/consumer-group',
      "import { projectName as value } from '@spool/metadata';",
    ],
    [
      'the group state machine on another shared lib',
      'libs/consumer-group',
      "import { ClusterLink as value } from '@spool/cluster-link';",
    ],
    [
      'the segment store on the gRPC wire formats',
      'libs/segment-store',
      "import { Acks as value } from '@spool/protocol';",
    ],
    [
      'the error catalog on common',
      'libs/errors',
      "import { assert as value } from '@spool/common';",
    ],
    [
      'common on a shared lib',
      'libs/common',
      "import { ClusterLink as value } from '@spool/cluster-link';",
    ],
    [
      'a shared lib on a scoped lib',
      'libs/cluster-link',
      "import { projectName as value } from '@spool/metadata';",
    ],
    [
      'an app on another app',
      'apps/controller',
      "import { startGateway as value } from '@spool/gateway';",
    ],
    [
      'a lib on an app',
      'libs/metadata',
      "import { startController as value } from '@spool/controller';",
    ],
  ])('forbids %s', async (_, project, source) => {
    expect(await ruleIdsFor(project, source)).toContain('@nx/enforce-module-boundaries');
  });

  it('forbids a deep import past a package index', async () => {
    expect(
      await ruleIdsFor(
        'libs/client',
        "import { loadConfig as value } from '@spool/common/src/config';",
      ),
    ).toContain('no-restricted-imports');
  });

  it.each([
    [
      "a library's testing entry",
      "import { temporaryDirectory as value } from '@spool/segment-store/testing';",
    ],
    [
      "a project's own src/testing/ folder",
      "import { startServer as value } from './testing/data-port';",
    ],
    ['a nested testing folder', "import { startServer as value } from '../testing';"],
  ])('forbids production code to import test code: %s', async (_, source) => {
    expect(await ruleIdsFor('apps/storage-node', source)).toContain('no-restricted-imports');
  });

  it.each([
    [
      'a spec, a testing entry',
      'apps/storage-node',
      'src/boundary-fixture.spec.ts',
      "import { temporaryDirectory as value } from '@spool/segment-store/testing';",
    ],
    [
      "a spec, its project's src/testing/ folder",
      'apps/storage-node',
      'src/boundary-fixture.spec.ts',
      "import { startServer as value } from './testing/data-port';",
    ],
    [
      'test code, another testing module',
      'libs/client',
      'src/testing/boundary-fixture.ts',
      "import { FakeGateway as value } from './fake-gateway';",
    ],
    [
      'a cross-process test, a testing entry',
      'test',
      'boundary-fixture.ts',
      "import { startEtcdCluster as value } from '@spool/metadata/testing';",
    ],
  ])('allows test code to import test code: %s', async (_, project, file, source) => {
    expect(await ruleIdsFor(project, source, file)).toEqual([]);
  });

  it('forbids a deep import past a testing entry', async () => {
    expect(
      await ruleIdsFor(
        'apps/storage-node',
        "import { startEtcdServer as value } from '@spool/metadata/testing/etcd-test-server';",
        'src/boundary-fixture.spec.ts',
      ),
    ).toContain('no-restricted-imports');
  });

  it('forbids a relative import into another project', async () => {
    expect(
      await ruleIdsFor(
        'libs/client',
        "import { loadConfig as value } from '../../common/src/config';",
      ),
    ).toContain('@nx/enforce-module-boundaries');
  });
});
