/**
 * CreateAcls, DescribeAcls and DeleteAcls, forwarded to the active controller (acl-commands.ts
 * there), for gRPC clients (`spool acl`) and the Kafka listener alike. Changing ACLs needs ALTER
 * on the cluster and reading them DESCRIBE, as in Kafka; the caller's principal decides.
 *
 * A change made through this gateway is also waited for in the gateway's own copy of the ACLs
 * (bounded by aclPropagationWaitMs), so a client that grants itself a right and uses it next
 * through the same gateway is not refused in between. Other gateways follow within the metadata
 * stream's delay.
 */
import type { RequestAuthorizer } from '@spool/authorizer';
import { AclOperation, aclFilterMatches, sameAcl, type Caller } from '@spool/authorizer';
import { callOnce } from '@spool/common';
import type {
  CreateAclsRequest,
  CreateAclsResponse,
  DeleteAclsRequest,
  DeleteAclsResponse,
  DescribeAclsRequest,
  DescribeAclsResponse,
} from '@spool/protocol';
import type { MetadataLink } from './metadata-link';

/** One call to the controller: a write to the metadata store. */
const controllerCallDeadlineMs = 15_000;
/** How long an ACL change is waited for in this gateway's copy before answering. */
const aclPropagationWaitMs = 5_000;

export function aclHandlers(link: MetadataLink, authorizer: RequestAuthorizer) {
  /** Resolves once the gateway's ACLs satisfy `done`, or after aclPropagationWaitMs. */
  const waitForAcls = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      if (done()) return resolve();
      const timer = setTimeout(finish, aclPropagationWaitMs);
      const unsubscribe = link.metadata.onChange((change) => {
        if (change.aclsChanged && done()) finish();
      });
      function finish(): void {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      }
    });

  return {
    createAcls: async (request: CreateAclsRequest, caller: Caller): Promise<CreateAclsResponse> => {
      if (!authorizer.authorizeCluster(caller, AclOperation.Alter)) {
        return {
          results: request.creations.map(() => ({ error: clusterRefusal(caller, 'ALTER') })),
        };
      }
      const response = await link.channel.call((client) =>
        callOnce(client, client.createAcls, request, { deadlineMs: controllerCallDeadlineMs }),
      );
      const created = request.creations.filter((_, index) => !response.results[index]?.error);
      await waitForAcls(() =>
        created.every((acl) => link.metadata.acls.some((held) => sameAcl(held, acl))),
      );
      return response;
    },

    describeAcls: async (
      request: DescribeAclsRequest,
      caller: Caller,
    ): Promise<DescribeAclsResponse> => {
      if (!authorizer.authorizeCluster(caller, AclOperation.Describe)) {
        return { error: clusterRefusal(caller, 'DESCRIBE'), acls: [] };
      }
      return link.channel.call((client) =>
        callOnce(client, client.describeAcls, request, { deadlineMs: controllerCallDeadlineMs }),
      );
    },

    deleteAcls: async (request: DeleteAclsRequest, caller: Caller): Promise<DeleteAclsResponse> => {
      if (!authorizer.authorizeCluster(caller, AclOperation.Alter)) {
        return {
          results: request.filters.map(() => ({
            error: clusterRefusal(caller, 'ALTER'),
            deletedAcls: [],
          })),
        };
      }
      const response = await link.channel.call((client) =>
        callOnce(client, client.deleteAcls, request, { deadlineMs: controllerCallDeadlineMs }),
      );
      const filters = request.filters.filter((_, index) => !response.results[index]?.error);
      await waitForAcls(() =>
        link.metadata.acls.every(
          (held) => !filters.some((filter) => aclFilterMatches(filter, held)),
        ),
      );
      return response;
    },
  };
}

function clusterRefusal(caller: Caller, operation: string) {
  return {
    code: 'CLUSTER_AUTHORIZATION_FAILED',
    message: `${caller.principal} is not authorized to ${operation} CLUSTER kafka-cluster`,
    retriable: false,
  };
}
