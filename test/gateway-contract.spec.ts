// Runs the gateway contract (libs/client/src/testing/gateway.contract.ts) against a real gateway:
// `spool dev` with one storage node, real processes and sockets. The SDK's specs run against the
// fake gateway; libs/client/src/gateway-contract.spec.ts runs the same suite against the fake, so
// the two cannot drift apart without one of them failing.
import { describeGatewayContract } from '@spool/client/testing';
import { startSpoolDev } from './support/spool-dev-process';

describeGatewayContract('real gateway (spool dev, one storage node)', async () => {
  const dev = await startSpoolDev(['--nodes', '1']);
  return { address: dev.gatewayAddress, stop: () => dev.stop() };
});
