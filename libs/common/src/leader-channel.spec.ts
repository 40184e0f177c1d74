import { describe, expect, it } from 'vitest';
import { SpoolError } from './errors';
import { LeaderChannel, failedLeaderHoldMs } from './leader-channel';

interface FakeClient {
  readonly address: string;
  close(): void;
}

/** A channel over fake clients; `answers` says what each address does. */
function channel(configured: string[], answers: Record<string, string | (() => never)>) {
  const calls: string[] = [];
  const leaders = new LeaderChannel<FakeClient>(
    configured,
    (address) => ({ address, close: () => {} }),
    { notLeaderCode: 'NOT_CONTROLLER', leaderDetail: 'activeController', attempts: 3 },
  );
  const call = () =>
    leaders.call(async (client) => {
      calls.push(client.address);
      const answer = answers[client.address];
      if (typeof answer === 'function') answer();
      return answer;
    });
  return { leaders, calls, call };
}

const notController = (active: string): never => {
  throw new SpoolError('NOT_CONTROLLER', 'a standby', {
    retriable: true,
    details: { activeController: active },
  });
};
const unreachable = (): never => {
  throw new SpoolError('UNAVAILABLE', 'no answer', { retriable: true });
};

describe('LeaderChannel', () => {
  it('follows a NOT_CONTROLLER hint to the leader it names', async () => {
    const { call, calls } = channel(['service:1'], {
      'service:1': () => notController('10.0.0.1:1'),
      '10.0.0.1:1': 'ok',
    });
    await expect(call()).resolves.toBe('ok');
    expect(calls).toEqual(['service:1', '10.0.0.1:1']);
  });

  it('forgets a learned leader that fails and goes back to the configured addresses', async () => {
    const answers: Record<string, string | (() => never)> = {
      'service:1': () => notController('10.0.0.1:1'),
      '10.0.0.1:1': 'ok',
    };
    const { call, calls, leaders } = channel(['service:1'], answers);
    await call();
    // Leadership moves to 10.0.0.2 and back: both are learned addresses now.
    answers['10.0.0.1:1'] = () => notController('10.0.0.2:1');
    answers['10.0.0.2:1'] = 'ok';
    await call();
    answers['10.0.0.2:1'] = () => notController('10.0.0.1:1');
    answers['10.0.0.1:1'] = 'ok';
    await call();
    // Both pods are gone; the configured address (a Service) reaches a live controller.
    answers['10.0.0.1:1'] = unreachable;
    answers['10.0.0.2:1'] = unreachable;
    answers['service:1'] = 'the service';
    calls.length = 0;
    await expect(call()).resolves.toBe('the service');
    expect(calls).toEqual(['10.0.0.1:1', 'service:1']);
    expect(leaders.leaderAddress).toBe('service:1');
  });

  it('goes round the configured addresses when one cannot be reached', async () => {
    const { call, calls } = channel(['a:1', 'b:1'], { 'a:1': unreachable, 'b:1': 'b' });
    await expect(call()).resolves.toBe('b');
    expect(calls).toEqual(['a:1', 'b:1']);
  });

  it('stays on a standby that names the leader it just found unreachable, until the hold passes', () => {
    const { leaders } = channel(['a:1', 'b:1'], {});
    // The stream on a:1 broke: its pings went unanswered (gRPC UNAVAILABLE, no Spool code).
    const dropped = new SpoolError('UNAVAILABLE', 'keepalive timeout', {
      retriable: true,
      cause: Object.assign(new Error('14 UNAVAILABLE'), { code: 14 }),
    });
    expect(leaders.follow(dropped, 1_000)).toBe(false);
    expect(leaders.leaderAddress).toBe('b:1');
    // b:1 is a standby whose election still records a:1 (its lease has not run out).
    const stale = new SpoolError('NOT_CONTROLLER', 'a standby', {
      retriable: true,
      details: { activeController: 'a:1' },
    });
    expect(leaders.follow(stale, 1_000 + failedLeaderHoldMs - 1)).toBe(false);
    expect(leaders.leaderAddress).toBe('b:1');
    // A refusal that is not a lost connection (here a deadline) does not hold an address back.
    expect(leaders.follow(stale, 1_000 + failedLeaderHoldMs)).toBe(true);
    expect(leaders.leaderAddress).toBe('a:1');
    const slow = new SpoolError('REQUEST_TIMED_OUT', 'deadline', { retriable: true });
    expect(leaders.follow(slow, 10_000)).toBe(false);
    expect(leaders.leaderAddress).toBe('b:1');
    expect(leaders.follow(stale, 10_001)).toBe(true);
    expect(leaders.leaderAddress).toBe('a:1');
  });
});
