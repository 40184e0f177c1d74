// principalOf defaults to User:ANONYMOUS and returns what the server bound; clientHostOf strips
// ports and IPv4-mapped prefixes from every peer form grpc-js and node:net report.
import { describe, expect, it } from 'vitest';
import {
  anonymousPrincipal,
  bindPrincipal,
  clientHostOf,
  hostOfPeer,
  principalOf,
  userPrincipal,
} from './principal';

function callFrom(peer: string): { getPeer(): string } {
  return { getPeer: () => peer };
}

describe('principal', () => {
  it('is User:ANONYMOUS until the server binds one', () => {
    const call = callFrom('127.0.0.1:5000');
    expect(principalOf(call)).toBe(anonymousPrincipal);
    bindPrincipal(call, userPrincipal('alice'));
    expect(principalOf(call)).toBe('User:alice');
    expect(principalOf(callFrom('127.0.0.1:5000'))).toBe('User:ANONYMOUS');
  });

  it.each([
    ['127.0.0.1:5000', '127.0.0.1'],
    ['[::1]:5000', '::1'],
    ['[::ffff:127.0.0.1]:5000', '127.0.0.1'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['::1', '::1'],
    ['unix:/tmp/socket', 'unix:/tmp/socket'],
  ])('the host of %s is %s', (peer, host) => {
    expect(hostOfPeer(peer)).toBe(host);
    expect(clientHostOf(callFrom(peer))).toBe(host);
  });
});
