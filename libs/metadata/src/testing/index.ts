// @spool/metadata/testing: real etcd processes for tests (this library's specs and the
// cross-process tests in test/). Not reachable from src/index.ts, and left out of the runtime
// image (deploy/image/assemble.mjs).
export {
  startEtcdCluster,
  startEtcdServer,
  etcdStartTimeoutMsDefault,
  type EtcdTestCluster,
  type EtcdTestMember,
  type EtcdTestOptions,
  type EtcdTestTls,
} from './etcd-test-server';
