// Runs the gateway contract (testing/gateway.contract.ts) against the fake gateway the SDK's specs
// use; test/gateway-contract.spec.ts runs the same suite against a real gateway.
import { describeGatewayContract, FakeGateway } from './testing';

describeGatewayContract('fake gateway', async () => {
  const gateway = await FakeGateway.start();
  return { address: gateway.address, stop: () => gateway.stop() };
});
