// Proves a failed assertion stops a real process instead of becoming an error reply: a Node
// process serves a gRPC service through the built GrpcServer (the wrapper every Spool service's
// handlers run in); a handler that throws a typed error is answered with its code and the process
// goes on, then a handler whose assertion fails, deep in a per-item answer (wireErrorOf, as the
// gateway and coordinator build their per-partition errors), ends the process with exit status 70
// and one fatal log line naming the method and the assertion.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { assertionFailureExitCode } from '@spool/common';
import { describe, expect, it } from 'vitest';
import { workspaceRoot } from './support/service-process';

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString()) as unknown,
};
const definition: grpc.ServiceDefinition = {
  check: {
    path: '/test.v1.InvariantService/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};
const InvariantClient = grpc.makeGenericClientConstructor(definition, 'InvariantService');

// The served process: the handler asserts what the request says, inside a per-item answer.
const server = `
const common = require(${JSON.stringify(path.join(workspaceRoot, 'libs/common/dist/index.js'))});
const logger = common.createLogger({ service: 'invariant-test', level: 'info' });
const server = new common.GrpcServer(logger, { maxMessageBytes: 65536, descriptorSetPaths: [] });
const json = {
  requestSerialize: (value) => Buffer.from(JSON.stringify(value)),
  requestDeserialize: (bytes) => JSON.parse(bytes.toString()),
  responseSerialize: (value) => Buffer.from(JSON.stringify(value)),
  responseDeserialize: (bytes) => JSON.parse(bytes.toString()),
};
const definition = {
  check: { path: '/test.v1.InvariantService/Check', requestStream: false, responseStream: false, ...json },
};
server.addService(definition, {
  check: async (request) => {
    if (request.kind === 'typed') throw new common.SpoolError('INVALID_REQUEST', 'bad field');
    const answers = [request].map((item) => {
      try {
        common.assert(item.offset >= 0, 'offsets are never negative');
        return {};
      } catch (error) {
        return { error: common.wireErrorOf(error) };
      }
    });
    return { answers };
  },
});
server.listen('127.0.0.1', 0).then((port) => process.stdout.write('PORT ' + port + '\\n'));
`;

function call(client: grpc.Client, request: object): Promise<unknown> {
  return new Promise((resolve, reject) => {
    (
      client as unknown as {
        check: (
          request: object,
          callback: (error: grpc.ServiceError | null, response: unknown) => void,
        ) => void;
      }
    ).check(request, (error, response) => (error ? reject(error) : resolve(response)));
  });
}

describe('a failed assertion', () => {
  it('stops the process with status 70 and a fatal line; a typed error is answered', async () => {
    const child = spawn(process.execPath, ['-e', server], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const onData = (): void => {
          const match = /PORT (\d+)/.exec(output);
          if (match) resolve(Number(match[1]));
        };
        child.stdout.on('data', onData);
        void exited.then(() => reject(new Error(`the server exited early: ${output}`)));
      });
      const client = new InvariantClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      try {
        await expect(call(client, { kind: 'typed', offset: 0 })).rejects.toMatchObject({
          code: grpc.status.INVALID_ARGUMENT,
          details: 'INVALID_REQUEST: bad field',
        });
        await expect(call(client, { kind: 'item', offset: 3 })).resolves.toEqual({
          answers: [{}],
        });
        await expect(call(client, { kind: 'item', offset: -1 })).rejects.toBeDefined();
      } finally {
        client.close();
      }
      expect(await exited).toBe(assertionFailureExitCode);
      const fatal = output
        .split('\n')
        .filter((line) => line.includes('"level":"fatal"'))
        .map((line) => JSON.parse(line) as { method: string; err: { message: string } });
      expect(fatal).toHaveLength(1);
      expect(fatal[0]!.method).toBe('/test.v1.InvariantService/Check');
      expect(fatal[0]!.err.message).toBe('offsets are never negative');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
