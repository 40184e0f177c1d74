// The settings of the services that enforce ACLs (the gateway): Kafka's authorizer.class.name,
// super.users and allow.everyone.if.no.acl.found, validated once at start-up by loadConfig.
import type { SettingsSchema } from '@spool/common';

export const authorizerKinds = ['none', 'acl'] as const;

export const authorizerSettings = {
  authorizer: {
    type: 'string',
    default: 'none',
    choices: authorizerKinds,
    description:
      "Which authorizer checks requests (Kafka's authorizer.class.name): none allows " +
      "everything; acl enforces the cluster's ACLs (spool acl, Kafka's CreateAcls).",
  },
  superUsers: {
    type: 'list',
    default: [],
    description:
      "Principals (User:admin) every ACL check allows (Kafka's super.users); comma-separated, each Type:name.",
  },
  allowEveryoneIfNoAclFound: {
    type: 'boolean',
    default: false,
    description:
      'Allow a request on a resource that no ACL applies to ' +
      "(Kafka's allow.everyone.if.no.acl.found).",
  },
} as const satisfies SettingsSchema;

export type AuthorizerSettings = typeof authorizerSettings;
