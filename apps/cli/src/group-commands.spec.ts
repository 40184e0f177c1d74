// Proves `spool group ...` for people and scripts: every bad command line fails with exit code 2
// and a message naming the flag before anything is sent; describe prints partitions with lag and
// their owners as a table, and the JSON document with exact offsets (null where nothing is
// committed; the lag then unknown, "-" or null, never negative); reset-offsets follows Kafka's tool's rules, is a dry run that never calls
// ResetOffsets unless --execute, and a coordinator's refusal (NON_EMPTY_GROUP) is one error line
// with exit code 1. The gateway is a stub gRPC server on loopback with canned answers.
import * as grpc from '@grpc/grpc-js';
import type { GroupDescription } from '@spool/client';
import {
  GatewayServiceService,
  OffsetSpec,
  type ConsumeRequest,
  type ConsumeResponse,
  type ConsumerGroupHeartbeatRequest,
  type DescribeGroupResponse,
  type OffsetCommitRequest,
  type ResetOffsetsRequest,
} from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './cli';
import { formatGroupDescription, formatGroupList, knownLag, toGroupJson } from './group-commands';
import { formatResetPlan, resetTarget } from './group-reset-offsets';

async function run(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { stdout: '', stderr: '' };
  stdout.on('data', (chunk: Buffer) => (chunks.stdout += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (chunks.stderr += chunk.toString()));
  const exitCode = await runCli(argv, { stdout, stderr, env });
  return { exitCode, ...chunks };
}

const description: GroupDescription = {
  groupId: 'billing',
  state: 'STABLE',
  groupEpoch: 7,
  members: [
    {
      memberId: 'member-1',
      instanceId: 'host-a',
      memberEpoch: 7,
      assignment: [
        { topic: 'events', partition: 0 },
        { topic: 'events', partition: 1 },
      ],
    },
    { memberId: 'member-2', instanceId: '', memberEpoch: 6, assignment: [] },
  ],
  partitions: [
    {
      topic: 'events',
      partition: 0,
      committedOffset: 9007199254740993n,
      highWatermark: 9007199254741000n,
      lag: 7n,
    },
    { topic: 'events', partition: 1, committedOffset: -1n, highWatermark: 5n, lag: 5n },
    { topic: 'events', partition: 2, committedOffset: 3n, highWatermark: 3n, lag: 0n },
  ],
};

describe('spool group: bad command lines', () => {
  const cases: [string[], string][] = [
    [['group'], 'group needs a subcommand: list, describe, delete, reset-offsets'],
    [['group', 'show'], 'unknown group subcommand "show"'],
    [['group', 'describe'], 'missing GROUP; usage: spool group describe GROUP'],
    [['group', 'list', 'extra'], 'unexpected argument "extra"'],
    [
      ['group', 'reset-offsets', 'g', '--topic', 't'],
      'reset-offsets needs exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset',
    ],
    [
      ['group', 'reset-offsets', 'g', '--topic', 't', '--to-earliest', '--to-offset', '3'],
      'got --to-earliest and --to-offset',
    ],
    [['group', 'reset-offsets', 'g', '--to-latest'], 'reset-offsets needs --topic'],
    [
      ['group', 'reset-offsets', 'g', '--topic', 't', '--to-datetime', 'yesterday'],
      '--to-datetime must be an ISO 8601 date and time such as 2026-11-30T08:00:00Z, got "yesterday"',
    ],
    [
      ['group', 'reset-offsets', 'g', '--topic', 't', '--to-offset=-4'],
      '--to-offset must be an offset of 0 or more, got "-4"',
    ],
    [
      ['group', 'reset-offsets', 'g', '--topic', 't', '--to-offset', '-4'],
      '--to-offset must be an offset of 0 or more, got "-4"',
    ],
    [
      ['group', 'reset-offsets', 'g', '--topic', 't:x', '--to-latest'],
      '--topic must be TOPIC or TOPIC:P,P..., got "t:x"',
    ],
    [['group', 'delete', 'g', '--force'], 'unknown flag --force'],
    [['consume', 't', '--group', ''], '--group needs a group name'],
    [['consume', 't', '--group', 'g', '--partition', '0'], '--group and --partition exclude'],
  ];
  for (const [argv, message] of cases) {
    it(`refuses ${argv.join(' ')}`, async () => {
      const { exitCode, stderr, stdout } = await run(argv, { SPOOL_GATEWAY: '127.0.0.1:1' });
      expect(exitCode).toBe(2);
      expect(stderr).toContain(message);
      expect(stdout).toBe('');
    });
  }
});

describe('spool group output', () => {
  it('describes a group as a table with lag and owner per partition, then its members', () => {
    expect(formatGroupDescription(description)).toBe(
      'group billing  state STABLE  epoch 7  members 2  ' +
        'lag 7 (1 of 3 partitions without a committed offset not counted)\n' +
        'TOPIC   PARTITION  COMMITTED-OFFSET  HIGH-WATERMARK    LAG  MEMBER\n' +
        'events  0          9007199254740993  9007199254741000  7    member-1\n' +
        'events  1          -                 5                 -    member-1\n' +
        'events  2          3                 3                 0    -\n' +
        '\n' +
        'MEMBER    INSTANCE  EPOCH  PARTITIONS\n' +
        'member-1  host-a    7      events[0],events[1]\n' +
        'member-2  -         6      -\n',
    );
  });

  it('gives scripts the documented JSON shape with exact offsets', () => {
    const json = JSON.parse(
      JSON.stringify(toGroupJson(description), (_key, value: unknown) =>
        typeof value === 'bigint' ? value.toString() : value,
      ),
    ) as { partitions: unknown[]; members: unknown[] };
    expect(Object.keys(json)).toEqual(['groupId', 'state', 'groupEpoch', 'members', 'partitions']);
    expect(json.partitions[0]).toEqual({
      topic: 'events',
      partition: 0,
      committedOffset: '9007199254740993',
      highWatermark: '9007199254741000',
      lag: '7',
    });
    expect(json.partitions[1]).toMatchObject({ committedOffset: null, lag: null });
    expect(json.members[1]).toEqual({
      memberId: 'member-2',
      instanceId: null,
      memberEpoch: 6,
      assignment: [],
    });
  });

  it('shows the lag of a group that committed nothing as unknown, never negative', () => {
    // As the gateway answers before the first commit: committed offset and lag -1.
    const uncommitted = {
      ...description,
      partitions: [0, 1].map((partition) => ({
        topic: 'events',
        partition,
        committedOffset: -1n,
        highWatermark: 3n,
        lag: -1n,
      })),
    };
    const text = formatGroupDescription(uncommitted);
    expect(text.split('\n')[0]).toBe('group billing  state STABLE  epoch 7  members 2  lag -');
    expect(text).toContain('events  0          -                 3               -    member-1\n');
    expect(text).not.toMatch(/\s-\d/);
    const json = toGroupJson(uncommitted) as { partitions: { lag: unknown }[] };
    expect(json.partitions.map((row) => row.lag)).toEqual([null, null]);
    // A commit a moment past the high watermark read before it counts as no lag.
    expect(
      knownLag({ topic: 't', partition: 0, committedOffset: 9n, highWatermark: 8n, lag: -1n }),
    ).toBe(0n);
  });

  it('lists groups, or says there are none', () => {
    expect(formatGroupList([])).toBe('no consumer groups\n');
    expect(
      formatGroupList([
        { groupId: 'billing', state: 'STABLE' },
        { groupId: 'a', state: 'EMPTY' },
      ]),
    ).toBe('GROUP    STATE\nbilling  STABLE\na        EMPTY\n');
  });

  it('moves offsets by the rules of Kafka’s tool', () => {
    const bounds = [10n, 20n] as const;
    const at = (offset: bigint): bigint =>
      resetTarget({ strategy: 'offset', offset }, ...bounds, () => -1n);
    expect(resetTarget({ strategy: 'earliest', offset: undefined }, ...bounds, () => -1n)).toBe(
      10n,
    );
    expect(resetTarget({ strategy: 'latest', offset: undefined }, ...bounds, () => -1n)).toBe(20n);
    expect(resetTarget({ strategy: 'timestamp', offset: undefined }, ...bounds, () => 14n)).toBe(
      14n,
    );
    // No record that recent: the end of the log.
    expect(resetTarget({ strategy: 'timestamp', offset: undefined }, ...bounds, () => -1n)).toBe(
      20n,
    );
    expect([at(3n), at(15n), at(99n)]).toEqual([10n, 15n, 20n]);
  });

  it('prints a dry run plan that says nothing changed and warns about members', () => {
    const plan = {
      groupId: 'billing',
      state: 'STABLE',
      members: 2,
      strategy: 'earliest' as const,
      partitions: [
        { topic: 'events', partition: 0, currentOffset: 5n, newOffset: 0n },
        { topic: 'events', partition: 1, currentOffset: null, newOffset: 0n },
      ],
    };
    expect(formatResetPlan(plan, false)).toBe(
      'group billing  state STABLE  strategy earliest\n' +
        'TOPIC   PARTITION  CURRENT-OFFSET  NEW-OFFSET\n' +
        'events  0          5               0\n' +
        'events  1          -               0\n' +
        'dry run: nothing was changed; add --execute to apply\n' +
        'group billing has 2 members: --execute needs the group empty (stop its consumers first)\n',
    );
    expect(formatResetPlan({ ...plan, members: 0 }, true)).toMatch(/reset 2 partitions\n$/);
  });
});

/** A gateway that answers the group and offset calls from fixed data, recording resets. */
class StubGateway {
  readonly resets: ResetOffsetsRequest[] = [];
  readonly heartbeats: ConsumerGroupHeartbeatRequest[] = [];
  readonly commits: OffsetCommitRequest[] = [];
  groupMembers = 0;
  /** Three records at offsets 0..2 of events[0] (the log starts at 1), for Consume. */
  private readonly records = encodeRecordBatch({
    baseOffset: 0n,
    records: ['r0', 'r1', 'r2'].map((value, index) => ({
      key: null,
      value: Buffer.from(value),
      timestampMs: 1_700_000_000_000n + BigInt(index),
    })),
  });
  private constructor(
    private readonly server: grpc.Server,
    readonly address: string,
  ) {}

  static async start(): Promise<StubGateway> {
    const server = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const stub = new StubGateway(server, `127.0.0.1:${port}`);
    server.addService(GatewayServiceService, stub.implementation());
    return stub;
  }

  stop(): void {
    this.server.forceShutdown();
  }

  private describeGroup(): DescribeGroupResponse {
    return {
      error: undefined,
      groupId: 'billing',
      state: this.groupMembers > 0 ? 'STABLE' : 'EMPTY',
      groupEpoch: 3,
      assignor: 'uniform',
      assignmentEpoch: 3,
      members: Array.from({ length: this.groupMembers }, (_, index) => ({
        memberId: `member-${index}`,
        instanceId: '',
        memberEpoch: 3,
        subscribedTopics: ['events'],
        subscribedRegex: '',
        assignment: [],
        targetAssignment: [],
        rackId: '',
        clientId: '',
        clientHost: '127.0.0.1',
        memberType: 'consumer',
      })),
      partitions: [
        { topic: 'events', partition: 0, committedOffset: 4n, highWatermark: 9n, lag: 5n },
        { topic: 'events', partition: 1, committedOffset: -1n, highWatermark: 2n, lag: 2n },
      ],
    };
  }

  private implementation(): grpc.UntypedServiceImplementation {
    const unary =
      <Request, Response>(handler: (request: Request) => Response) =>
      (call: grpc.ServerUnaryCall<Request, Response>, callback: grpc.sendUnaryData<Response>) =>
        callback(null, handler(call.request));
    return {
      // One member owns events[0]: joining gives it the partition, leaving is acknowledged.
      consumerGroupHeartbeat: unary((request: ConsumerGroupHeartbeatRequest) => {
        this.heartbeats.push(request);
        const joining = request.memberEpoch === 0;
        return {
          error: undefined,
          memberId: 'member-1',
          memberEpoch: request.memberEpoch < 0 ? request.memberEpoch : 1,
          heartbeatIntervalMs: 50,
          assignment: joining ? { partitions: [{ topic: 'events', partition: 0 }] } : undefined,
        };
      }),
      offsetCommit: unary((request: OffsetCommitRequest) => {
        this.commits.push(request);
        return {
          results: request.offsets.map(({ topic, partition }) => ({
            topic,
            partition,
            error: undefined,
          })),
        };
      }),
      offsetFetch: unary((request: { partitions: { topic: string; partition: number }[] }) => ({
        error: undefined,
        offsets: request.partitions.map(({ topic, partition }) => ({
          topic,
          partition,
          offset: -1n,
          metadata: '',
          commitTimestampMs: -1n,
          error: undefined,
        })),
      })),
      consume: (call: grpc.ServerDuplexStream<ConsumeRequest, ConsumeResponse>) => {
        let sent = false;
        call.on('data', (request: ConsumeRequest) => {
          const wanted = request.partitions[0];
          if (sent || wanted === undefined) return;
          sent = true;
          call.write({
            partitions: [
              {
                topic: wanted.topic,
                partition: wanted.partition,
                error: undefined,
                highWatermark: 3n,
                logStartOffset: 0n,
                records: this.records,
              },
            ],
          });
        });
        call.on('end', () => call.end());
        call.on('error', () => {});
      },
      describeGroup: unary(() => this.describeGroup()),
      listGroups: unary(() => ({ groups: [{ groupId: 'billing', state: 'EMPTY' }] })),
      deleteGroup: unary(() => ({
        error:
          this.groupMembers > 0
            ? { code: 'NON_EMPTY_GROUP', message: 'the group has 1 member', retriable: false }
            : undefined,
      })),
      describeTopics: unary((request: { names: string[] }) => ({
        topics: request.names.map((name) => ({
          error: undefined,
          cleanerStates: [],
          topic: {
            name,
            topicId: `id-${name}`,
            internal: false,
            configs: [],
            partitions: [0, 1].map((partition) => ({
              topic: name,
              partition,
              leaderId: 1,
              leaderEpoch: 0,
              replicas: [1],
              isr: [1],
              partitionEpoch: 0,
              offline: false,
              addingReplicas: [],
              removingReplicas: [],
            })),
          },
        })),
      })),
      listOffsets: unary(
        (request: { partitions: { topic: string; partition: number; spec: OffsetSpec }[] }) => ({
          results: request.partitions.map(({ topic, partition, spec }) => ({
            topic,
            partition,
            error: undefined,
            timestampMs: -1n,
            leaderEpoch: 0,
            offset: spec === OffsetSpec.OFFSET_SPEC_EARLIEST ? 1n : partition === 0 ? 9n : 2n,
          })),
        }),
      ),
      resetOffsets: unary((request: ResetOffsetsRequest) => {
        this.resets.push(request);
        return {
          error: undefined,
          offsets: request.partitions.map(({ topic, partition }) => ({
            topic,
            partition,
            offset: 1n,
            metadata: '',
            commitTimestampMs: 0n,
            error: undefined,
          })),
        };
      }),
    };
  }
}

describe('spool group against a gateway', () => {
  let stub: StubGateway | undefined;
  afterEach(() => {
    stub?.stop();
    stub = undefined;
  });

  it('describes as JSON, lists, and plans a reset without executing it', async () => {
    stub = await StubGateway.start();
    const env = { SPOOL_GATEWAY: stub.address };
    const described = await run(['group', 'describe', 'billing', '--json'], env);
    expect(described.exitCode).toBe(0);
    expect(JSON.parse(described.stdout).partitions).toEqual([
      { topic: 'events', partition: 0, committedOffset: '4', highWatermark: '9', lag: '5' },
      { topic: 'events', partition: 1, committedOffset: null, highWatermark: '2', lag: null },
    ]);
    const listed = await run(['group', 'list'], env);
    expect(listed.stdout).toBe('GROUP    STATE\nbilling  EMPTY\n');
    const planned = await run(
      ['group', 'reset-offsets', 'billing', '--topic', 'events', '--to-earliest'],
      env,
    );
    expect(planned.exitCode).toBe(0);
    expect(planned.stdout).toContain('events  0          4               1\n');
    expect(planned.stdout).toContain('events  1          -               1\n');
    expect(planned.stdout).toContain('dry run: nothing was changed');
    expect(stub.resets).toEqual([]);
  });

  it('executes a reset of the partitions named, and prints what was committed', async () => {
    stub = await StubGateway.start();
    const { exitCode, stdout } = await run(
      [
        'group',
        'reset-offsets',
        'billing',
        '--topic',
        'events:1',
        '--to-offset',
        '1',
        '--execute',
        '--json',
      ],
      { SPOOL_GATEWAY: stub.address },
    );
    expect(exitCode).toBe(0);
    expect(stub.resets).toHaveLength(1);
    expect(stub.resets[0]).toMatchObject({
      groupId: 'billing',
      strategy: 'offset',
      offset: 1n,
      partitions: [{ topic: 'events', partition: 1 }],
    });
    expect(JSON.parse(stdout)).toMatchObject({
      executed: true,
      partitions: [{ topic: 'events', partition: 1, currentOffset: null, newOffset: '1' }],
    });
  });

  it('consumes as a group member, commits what it printed and leaves with epoch -1', async () => {
    stub = await StubGateway.start();
    const { exitCode, stdout, stderr } = await run(
      ['consume', 'events', '--group', 'billing', '--from-beginning', '--max-messages', '2'],
      { SPOOL_GATEWAY: stub.address },
    );
    expect(stderr).toBe('consumed 2 messages\n');
    expect(exitCode).toBe(0);
    expect(stdout).toBe('r1\nr2\n');
    expect(stub.heartbeats[0]).toMatchObject({
      groupId: 'billing',
      memberEpoch: 0,
      subscribedTopics: ['events'],
    });
    expect(stub.heartbeats.at(-1)).toMatchObject({ memberId: 'member-1', memberEpoch: -1 });
    expect(stub.commits.at(-1)).toMatchObject({
      groupId: 'billing',
      memberId: 'member-1',
      memberEpoch: 1,
      offsets: [{ topic: 'events', partition: 0, offset: 3n }],
    });
  });

  it('leaves the group cleanly on Ctrl-C, after committing what it printed', async () => {
    stub = await StubGateway.start();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let printed = '';
    stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    stderr.resume();
    const exited = runCli(['consume', 'events', '--group', 'billing', '--from-beginning'], {
      stdout,
      stderr,
      env: { SPOOL_GATEWAY: stub.address },
    });
    const deadline = Date.now() + 5_000;
    while (printed !== 'r1\nr2\n') {
      if (Date.now() > deadline) throw new Error(`printed only ${JSON.stringify(printed)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // The listeners the command registered, as a terminal's Ctrl-C would call them.
    expect(process.listenerCount('SIGINT')).toBeGreaterThan(0);
    process.emit('SIGINT');
    expect(await exited).toBe(0);
    expect(stub.heartbeats.at(-1)).toMatchObject({ memberId: 'member-1', memberEpoch: -1 });
    expect(stub.commits.at(-1)?.offsets).toEqual([
      { topic: 'events', partition: 0, offset: 3n, metadata: '', leaderEpoch: -1 },
    ]);
  });

  it('reports a refusal of the coordinator as one line with exit code 1', async () => {
    stub = await StubGateway.start();
    stub.groupMembers = 1;
    const { exitCode, stderr } = await run(['group', 'delete', 'billing'], {
      SPOOL_GATEWAY: stub.address,
    });
    expect(exitCode).toBe(1);
    expect(stderr).toBe('spool: NON_EMPTY_GROUP: delete group billing: the group has 1 member\n');
  });
});
