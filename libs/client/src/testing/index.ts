// @spool/client/testing: what the SDK's specs run against, an in-memory gateway (with its group
// coordinator, an adapter over the real group state machine) serving the real gRPC service, and assertions
// the specs share. Not reachable from src/index.ts, left out of the runtime image
// (deploy/image/assemble.mjs) and of the packed SDK (deploy/sdk/pack-sdk.mjs).
export { FakeCoordinator, type FakeLogView, type InjectedFailure } from './fake-coordinator';
export {
  FakeGateway,
  type ConsumeStreamRecord,
  type FakeProducerState,
  type ProduceErrorHook,
} from './fake-gateway';
export { describeGatewayContract, type GatewayContractBackend } from './gateway.contract';
export { rejection } from './rejection';
export { expectSteady } from './steady';
