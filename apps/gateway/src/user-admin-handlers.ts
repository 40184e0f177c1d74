/**
 * Users' SCRAM credentials (`spool user`, Kafka's AlterUserScramCredentials and
 * DescribeUserScramCredentials), forwarded to the active controller. The request carries salted
 * passwords only; the controller derives and stores the keys.
 */
import { callOnce } from '@spool/common';
import type {
  AlterUserScramCredentialsRequest,
  AlterUserScramCredentialsResponse,
  DescribeUserScramCredentialsRequest,
  DescribeUserScramCredentialsResponse,
} from '@spool/protocol';
import type { MetadataLink } from './metadata-link';

/** One write per user in the metadata store. */
const controllerCallDeadlineMs = 15_000;

export function userAdminHandlers(link: MetadataLink) {
  return {
    alterUserScramCredentials: (
      request: AlterUserScramCredentialsRequest,
    ): Promise<AlterUserScramCredentialsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.alterUserScramCredentials, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),
    describeUserScramCredentials: (
      request: DescribeUserScramCredentialsRequest,
    ): Promise<DescribeUserScramCredentialsResponse> =>
      link.channel.call((client) =>
        callOnce(client, client.describeUserScramCredentials, request, {
          deadlineMs: controllerCallDeadlineMs,
        }),
      ),
  };
}
