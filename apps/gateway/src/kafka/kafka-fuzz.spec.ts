// Fuzzes the Kafka APIs the listener advertises, through the dispatcher that serves its
// connections: for every served API, at random versions in and out of its range, a frame of
// random bytes, a well-formed request of random values, and mutations of one (flipped bytes,
// truncations, appended bytes) must end in a response or a refusal (KafkaRequestRefused: the connection
// closes), never in another error, within a bounded time. Behind the APIs is a gateway whose
// controller refuses every call, with no reachable storage node or coordinator (metadata applied
// by the test), so what is fuzzed is decoding and validation up to the first call out, and that
// call's failure.
import { GrpcServer, SpoolError, createLogger, RequestMetrics } from '@spool/common';
import {
  KafkaWriter,
  apiMessageOf,
  requestHeaderVersion,
  writeRequestHeader,
} from '@spool/kafka-protocol';
import { loadMessageSpecs, randomMessage } from '@spool/kafka-protocol/testing';
import { ControllerServiceService } from '@spool/protocol';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderFetcher } from '../leader-fetcher';
import { createMetadataLink, type MetadataLink } from '../metadata-link';
import { ProduceAdmission } from '../produce-admission';
import { ClientAuthenticator } from '../security/client-authenticator';
import { testBroker, testSnapshot, testTopic } from '../testing/cluster-metadata';
import type { KafkaApiDispatcher, ServedApiVersions } from './kafka-api-dispatcher';
import { type KafkaApiDependencies, createKafkaApis } from './kafka-apis';
import { createKafkaFetchSessions } from './kafka-fetch-sessions';
import { fixedBrokerAddresses } from './kafka-broker-ports';
import { KafkaClusterView } from './kafka-cluster-view';
import { KafkaRequestRefused, peekRequestHeader } from './kafka-request-frame';
import { KafkaSession } from './kafka-session';

const logger = createLogger({ service: 'test', level: 'silent' });
/** Frames per API and version bound; a request must settle within this. */
const framesPerApi = 200;
const settleMs = 3_000;

/** A small deterministic generator (mulberry32), so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A controller that answers every call at once with an error. */
const controller = new GrpcServer(logger, { maxMessageBytes: 1 << 20, descriptorSetPaths: [] });
controller.addService(
  ControllerServiceService,
  Object.fromEntries(
    Object.keys(ControllerServiceService).map((name) => [
      name,
      () => Promise.reject(new SpoolError('UNSUPPORTED_VERSION', `${name} is refused by the fuzz`)),
    ]),
  ),
);
let link: MetadataLink | undefined;
let dispatcher: KafkaApiDispatcher | undefined;
beforeAll(async () => {
  const controllerPort = await controller.listen('127.0.0.1', 0);
  link = createMetadataLink([`127.0.0.1:${controllerPort}`], logger);
  link.metadata.apply(
    testSnapshot(
      1n,
      [testBroker(1, 1, 1)],
      [testTopic('fuzz', [1, 1]), testTopic('offline', [-1])],
    ),
  );
  dispatcher = dispatcherOf(link);
});
afterAll(async () => {
  link?.stop();
  await controller.shutdown(100);
});

function unavailable(): Promise<never> {
  return Promise.reject(new SpoolError('COORDINATOR_NOT_AVAILABLE', 'no coordinator in the fuzz'));
}

function dispatcherOf(link: MetadataLink): KafkaApiDispatcher {
  const dependencies: KafkaApiDependencies = {
    view: new KafkaClusterView(link, fixedBrokerAddresses('127.0.0.1', 9092)),
    produce: {
      link,
      appendPipeline: () => undefined,
      admission: new ProduceAdmission(1024 * 1024),
      logger,
    },
    fetch: { link, fetcher: new LeaderFetcher(link.metadata), fetchMaxBytes: 1024 * 1024 },
    offsets: { link, storageClient: () => undefined },
    fetchSessions: createKafkaFetchSessions(new Registry(), 10),
    coordinators: new Proxy({} as KafkaApiDependencies['coordinators'], {
      get: () => unavailable,
    }),
    requestMetrics: new RequestMetrics(new Registry()),
    logger,
    sasl: {
      authenticator: new ClientAuthenticator(link.metadata.users, logger, new Registry()),
      enabledMechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'],
    },
  };
  return createKafkaApis(dependencies);
}

/** What the listener advertises, read before the test's gateway starts (no call goes out). */
const served = ((): ServedApiVersions[] => {
  const unused = createMetadataLink(['127.0.0.1:1'], logger);
  const versions = dispatcherOf(unused).servedVersions();
  unused.stop();
  return versions;
})();

