// Proves the classic-member table's bounds: an entry comes back as it was set and counts as
// used; past membersMax the least recently used goes first; an entry idle longer than idleMsMax
// is gone; a deleted member is gone.
import { describe, expect, it } from 'vitest';
import { type ClassicMember, ClassicMemberTable } from './classic-member-table';

function member(groupId: string, memberId: string, lastUsedMs = 0): ClassicMember {
  return {
    groupId,
    memberId,
    subscribedTopics: ['orders'],
    assignor: 'uniform',
    rebalanceTimeoutMs: 30_000,
    clientId: 'kcat',
    clientHost: '127.0.0.1',
    memberEpoch: 3,
    generation: 3,
    assigned: [{ topic: 'orders', partition: 0 }],
    owned: [],
    lastUsedMs,
  };
}

describe('ClassicMemberTable', () => {
  it('returns what was set, by group and member', () => {
    const table = new ClassicMemberTable();
    table.set(member('g', 'a'));
    expect(table.get('g', 'a', 1)?.assigned).toEqual([{ topic: 'orders', partition: 0 }]);
    expect(table.get('g', 'b', 1)).toBeUndefined();
    expect(table.get('h', 'a', 1)).toBeUndefined();
  });

  it('drops the least recently used past its bound', () => {
    const table = new ClassicMemberTable(2, 60_000);
    table.set(member('g', 'a'));
    table.set(member('g', 'b'));
    expect(table.get('g', 'a', 1)).toBeDefined();
    table.set(member('g', 'c'));
    expect(table.size).toBe(2);
    expect(table.get('g', 'b', 2)).toBeUndefined();
    expect(table.get('g', 'a', 2)).toBeDefined();
    expect(table.get('g', 'c', 2)).toBeDefined();
  });

  it('forgets a member idle longer than idleMsMax, and a deleted one', () => {
    const table = new ClassicMemberTable(10, 1_000);
    table.set(member('g', 'a', 0));
    table.set(member('g', 'b', 0));
    expect(table.get('g', 'a', 1_000)).toBeDefined();
    expect(table.get('g', 'b', 1_001)).toBeUndefined();
    table.delete('g', 'a');
    expect(table.get('g', 'a', 1_002)).toBeUndefined();
    expect(table.size).toBe(0);
  });
});
