// Who made a call: the authenticated principal in Kafka's string form `User:<name>`, and the
// host it came from. Authorization (ACLs) reads both; authentication (SASL on the Kafka
// listener, credentials on gRPC) sets the principal. A listener without authentication serves
// everyone as User:ANONYMOUS, as Kafka's PLAINTEXT and SSL listeners do.
//
// On gRPC, GrpcServer binds the principal to each call before its handler runs; a handler reads
// it with principalOf(call) and the client's address with clientHostOf(call). On the Kafka
// listener both are fields of the request context every API handler receives
// (context.principal, context.clientHost).
import type * as grpc from '@grpc/grpc-js';

/** Kafka's principal type for users and for service accounts alike. */
export const userPrincipalType = 'User';
/** The principal of a connection nobody authenticated (Kafka's KafkaPrincipal.ANONYMOUS). */
export const anonymousPrincipal = 'User:ANONYMOUS';

/** `User:<name>` for a user name. */
export function userPrincipal(name: string): string {
  return `${userPrincipalType}:${name}`;
}

/** Any call shape grpc-js hands a handler: unary, server stream, client stream, bidi. */
type AnyServerCall = Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getPeer'>;

const principalsOfCalls = new WeakMap<object, string>();

/** Set by GrpcServer when it authenticated the call; later calls on a call object overwrite. */
export function bindPrincipal(call: AnyServerCall, principal: string): void {
  principalsOfCalls.set(call, principal);
}

/** The call's authenticated principal; User:ANONYMOUS when the server authenticates nobody. */
export function principalOf(call: AnyServerCall): string {
  return principalsOfCalls.get(call) ?? anonymousPrincipal;
}

/**
 * The client's IP address without its port (what Kafka's ACLs call the host): grpc-js reports
 * peers as `1.2.3.4:5678`, `[::1]:5678`, or `unix:...`.
 */
export function clientHostOf(call: AnyServerCall): string {
  return hostOfPeer(call.getPeer());
}

/**
 * `host:port` or `[v6]:port` to the bare host, an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`,
 * what a dual-stack socket reports) to its IPv4 form; anything else comes back unchanged.
 */
export function hostOfPeer(peer: string): string {
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(peer);
  const plain = /^([^:]+):\d+$/.exec(peer);
  const host = bracketed?.[1] ?? plain?.[1] ?? peer;
  return host.startsWith('::ffff:') && host.includes('.') ? host.slice('::ffff:'.length) : host;
}
