// Kafka's ACLs: the model and its numbers, the filters of DescribeAcls and DeleteAcls, the
// authorizer that decides a request from a cached copy of the ACLs, and the services' settings.
export {
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
  aclBindingProblem,
  aclFilterMatches,
  aclFilterProblem,
  aclNameLengthMax,
  clusterResourceName,
  describeAcl,
  operationName,
  operationOfName,
  patternTypeName,
  patternTypeOfName,
  permissionTypeName,
  permissionTypeOfName,
  resourceTypeName,
  resourceTypeOfName,
  sameAcl,
  wildcardHost,
  wildcardPrincipal,
  wildcardResourceName,
  type AclBinding,
  type AclBindingFilter,
} from './acl';
export {
  AclAuthorizer,
  type AclAuthorizerSettings,
  type AuthorizationRequest,
} from './acl-authorizer';
export {
  AuthorizationError,
  RequestAuthorizer,
  authorizationFailedCodeOf,
  type AuthorizationFailedCode,
  type Caller,
  type RequestAuthorizerOptions,
} from './request-authorizer';
export {
  authorizerKinds,
  authorizerSettings,
  type AuthorizerSettings,
} from './authorizer-settings';