function frameOf(apiKey: number, version: number, correlationId: number, body: Buffer): Buffer {
  const api = apiMessageOf(apiKey)!;
  const writer = new KafkaWriter();
  const headerVersion = requestHeaderVersion(
    api,
    Math.min(Math.max(version, api.validVersions.min), api.validVersions.max),
  );
  writeRequestHeader(
    writer,
    {
      requestApiKey: apiKey,
      requestApiVersion: version,
      correlationId,
      clientId: 'fuzz',
    },
    Math.max(headerVersion, 1),
  );
  return Buffer.concat([writer.toBuffer(), body]);
}

const requestSpecs = new Map(loadMessageSpecs().map((spec) => [spec.name, spec]));

/** A request of random values in every field (random topics, groups, ids, sizes). */
function wellFormedBody(apiKey: number, version: number, next: () => number): Buffer {
  const api = apiMessageOf(apiKey)!;
  const spec = requestSpecs.get(`${api.name}Request`)!;
  const message = randomMessage(spec, version, next);
  // The controller's APIs wait up to the request's timeout for an answer; the fuzz's is short.
  if (typeof message['timeoutMs'] === 'number') message['timeoutMs'] = Math.floor(next() * 200);
  const writer = new KafkaWriter();
  api.writeRequest(writer, message, version);
  return writer.toBuffer();
}

function mutated(bytes: Buffer, next: () => number): Buffer {
  const copy = Buffer.from(bytes);
  switch (Math.floor(next() * 4)) {
    case 0:
      for (let flips = 1 + Math.floor(next() * 4); flips > 0 && copy.length > 0; flips--) {
        copy[Math.floor(next() * copy.length)] = Math.floor(next() * 256);
      }
      return copy;
    case 1:
      return copy.subarray(0, Math.floor(next() * copy.length));
    case 2:
      return Buffer.concat([copy, Buffer.from(Array.from({ length: 8 }, () => next() * 256))]);
    default:
      return Buffer.from(Array.from({ length: Math.floor(next() * 64) }, () => next() * 256));
  }
}

type Outcome = 'answered' | 'refused';

async function serve(bytes: Buffer): Promise<Outcome> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error('the fuzz bound passed')), settleMs);
  try {
    const served = (() => {
      try {
        const session = new KafkaSession('127.0.0.1', { authenticationRequired: false });
        return dispatcher!.serve(peekRequestHeader(bytes), {
          peer: 'fuzz',
          principal: session.principal,
          clientHost: session.clientHost,
          session,
          signal: abort.signal,
          brokerId: 0,
        });
      } catch (error) {
        return Promise.reject(error);
      }
    })();
    const deadline = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`not settled in ${2 * settleMs} ms`)), 2 * settleMs),
    );
    await Promise.race([served, deadline]);
    return 'answered';
  } catch (error) {
    if (error instanceof KafkaRequestRefused) return 'refused';
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

describe('Kafka APIs under fuzzed frames', () => {
  for (const { apiKey, minVersion, maxVersion } of served) {
    const name = apiMessageOf(apiKey)!.name;
    it(
      `${name} (${apiKey}) v${minVersion}-${maxVersion}: answered or refused, nothing else`,
      {
        timeout: 60_000,
      },
      async () => {
        const seed = apiKey * 7919 + 1;
        const next = random(seed);
        const outcomes: Record<Outcome, number> = { answered: 0, refused: 0 };
        for (let index = 0; index < framesPerApi; index++) {
          // Mostly served versions; sometimes one past either end.
          const version = minVersion - 1 + Math.floor(next() * (maxVersion - minVersion + 3));
          const inRange = version >= minVersion && version <= maxVersion;
          const choice = next();
          const body = !inRange
            ? mutated(Buffer.alloc(0), next)
            : choice < 0.4
              ? wellFormedBody(apiKey, version, next)
              : choice < 0.9
                ? mutated(wellFormedBody(apiKey, version, next), next)
                : mutated(Buffer.alloc(0), next);
          const frame = frameOf(apiKey, version, index, body);
          const outcome = await serve(frame).catch((error: unknown) => {
            throw new Error(
              `${name} v${version} (seed ${seed}, frame ${index}, ${frame.toString('hex')}) ` +
                `failed with something other than a refusal`,
              { cause: error },
            );
          });
          outcomes[outcome]++;
        }
        expect(outcomes.answered + outcomes.refused).toBe(framesPerApi);
      },
    );
  }
});
