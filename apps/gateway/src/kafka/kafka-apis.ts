/**
 * The Kafka APIs this gateway serves, each on the part of the gateway that serves the same gRPC
 * call, registered with the versions it implements: ApiVersions advertises exactly these.
 */
import type { Logger, RequestMetrics } from '@spool/common';
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  InitProducerIdRequest,
  InitProducerIdResponse,
} from '@spool/protocol';
import type { FetchDependencies } from '../fetch-handler';
import type { OffsetDependencies } from '../offset-handlers';
import type { ProduceDependencies } from '../produce-handler';
import { KafkaApiDispatcher } from './kafka-api-dispatcher';
import { type KafkaAclDependencies, aclApis } from './kafka-acl-apis';
import { KafkaAuthorization } from './kafka-authorization';
import { adminApis } from './kafka-admin';
import { adminChangeApis } from './kafka-admin-changes';
import { type GroupAdminCoordinators, groupAdminApis } from './kafka-group-admin';
import { apiVersionsApi } from './kafka-api-versions';
import type { KafkaClusterView } from './kafka-cluster-view';
import { findCoordinatorApi, initProducerIdApi } from './kafka-coordinators';
import { describeLogDirsApi } from './kafka-describe-log-dirs';
import { adminHandlers } from '../admin-handlers';
import { fetchApi } from './kafka-fetch';
import type { KafkaFetchSessions } from './kafka-fetch-sessions';
import { listOffsetsApi } from './kafka-list-offsets';
import { type OffsetDeleteCoordinators, offsetDeleteApi } from './kafka-offset-delete';
import { offsetForLeaderEpochApi } from './kafka-offset-for-leader-epoch';
import { metadataApi } from './kafka-metadata';
import { partitionReassignmentApis } from './kafka-partition-reassignments';
import { produceApi } from './kafka-produce';
import { describeClientQuotasApi } from './kafka-describe-client-quotas';
import { userScramCredentialApis } from './kafka-user-scram-credentials';
import { type SaslSettings, saslApis } from './kafka-sasl';
import { ClassicMemberTable } from './classic-member-table';
import { classicGroupApis } from './kafka-classic-groups';
import { consumerGroupApis } from './kafka-consumer-groups';
import { type OffsetCoordinators, offsetCommitApi, offsetFetchApi } from './kafka-offsets';

export interface KafkaApiDependencies {
  readonly view: KafkaClusterView;
  readonly produce: ProduceDependencies;
  readonly fetch: FetchDependencies;
  readonly offsets: OffsetDependencies;
  readonly fetchSessions: KafkaFetchSessions;
  readonly coordinators: OffsetCoordinators &
    GroupAdminCoordinators &
    OffsetDeleteCoordinators & {
      readonly initProducerId: (request: InitProducerIdRequest) => Promise<InitProducerIdResponse>;
      readonly consumerGroupHeartbeat: (
        request: ConsumerGroupHeartbeatRequest,
      ) => Promise<ConsumerGroupHeartbeatResponse>;
    };
  readonly requestMetrics: RequestMetrics;
  readonly logger: Logger;
  /** The authorizer and the ACL calls; without them no request is checked. */
  readonly acls?: KafkaAclDependencies;
  readonly sasl: SaslSettings;
}

export function createKafkaApis(dependencies: KafkaApiDependencies): KafkaApiDispatcher {
  const { view } = dependencies;
  const { acls } = dependencies;
  const authorization = acls && new KafkaAuthorization(acls.authorizer, view);
  const dispatcher = new KafkaApiDispatcher(dependencies.requestMetrics, authorization);
  dispatcher.register(apiVersionsApi(dispatcher));
  const [saslHandshake, saslAuthenticate] = saslApis(dependencies.sasl);
  dispatcher.register(saslHandshake);
  dispatcher.register(saslAuthenticate);
  dispatcher.register(metadataApi(view));
  dispatcher.register(produceApi(view, dependencies.produce, dependencies.logger));
  const { fetchSessions } = dependencies;
  dispatcher.register(
    fetchApi(view, dependencies.fetch, fetchSessions.cache, fetchSessions.countFetch),
  );
  dispatcher.register(listOffsetsApi(dependencies.offsets));
  dispatcher.register(offsetForLeaderEpochApi(dependencies.fetch));
  dispatcher.register(findCoordinatorApi(view));
  const { coordinators } = dependencies;
  dispatcher.register(initProducerIdApi(coordinators.initProducerId));
  const classicMembers = new ClassicMemberTable();
  for (const api of classicGroupApis(classicMembers, coordinators.consumerGroupHeartbeat)) {
    dispatcher.register(api);
  }
  dispatcher.register(offsetCommitApi(view, classicMembers, coordinators));
  dispatcher.register(offsetFetchApi(view, coordinators));
  for (const api of adminApis(view)) dispatcher.register(api);
  for (const api of adminChangeApis(dependencies.offsets)) dispatcher.register(api);
  for (const api of partitionReassignmentApis(dependencies.offsets)) dispatcher.register(api);
  for (const api of groupAdminApis(coordinators)) dispatcher.register(api);
  for (const api of consumerGroupApis(view, coordinators)) dispatcher.register(api);
  for (const api of aclApis(acls)) dispatcher.register(api);
  dispatcher.register(offsetDeleteApi(coordinators));
  for (const api of userScramCredentialApis(dependencies.offsets.link)) dispatcher.register(api);
  dispatcher.register(describeClientQuotasApi());
  dispatcher.register(describeLogDirsApi(view, adminHandlers(view.link)));
  return dispatcher;
}
